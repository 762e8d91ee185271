# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Run every test_* function of tests/e2e/test_*.py (test_last_* at the end); one line per test and
a closing 'N passed, N failed, N skipped' line. Exit 1 on any failure."""
import glob
import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import jt  # noqa: E402


def tests():
    """(file, module, test name) in file and name order; test_last_* after
    every other test (they look at what the others left)."""
    found = []
    for fname in sorted(os.listdir(HERE)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(HERE, fname))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        found += [(fname, mod, n) for n in sorted(dir(mod)) if n.startswith("test_")]
    return sorted(found, key=lambda t: t[2].startswith("test_last_"))


def sweep_perf_maps(since):
    """Remove the perf-maps this run's processes left in /tmp once they
    are gone. pids wrap within a run (pid_max 32768), and a file of one
    user's at perf-N.map makes another user's process N fail to write its
    own: CPython -Xperf run as root leaves a 0600 one."""
    for path in glob.glob("/tmp/perf-*.map"):
        pid = path[len("/tmp/perf-"):-len(".map")]
        try:
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}") and \
                    os.stat(path).st_mtime >= since:
                os.unlink(path)
        except OSError:
            pass


def main(only):
    passed = failed = skipped = 0
    start = time.time()
    for fname, mod, name in tests():
        if only and not any(o in name for o in only):
            continue
        t0 = time.time()
        jt.CURRENT = name
        try:
            if os.geteuid() != 0:
                raise jt.Skip("needs root: loads BPF programs and perf events")
            try:
                getattr(mod, name)()
            finally:
                sweep_perf_maps(start)
        except jt.Skip as e:
            skipped += 1
            print(f"SKIP {fname}:{name}: {e}", flush=True)
            continue
        except Exception:
            failed += 1
            print(f"FAIL {fname}:{name}\n{traceback.format_exc()}", flush=True)
            continue
        passed += 1
        print(f"ok   {fname}:{name} ({time.time() - t0:.1f}s)", flush=True)
    tier = f" (--tier {jt.TIER})" if jt.TIER else ""
    print(f"e2e{tier}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
