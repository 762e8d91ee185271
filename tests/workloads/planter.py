# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""An unprivileged user's attack on a recorder that runs as root: maps a
file named as its jitdump, executable, so the recorder comes to open it;
unmaps it, so the recorder must go by the path; and leaves at that path
something the recorder must neither wait on nor read.

usage: planter.py fifo DIR | planter.py dirlink DIR TARGET
Prints "pid N", waits for a line on stdin, maps DIR/a/jit-N.dump and
unmaps it, then plants: fifo, a FIFO at that path; dirlink, DIR/a
replaced by a symlink to the directory TARGET. Prints "planted" and waits
for a line on stdin before it exits.
"""
import mmap
import os
import sys

PAGE = 4096


def main():
    mode, top = sys.argv[1], sys.argv[2]
    print(f"pid {os.getpid()}", flush=True)
    sys.stdin.readline()
    d = os.path.join(top, "a")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"jit-{os.getpid()}.dump")
    with open(path, "wb") as f:
        f.write(b"\0" * PAGE)
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), PAGE, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_EXEC)
        m.close()
    if mode == "fifo":
        os.unlink(path)
        os.mkfifo(path)
    else:
        os.rename(d, os.path.join(top, "was-a"))
        os.symlink(sys.argv[3], d)
    print("planted", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
