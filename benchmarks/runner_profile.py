"""Where a property's call of the implementation spends its time.

Runs the statistical properties' loop (``simacc.properties.support.sampled_lengths``: the
reference through the harness's runner, one small case per seed) under cProfile on one
device, and prints the cost per call and the functions that take it. It only uses what
every simacc version has (finding the runner where each layout keeps it), so pointing
``PYTHONPATH`` at an older checkout profiles that one for a before/after comparison.

    python benchmarks/runner_profile.py [--device cuda] [--calls 2000] [--top 12]
"""

import argparse
import cProfile
import functools
import io
import pstats
import time

from simacc import strategies as sx
from simacc.harness.call import impl
from simacc.harness.call.runner import Runner

try:
    from simacc.properties import support

    DEVICE_PER_CALL = False
except ImportError:  # a checkout from before simacc.properties: the runner took the device per call
    from properties import support

    DEVICE_PER_CALL = True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)

    if DEVICE_PER_CALL:
        runner = Runner(impl.reference(sx.EAGLE))
        lengths = functools.partial(support.sampled_lengths, runner, args.device)
    else:
        runner = Runner(impl.reference(sx.EAGLE), args.device)
        lengths = functools.partial(support.sampled_lengths, runner)
    runner.__enter__()
    lengths(2.25, "match-expected", 200)  # warm-up
    start = time.perf_counter()
    lengths(2.25, "match-expected", args.calls)
    per_call = (time.perf_counter() - start) / args.calls * 1e6
    profile = cProfile.Profile()
    profile.runcall(lengths, 2.25, "match-expected", args.calls)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
    print(f"{args.calls} runner calls on {args.device}: {per_call:.0f} us per call (without the profiler)")
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[-(args.top + 2) * 200:])


if __name__ == "__main__":
    main()
