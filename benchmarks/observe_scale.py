"""``simacc observe`` at scale: the time and peak memory of a verdict on a log of N records,
beside reading the same file alone, measured in one run (each in a process of its own, so that
each peak is its own). Measures, never asserts.

    python benchmarks/observe_scale.py [--records 1000000 10000000] [--batch 64] [--keep DIR]

The log is vLLM's law at AL 2.6, K = 3, ``--batch`` requests a step, written as simacc's JSON
Lines. "Reading alone" is a Python process that reads the file and iterates over its lines
(``for line in file``): what any reader of a line-per-record log pays. The figure to quote is
the ratio of the verdict's time to that, and the verdict's peak memory beside a process that
only imports what ``simacc observe`` imports and computes the law.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READ_ALONE = "import sys\nfor line in open(sys.argv[1], 'rb'):\n    pass\n"
IMPORT_ALONE = ("from simacc.commands import cli\nfrom simacc.commands.serving import observe\nfrom simacc.contract import laws\n"
                "observe.neighbours(laws.law('vllm', 2.6, 3))\n")


def write(path, records, batch, seed=0):
    """``records`` records of vLLM's law at AL 2.6, K = 3 (2 with chance 0.4, else 3)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with open(path, "w") as out:
        done = 0
        while done < records:
            n = min(records - done, batch * 4096)
            lengths = np.where(rng.random(n) < 0.4, 2, 3)
            out.write("".join(f'{{"step": {(done + i) // batch}, "request": {(done + i) % batch}, '
                              f'"accept_length": {length}}}\n' for i, length in enumerate(lengths.tolist())))
            done += n


def measure(argv):
    """``(seconds, peak RSS in MB, output)`` of a child process."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, out.decode(errors="replace")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="write the logs here and keep them")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="observe_scale_"))
    folder.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    base_seconds, base_mb, _ = measure([python, "-c", IMPORT_ALONE])
    print(f"import and law alone: {base_seconds:.1f} s, {base_mb:.0f} MB peak")
    print("| records | file | reading alone | simacc observe | ratio | observe's peak memory |")
    print("|---|---|---|---|---|---|")
    for records in args.records:
        log = folder / f"run_{records}.jsonl"
        if not log.exists():
            write(log, records, args.batch)
        alone, _, _ = measure([python, "-c", READ_ALONE, str(log)])
        seconds, mb, out = measure([python, "-m", "simacc.commands.cli", "observe", str(log), "--engine", "vllm",
                                    "--length", "2.6", "--steps", "3"])
        verdict = next((line for line in out.splitlines() if line.startswith(("MATCHES", "DOES", "INCONCLUSIVE"))),
                       out[-200:])
        print(f"| {records:,} | {log.stat().st_size / 1e6:,.0f} MB | {alone:.2f} s | {seconds:.1f} s "
              f"({seconds - base_seconds:.1f} s past the import) | {seconds / alone:.1f} "
              f"({(seconds - base_seconds) / alone:.1f}) | {mb:.0f} MB | {verdict[:40]}", flush=True)
        if args.keep is None:
            log.unlink()


if __name__ == "__main__":
    main()
