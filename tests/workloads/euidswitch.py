# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A process whose euid changes after its exec, which no event shows.

usage: euidswitch.py drop|gain REVERSED_MARKER
drop: started as root, becomes nobody (setresuid), then creates and
writes its perf-map, nobody's file: the recorder must read it.
gain: started with euid nobody and real uid root, creates its perf-map
as nobody under another name, takes euid 0 back (seteuid), renames it
into place and writes to it: a root process with nobody's file, which
the recorder must refuse.
The marker comes reversed, so only the file holds it as it is. Prints
"wrote PID" after the write; removes the file and exits at a line on
stdin.
"""
import os
import pwd
import sys


def main():
    mode, marker = sys.argv[1], sys.argv[2][::-1]
    nobody = pwd.getpwnam("nobody").pw_uid
    path = f"/tmp/perf-{os.getpid()}.map"
    if mode == "drop":
        os.setresuid(nobody, nobody, nobody)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    else:
        # Made under another name, so the recorder cannot find the file
        # while its process is still nobody, and vet it then.
        fd = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o644)
        os.seteuid(0)
        os.rename(path + ".new", path)
    os.write(fd, f"1000 10 {marker}\n".encode())
    print(f"wrote {os.getpid()}", flush=True)
    sys.stdin.readline()
    os.close(fd)
    os.unlink(path)


if __name__ == "__main__":
    main()
