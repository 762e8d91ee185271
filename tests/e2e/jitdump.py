# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A second, independent jitdump reader: ground truth for the tests."""
import bisect
import struct


def read(path):
    """[(time, op, a, b, c)]: ("load", addr, size, name) or ("move", old, new, size)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, hsize = struct.unpack_from("<III", data, 0)
    assert magic == 0x4A695444, "test reader handles little-endian only"
    out, pos = [], hsize
    while pos + 16 <= len(data):
        rid, size, ts = struct.unpack_from("<IIQ", data, pos)
        if size < 16 or pos + size > len(data):
            break
        body = pos + 16
        if rid == 0:
            _, _, _, addr, csize, _ = struct.unpack_from("<IIQQQQ", data, body)
            name = data[body + 40:data.index(b"\0", body + 40)].decode(errors="replace")
            out.append((ts, "load", addr, csize, name))
        elif rid == 1:
            _, _, _, old, new, csize, _ = struct.unpack_from("<IIQQQQQ", data, body)
            out.append((ts, "move", old, new, csize))
        pos += size
    out.sort(key=lambda r: r[0])
    return out


class Live:
    """Functions by start address; a load ends what it overlaps."""

    def __init__(self):
        self.starts, self.ends, self.names = [], [], []

    def _drop(self, i):
        del self.starts[i], self.ends[i], self.names[i]

    def load(self, start, size, name):
        i = bisect.bisect_left(self.ends, start + 1)
        while i < len(self.starts) and self.starts[i] < start + size:
            self._drop(i)
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, start + size)
        self.names.insert(i, name)

    def move(self, old, new, size):
        i = bisect.bisect_left(self.starts, old)
        if i < len(self.starts) and self.starts[i] == old:
            name = self.names[i]
            self._drop(i)
            self.load(new, size, name)

    def find(self, ip):
        i = bisect.bisect_right(self.starts, ip) - 1
        return self.names[i] if i >= 0 and ip < self.ends[i] else None


def truths(records, queries):
    """For (ip, time) queries, the function each hit: the latest load at
    or before the time. One sweep in time order."""
    live, out, r = Live(), {}, 0
    for ip, t in sorted(set(queries), key=lambda q: q[1]):
        while r < len(records) and records[r][0] <= t:
            ts, op, a, b, c = records[r]
            (live.load if op == "load" else live.move)(a, b, c)
            r += 1
        out[(ip, t)] = live.find(ip)
    return out
