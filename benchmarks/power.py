"""The power of the distribution properties, measured: each property's own checks (its knob
values, draws and false-alarm shares: ``simacc.properties.designs()``), fed draws from laws
next to the documented one, over many seeds; a property detects a law when any of its checks
fails, as a run of it does.

    python benchmarks/power.py [--seeds 1000] [--json PATH]

The draws are simulated (numpy's multinomial over the law's values) and judged by the test the
properties run (:func:`simacc.harness.judging.statistics.cdf_test`), rather than drawn by an
implementation through the harness a thousand times: the test sees only the values, so the
counts are the same and a run takes seconds. The neighbouring laws: for ``multinomial`` a
Gaussian of standard deviation 0.7, 0.8 or 1.2, or its mean moved by 0.1 or 0.2; for
``match-expected`` and vLLM's accepted count a mean acceptance length moved by 0.05 (the
length's law at ``x + 0.05``; for vLLM's rates, each rate moved by ``0.05 / K``). The documented
law itself gives the false alarms. Measures, never asserts; CONTRACT.md §9.4 states the targets.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simacc import properties  # noqa: E402
from simacc.contract import vllm as ref  # noqa: E402
from simacc.harness.judging import statistics  # noqa: E402
from simacc.properties import support  # noqa: E402


def gaussian(x, width, sigma=1.0):
    """``P(L = k)`` of round(clamp(N(x, sigma), 1, W))."""
    cdf = lambda z: 0.5 * (1 + math.erf((z - x) / (sigma * math.sqrt(2))))  # noqa: E731
    edges = [-math.inf] + [k + 0.5 for k in range(1, width)] + [math.inf]
    return [cdf(b) - cdf(a) for a, b in zip(edges, edges[1:])]


def accepted(rates):
    p = [1.0, *rates, 0.0]
    return [p[j] - p[j + 1] for j in range(len(rates) + 1)]


def neighbours(design):
    """``{name: law}`` next to the design's documented law, for the properties of a length."""
    width = len(design.probabilities)
    if "multinomial" in design.prop:
        x = float(design.where.removeprefix("x="))
        return {"sigma 0.7": gaussian(x, width, 0.7), "sigma 0.8": gaussian(x, width, 0.8),
                "sigma 1.2": gaussian(x, width, 1.2),
                "mean +0.1": gaussian(x + 0.1, width), "mean -0.1": gaussian(x - 0.1, width),
                "mean +0.2": gaussian(x + 0.2, width), "mean -0.2": gaussian(x - 0.2, width)}
    if "match_expected" in design.prop:
        x = float(design.where.removeprefix("x="))
        return {"AL +0.05": support.match_expected_probabilities(x + 0.05, width),
                "AL -0.05": support.match_expected_probabilities(x - 0.05, width)}
    if design.prop == "vllm_accepted_count_follows_the_per_position_rates":
        k = width - 1
        if design.where.startswith("length"):
            length = float(design.where.removeprefix("length "))
            return {f"AL {d:+.2f}": accepted(ref.resolve_synthetic_rates(num_speculative_tokens=k,
                                                                         synthetic_acceptance_length=length + d))
                    for d in (0.05, -0.05)}
        rates = [1 - sum(design.probabilities[: j + 1]) for j in range(k)]
        return {f"AL {d:+.2f}": accepted([min(1.0, max(0.0, p + d / k)) for p in rates]) for d in (0.05, -0.05)}
    return {}


def rejected(design, law, rng):
    """Whether the design's check fails on one seed's draws from ``law``."""
    counts = rng.multinomial(design.runs, np.clip(law, 0, None) / np.sum(np.clip(law, 0, None)))
    values = [k for k, n in enumerate(counts.tolist(), 1) for _ in range(n)]
    return not statistics.cdf_test(values, design.probabilities, design.false_alarm).passed


def measure(seeds):
    """``{property: {law: {"detected": n, "checks": {where: n}}}}`` over ``seeds`` seeds."""
    by_prop = {}
    for design in properties.designs():
        by_prop.setdefault(design.prop, []).append(design)
    found = {}
    for prop, designs in by_prop.items():
        laws = {"documented": [list(d.probabilities) for d in designs]}
        for name in neighbours(designs[0]):
            laws[name] = [neighbours(d).get(name, list(d.probabilities)) for d in designs]
        found[prop] = {}
        for name, per_design in laws.items():
            hits = np.zeros((seeds, len(designs)), dtype=bool)
            for j, (design, law) in enumerate(zip(designs, per_design)):
                rng = np.random.default_rng([j, len(name), sum(map(ord, name))])
                hits[:, j] = [rejected(design, law, rng) for _ in range(seeds)]
            found[prop][name] = {"detected": int(hits.any(axis=1).sum()),
                                 "checks": {d.where: int(hits[:, j].sum()) for j, d in enumerate(designs)}}
    return found


def repeats(seeds, examples=50):
    """``{law: {profile case: detections}}`` of the serving burst's repeat test (its lengths
    step against step, :func:`simacc.harness.judging.statistics.repeat_test`), at the share a
    run of ``examples`` drawn programs gives it, on the fixed programs' laws (x = 2.5, W = 4):
    the documented law drawn independently (its false alarms), a stream seeded again every
    ``d`` steps (its first seeding at a random step of the first ``d``), and one that repeats
    its last draw with probability ``s``."""
    from simacc.properties import serving

    share = statistics.FALSE_ALARM / (examples + len(serving.sa.METHODS)) / 2
    found = {}
    for method in serving.sa.METHODS:
        law = np.array(serving.probabilities(2.5, method, 4))
        rng = np.random.default_rng(sum(map(ord, method)))

        def stream(kind, value):
            draws = list(rng.choice(len(law), size=serving.BURST, p=law / law.sum()) + 1)
            if kind == "reseeded":  # its own draws up to its first seeding, at a random step of the first block
                phase = int(rng.integers(value))
                return draws[:phase] + [draws[phase + i % value] for i in range(serving.BURST - phase)]
            if kind == "sticky":
                for i in range(1, serving.BURST):
                    if rng.random() < value:
                        draws[i] = draws[i - 1]
            return draws

        kinds = [("documented", None, 0)] + [("reseeded", f"every {d}", d) for d in (4, 8, 16, 32, 48, 64, 80)] + \
                [("sticky", f"repeats {s:.2f}", s) for s in (0.25, 0.5)]
        found[method] = {
            f"{kind} {name or ''}".strip(): sum(not statistics.repeat_test(stream(kind, value), law, share).passed
                                                for _ in range(seeds))
            for kind, name, value in kinds}
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", type=int, default=1000, help="seeds per law (default 1000)")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args(argv)
    start = time.monotonic()
    found = measure(args.seeds)
    print(f"detections in {args.seeds} seeds (a property detects when any of its checks fails; per check in brackets)")
    for prop, laws in found.items():
        print(f"\n{prop}")
        for name, row in laws.items():
            checks = ", ".join(f"{where}: {n}" for where, n in row["checks"].items())
            print(f"  {name:<11} {row['detected']:>5}   [{checks}]")
    burst = repeats(args.seeds)
    print(f"\nserving_loop_conforms_at_every_step: its burst's repeat test, detections in {args.seeds} seeds "
          "(x = 2.5, W = 4; the default profile's share)")
    for method, row in burst.items():
        print(f"  {method}: " + ", ".join(f"{name}: {n}" for name, n in row.items()))
    print(f"\n{time.monotonic() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"seeds": args.seeds, "properties": found, "burst repeats": burst},
                                              indent=1))


if __name__ == "__main__":
    main()
