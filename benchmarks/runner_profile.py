"""Where a property's call of the implementation spends its time (issue #9).

Runs the statistical properties' loop (``properties.support.sampled_lengths``: the
reference through the harness's runner, one small case per seed) under cProfile on one
device, and prints the cost per call and the functions that take it. It only uses what
every simacc version has (finding the runner where each layout keeps it), so pointing
``PYTHONPATH`` at an older checkout profiles that one for a before/after comparison.

    python benchmarks/runner_profile.py [--device cuda] [--calls 2000] [--top 12]
"""

import argparse
import cProfile
import io
import pstats
import time

from properties import support

try:
    from simacc.harness import impl
    from simacc.harness.runner import Runner
except ImportError:  # a checkout from before the layout by role (issue #12)
    from simacc import impl
    from simacc.observe import Runner


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)

    runner = Runner(impl.reference("eagle"))
    if hasattr(runner, "__enter__"):  # a context manager since the runner lost its thread per call
        runner.__enter__()
    support.sampled_lengths(runner, args.device, 2.25, "match-expected", 200)  # warm-up
    start = time.perf_counter()
    support.sampled_lengths(runner, args.device, 2.25, "match-expected", args.calls)
    per_call = (time.perf_counter() - start) / args.calls * 1e6
    profile = cProfile.Profile()
    profile.runcall(support.sampled_lengths, runner, args.device, 2.25, "match-expected", args.calls)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
    print(f"{args.calls} runner calls on {args.device}: {per_call:.0f} us per call (without the profiler)")
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[-(args.top + 2) * 200:])


if __name__ == "__main__":
    main()
