"""The hostile zoo (``tests/harness/hostile/``) through ``simacc check``, as a user runs it: for each
implementation and each ``-n`` mode, the exit code, the verdict's last line, the wall time
and the peak memory of the whole check (its child processes included).

``tests/harness/test_hostile.py`` pins each verdict with short time limits; this runs the default
limit (30 s), so it shows what a user waits for: an implementation whose every call hangs
ends within the hang budget (two limits) plus the start-up, a flood of output or a huge
message keeps memory flat. Every check runs under an address-space limit (``--memory-gib``)
so that a leaking implementation cannot take the machine down; measures, never asserts.

    python benchmarks/hostile.py [--workers 0 2] [--only NAME ...] [--timeout S] [--cap S] [--json PATH]

Slow: each hanging implementation waits out the real limit (a minute or two per run).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOSTILE = Path(__file__).resolve().parents[1] / "tests" / "harness" / "hostile"


def names():
    return sorted(p.stem for p in HOSTILE.glob("*.py"))


def measure(name, workers, timeout, cap, memory_gib, max_examples):
    """One ``simacc check`` of the hostile ``name``: a dict of what it did."""
    command = [sys.executable, "-m", "simacc", "check", f"{HOSTILE / name}.py:generate", "--device", "cpu",
               "-n", str(workers), "--seed", "0", "--max-examples", str(max_examples), "-q"]
    if timeout is not None:
        command += ["--timeout", str(timeout)]
    limit = memory_gib << 30

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryDirectory(prefix="simacc-hostile-") as folder, \
            tempfile.TemporaryFile() as out:
        start = time.monotonic()
        child = subprocess.Popen(command, cwd=folder, stdout=out, stderr=subprocess.STDOUT, preexec_fn=limited,
                                 start_new_session=True)
        code, usage = None, None
        while time.monotonic() - start < cap:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.2)
        if code is None:  # past the cap: stop the whole check
            os.killpg(child.pid, 9)
            _, _, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        out.seek(0)
        lines = out.read().decode(errors="replace").rstrip().splitlines() or [""]
    return {"implementation": name, "workers": workers, "exit": code, "seconds": round(wall, 1),
            # a check stopped past the cap never reaped its own children: their peak is not known
            "peak_mib": usage.ru_maxrss // 1024 if code is not None else None, "last_line": lines[-1][:160] if code is not None else
            f"(still running after {cap:g} s: stopped)", "output_lines": len(lines)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", nargs="+", type=int, default=[0, 2], help="-n modes (default 0 2)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help="these implementations only")
    parser.add_argument("--timeout", type=float, default=None, help="--timeout of each check (default: simacc's)")
    parser.add_argument("--cap", type=float, default=600, help="stop a check after this many seconds (default 600)")
    parser.add_argument("--memory-gib", type=int, default=8, help="address-space limit of each check (default 8)")
    parser.add_argument("--max-examples", type=int, default=10, help="examples per property (default 10)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    for name in args.only or names():
        for workers in args.workers:
            row = measure(name, workers, args.timeout, args.cap, args.memory_gib, args.max_examples)
            rows.append(row)
            print(f"{name:<30} -n {workers}  exit {row['exit']!s:>4}  {row['seconds']:>6.1f} s  "
                  f"{row['peak_mib'] if row['peak_mib'] is not None else '-':>6} MiB  {row['last_line']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
