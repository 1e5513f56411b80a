"""What a check costs next to the import floor (issue 36's measure), in rounds run back to back.

Each round runs the floor, ``python -c "import torch, pytest, hypothesis, xdist"``, then
``simacc check simacc:generate_simulated_accept_index -q`` with each interpreter given (one
per checkout to compare: each checks with its own simacc, from an empty folder). It reports
each check's wall time as a ratio to its round's floor, and its CPU-s (user + sys of the
command and of every process it waited for), each round and as medians. The machine's speed
changes from minute to minute, so only figures taken in one run compare.

Bytecode is written, as CI writes it: a shell that sets ``PYTHONDONTWRITEBYTECODE`` makes
every new interpreter compile simacc again, and the variable is dropped here.

    python benchmarks/check_cost.py [--rounds N] [--python PATH ...]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from simacc.harness.config.settings import argtype, positive_int

FLOOR = ("-c", "import torch, pytest, hypothesis, xdist")
CHECK = ("-m", "simacc", "check", "simacc:generate_simulated_accept_index", "-q")


class Failed(Exception):
    """A timed command that did not exit 0: its figures would mean nothing."""


def timed(argv, folder):
    """``(wall seconds, CPU-s)`` of ``argv`` run to its end in ``folder``; :class:`Failed`
    unless it exits 0."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        code = subprocess.run(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL).returncode
    except OSError as e:
        raise Failed(f"{argv[0]}: {e.strerror}") from None
    if code != 0:
        raise Failed(f"{' '.join(argv)} exited with {code}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=argtype(positive_int), default=5,
                        help="rounds of the floor and each check (default 5)")
    parser.add_argument("--python", action="append",
                        help="an interpreter with simacc installed (repeatable; default this one)")
    args = parser.parse_args(argv)
    pythons = args.python or [sys.executable]
    figures = {python: ([], []) for python in pythons}  # each check's ratios to the floor, its CPU-s
    with tempfile.TemporaryDirectory(prefix="simacc-check-cost-") as folder:
        try:
            for number in range(1, args.rounds + 1):
                floor, _ = timed([pythons[0], *FLOOR], folder)
                line = [f"round {number}: floor {floor:.2f} s"]
                for python in pythons:
                    wall, cpu = timed([python, *CHECK], folder)
                    figures[python][0].append(wall / floor)
                    figures[python][1].append(cpu)
                    line.append(f"{python}: {wall:.2f} s ({wall / floor:.2f}x), {cpu:.2f} CPU-s")
                print(" | ".join(line), flush=True)
        except Failed as e:
            parser.exit(1, f"check_cost.py: {e}\n")
    for python, (ratios, cpus) in figures.items():
        print(f"{python}: median {statistics.median(ratios):.2f}x the floor, {statistics.median(cpus):.2f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
