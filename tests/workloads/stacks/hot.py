# foo <- bar <- baz, spinning until the process used argv[1] seconds of CPU.
import sys
import time


def foo(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def bar(n):
    return foo(n) + 1


def baz(n):
    return bar(n) + 1


until = time.process_time() + float(sys.argv[1])
while time.process_time() < until:
    baz(20000)
