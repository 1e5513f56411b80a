"""Generation speed of the case strategies: examples per second and draws per example.

Each strategy feeds a ``@given`` test that does nothing (``max_examples=1000``,
``derandomize=True``, no database), so the time is Hypothesis's plus the strategy's own:
the best of ``--repeats`` runs is reported. Then one more run under cProfile counts, per
example, the strategy draws (``ConjectureData.draw``: composites, ``map``s and ``one_of``s
included), the primitive draws (``draw_integer``, ``draw_boolean``, ``draw_float``, ...)
and the strategy validations. The first row, one integer per example, is the floor that no
case strategy can beat: what Hypothesis itself costs per example on this machine.

    python -m benchmarks.strategies [--repeats N] [--examples N]

(``-m`` from the repository root: run as a file, this module would shadow the
``strategies`` package it measures.)
"""

import argparse
import cProfile
import pstats
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from simacc import strategies as sx

CASES = {
    "floor: integers()": lambda: st.integers(0, 2**32 - 1),  # Hypothesis's own cost per example
    "eagle_cases()": lambda: sx.eagle_cases(),
    "eagle_cases(real)": lambda: sx.eagle_cases(modes=("real-draft-token",)),
    "eagle_cases(fixed)": lambda: sx.eagle_cases(modes=("fixed",)),
    "chain_cases()": lambda: sx.chain_cases(),
    "dflash_cases()": lambda: sx.dflash_cases(),
}
PRIMITIVES = ("draw_integer", "draw_boolean", "draw_float", "draw_string", "draw_bytes")


def generate(make, examples):
    """Run ``examples`` examples of ``make()``; return ``(seconds, examples run)``."""
    seen = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None)
    @given(make())
    def nothing(case):
        seen.append(None)

    start = time.perf_counter()
    nothing()
    return time.perf_counter() - start, len(seen)


def draw_counts(make, examples):
    """Calls per example of the strategy draw, the primitive draws and ``validate``."""
    profile = cProfile.Profile()
    profile.enable()
    _, n = generate(make, examples)
    profile.disable()
    calls = {"draw": 0, "primitive": 0, "validate": 0}
    for (path, _, name), (_, ncalls, *_rest) in pstats.Stats(profile).stats.items():
        if path.endswith("conjecture/data.py") and name == "draw":
            calls["draw"] += ncalls
        elif path.endswith("conjecture/data.py") and name in PRIMITIVES:
            calls["primitive"] += ncalls
        elif path.endswith("strategies.py") and name == "validate":
            calls["validate"] += ncalls
    return {k: v / n for k, v in calls.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--examples", type=int, default=1000)
    args = parser.parse_args()
    print(f"{'strategy':<20} {'cases/s':>8} {'draws':>6} {'prims':>6} {'valid.':>6}")
    for name, make in CASES.items():
        best = max(n / s for s, n in (generate(make, args.examples) for _ in range(args.repeats)))
        counts = draw_counts(make, args.examples)
        print(f"{name:<20} {best:8.0f} {counts['draw']:6.1f} {counts['primitive']:6.1f} {counts['validate']:6.1f}")


if __name__ == "__main__":
    main()
