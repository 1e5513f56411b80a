"""The suite's CPU-s test by test, the processes each test starts included (Linux: ``/proc/stat``).

``--durations`` is wall time: a test that waits 5 s for a socket looks as dear as one that
checks for 5 s on both cores, and issue 36's measure of the suite is CPU-s. This runs the
tests one at a time (``-n 0``) with itself as a pytest plugin that reads the machine's busy
time (every process's user + sys) before and after each test, so what a test's fork servers,
ranks and orphans spend is counted too (``time`` misses the processes it does not wait for).
A session fixture's cost (the suite's fork server) falls to the first test that uses it. On an
otherwise idle machine the sum is the suite's CPU-s without xdist's own; it prints the dearest
tests and files. Run it from the repository root:

    CI=true python -m benchmarks.suite_cpu [--top N] [-- PYTEST ARGS]
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time

import pytest

from simacc.harness.config.settings import argtype, positive_int

OUT = "SIMACC_SUITE_CPU_OUT"  # where the plugin appends a line per test
TICKS = os.sysconf("SC_CLK_TCK")


def busy():
    """CPU-s the machine has spent so far, every process's user + sys (``/proc/stat``'s first line)."""
    with open("/proc/stat") as f:
        ticks = [int(n) for n in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICKS  # less idle and iowait


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before, start = busy(), time.perf_counter()
    yield
    with open(os.environ[OUT], "a") as f:
        f.write(f"{busy() - before:.2f}\t{time.perf_counter() - start:.2f}\t{item.nodeid}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=argtype(positive_int), default=20, metavar="N",
                        help="tests and files to list (default 20)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="pytest's arguments, after --")
    args = parser.parse_args(argv)
    extra = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    if not os.path.exists("/proc/stat"):
        parser.exit(1, "suite_cpu.py: needs /proc/stat (Linux)\n")
    if __spec__ is None:  # run as a file: the pytest it starts could not load it as a plugin
        parser.exit(2, "suite_cpu.py: run it as 'python -m benchmarks.suite_cpu' from the repository root\n")
    with tempfile.NamedTemporaryFile("r", prefix="simacc-suite-cpu-", suffix=".tsv") as out:
        env = {**os.environ, OUT: out.name}
        code = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", __spec__.name, *extra],
                              check=False, env=env).returncode
        rows = [line.rstrip("\n").split("\t") for line in out]
    tests = sorted(((float(cpu), float(wall), nodeid) for cpu, wall, nodeid in rows), reverse=True)
    files = collections.Counter()
    for cpu, _, nodeid in tests:
        files[nodeid.split("::")[0]] += cpu
    print(f"\n{len(tests)} tests, {sum(cpu for cpu, _, _ in tests):.1f} CPU-s in all (pytest exited with {code})")
    print("\ndearest tests (CPU-s, wall s):")
    for cpu, wall, nodeid in tests[:args.top]:
        print(f"{cpu:7.2f} {wall:7.2f}  {nodeid}")
    print("\ndearest files (CPU-s):")
    for path, cpu in files.most_common(args.top):
        print(f"{cpu:7.1f}  {path}")
    return code


if __name__ == "__main__":
    sys.exit(main())
