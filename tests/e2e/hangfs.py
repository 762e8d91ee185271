"""A FUSE filesystem that stops answering, for the tests of a recorder
that must not stop with it (test_hung_fs.py). Mounted by root with
allow_other, as a dead network mount or an admin's FUSE would be.

  hangfs.py read MOUNT NAME UID   NAME (UID's) opens and stats; a read of
                                  it never returns
  hangfs.py tracer MOUNT          an empty directory to all but jittrace,
                                  whose every request never returns

Each request that hangs is first written to MOUNT's log, $HANGFS_LOG, so
a test knows the recorder reached it. No timeouts: the kernel asks us
for every lookup and stat."""
import errno
import os
import stat
import sys
import time

sys.path.insert(0, "/usr/lib/python3/dist-packages")
from fusepy import FUSE, FuseOSError, Operations, fuse_get_context  # noqa: E402


# Opened before the mount: the log may be under the /tmp this covers.
LOG = open(os.environ["HANGFS_LOG"], "a", buffering=1)


def hang(what):
    LOG.write(what + "\n")
    while True:
        time.sleep(3600)


def from_jittrace():
    tid = fuse_get_context()[2]
    try:
        with open(f"/proc/{tid}/comm") as f:
            return f.read().strip() == "jittrace"
    except OSError:
        return False


def attrs(mode, uid, size=0):
    now = time.time()
    return dict(st_mode=mode, st_nlink=1, st_uid=uid, st_gid=uid, st_size=size,
                st_mtime=now, st_ctime=now, st_atime=now)


class ReadHangs(Operations):
    def __init__(self, name, uid):
        self.name, self.uid = "/" + name, uid

    def getattr(self, path, fh=None):
        if path == "/":
            return attrs(stat.S_IFDIR | 0o1777, 0)
        if path == self.name:
            return attrs(stat.S_IFREG | 0o644, self.uid, 16)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", self.name[1:]]

    def open(self, path, flags):
        return 0

    def read(self, path, size, offset, fh):
        hang(f"read {path}")


class TracerHangs(Operations):
    def getattr(self, path, fh=None):
        if from_jittrace():
            hang(f"getattr {path}")
        if path == "/":
            return attrs(stat.S_IFDIR | 0o1777, 0)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", ".."]


if __name__ == "__main__":
    if sys.argv[1] == "read":
        fs = ReadHangs(sys.argv[3], int(sys.argv[4]))
    else:
        fs = TracerHangs()
    FUSE(fs, sys.argv[2], foreground=True, nothreads=False, nonempty=True,
         allow_other=True, direct_io=True, attr_timeout=0, entry_timeout=0)
