# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A JIT whose names are hostile to JSON: runs code in two anonymous pages
under perf-map names holding quotes, backslashes, control bytes and
invalid UTF-8, reuses an address, names code where nothing is mapped,
and maps a file whose path holds a newline.

usage: hostile.py DIR [--wait]
Prints "pid N", "page ADDR" for each page, "file PATH" (repr), then with
--wait "ready" and waits for a line on stdin before it exits.
"""
import ctypes
import mmap
import os
import sys
import time

# Names as bytes, written to the perf-map as they are.
NAMES = [b'q"uote back\\slash', b"tab\there ctl\x01\x1f\x7f \xff\xfebad \xc3\xbcn\xc3\xafc",
         b'new"\\name\x02']
# With a terminal's clear-screen (ESC [2J) and the 8-bit CSI (U+009B).
ORPHAN = b'orphan"\x03\x1b[2J\xc2\x9b'
# A name of 4 KB, as long as a mangled C++ template gets.
LONG = b"long_" + b"x" * 4091
# x86-64: mov $20000,%eax; 1: dec %eax; jnz 1b; ret
CODE = bytes([0xb8, 0x20, 0x4e, 0, 0, 0xff, 0xc8, 0x75, 0xfc, 0xc3])
PAGE = 4096


def spin(fn, secs):
    end = time.process_time() + secs
    while time.process_time() < end:
        fn()


def main():
    out_dir = sys.argv[1]
    buf = mmap.mmap(-1, 2 * PAGE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf[0:len(CODE)] = CODE
    buf[PAGE:PAGE + len(CODE)] = CODE
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    fns = [ctypes.CFUNCTYPE(None)(base), ctypes.CFUNCTYPE(None)(base + PAGE)]
    path = os.path.join(out_dir, 'we"ird\\na\nme\x01').encode() + b"\xff.bin"
    with open(path, "wb") as f:
        f.write(b"\0" * PAGE)
    fd = os.open(path, os.O_RDONLY)
    mapped = mmap.mmap(fd, PAGE, prot=mmap.PROT_READ)
    print(f"pid {os.getpid()}")
    print(f"page {base:x}")
    print(f"page {base + PAGE:x}")
    print(f"file {path!r}", flush=True)
    pm = open(f"/tmp/perf-{os.getpid()}.map", "ab", buffering=0)
    pm.write(b"%x 10 %s\n" % (base, NAMES[0]))
    pm.write(b"%x 10 %s\n" % (base + PAGE, NAMES[1]))
    pm.write(b"10 10 %s\n" % ORPHAN)
    spin(fns[0], 0.3)
    spin(fns[1], 0.3)
    pm.write(b"%x 10 %s\n" % (base, NAMES[2]))
    spin(fns[0], 0.3)
    pm.write(b"%x 10 %s\n" % (base + PAGE, LONG))
    spin(fns[1], 0.3)
    if "--wait" in sys.argv:
        print("ready", flush=True)
        sys.stdin.readline()
    pm.close()
    os.unlink(f"/tmp/perf-{os.getpid()}.map")
    # No teardown: the file stays mapped until exit, so the last state
    # that maps shows holds it.
    sys.stdout.flush()
    os._exit(0 if mapped else 1)


if __name__ == "__main__":
    main()
