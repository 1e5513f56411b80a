"""The power and false alarms of ``simacc observe`` for docs/laws.md: how many steps of a batch it
needs to tell a run of one law from the law it asked for; how often it names a drifting run,
and a run whose lengths stay with a request, for what they are (and never as lockstep); and how
often a run drawn from the law itself fails. Measures, never asserts (fixed seeds).

    python benchmarks/observe_power.py [--trials 100] [--power 0.99] [--alarms 300]

For each pair (the law a run was drawn from, the law it is judged against) and batch size, the
number of steps doubles until at least ``--power`` of ``--trials`` runs (seeds 0, 1, ...) fail
the verdict, then halves back by bisection: the figure is the fewest steps (and records, steps x
batch) at which the verdict fails that often.
"""

import argparse
from collections import Counter

from simacc.commands.serving import observe_checks as checks
from simacc.commands.serving import observe_tally
from simacc.contract import laws

PAIRS = [  # (drawn from, judged against, batch)
    (("vllm", 3.0, 4), ("vllm", 3.05, 4), 64),  # a shifted AL
    (("vllm", 3.05, 4), ("vllm", 3.0, 4), 64),
    (("vllm", 3.0, 4), ("vllm", 3.05, 4), 1),
    (("sglang", 3.0, 4), ("sglang", 3.05, 4), 64),
    (("llama.cpp", 3.0, 4), ("llama.cpp", 3.05, 4), 64),
    (("llama.cpp", 2.6, 3), ("vllm", 2.6, 3), 1),  # geometric instead of minimum-variance
    (("vllm", 2.6, 3), ("llama.cpp", 2.6, 3), 1),
    (("atom-1850", 3.5, 4), ("llama.cpp", 3.5, 4), 1),  # two wide laws of one mean
    (("sglang", 2.6, 3), ("vllm", 2.6, 3), 2),  # the per-batch draw instead of the per-request one
    (("sglang", 2.6, 3), ("vllm", 2.6, 3), 8),
    (("sglang", 2.6, 3), ("vllm", 2.6, 3), 64),
    (("vllm", 2.6, 3), ("sglang", 2.6, 3), 2),
    (("trtllm", 3.6, 4), ("trtllm", 2.6, 4), 64),  # AL given to a knob of AL - 1
]
ALARM_LAWS = [("vllm", 2.6, 3), ("vllm", 3.5, 4), ("sglang", 2.6, 3), ("llama.cpp", 2.6, 3), ("atom-1850", 3.5, 4),
              ("trtllm", 2.6, 3)]


def tally_of(law, run):
    """The tally of a run (a list per step of its lengths), as ``simacc observe`` reads it."""
    tally = observe_tally.Tally(law)
    line = 0
    for s, step in enumerate(run):
        for r, n in enumerate(step):
            line += 1
            tally.add(line, s, r, n)
    return tally


def verdict(drawn, asked, steps, batch, seed):
    return checks.judge(tally_of(laws.law(*asked), laws.law(*drawn).draw(steps, batch, seed)))


def share(drawn, asked, steps, batch, trials):
    return sum(not verdict(drawn, asked, steps, batch, seed).passed for seed in range(trials)) / trials


def fewest_steps(drawn, asked, batch, trials, power):
    high = 1
    while share(drawn, asked, high, batch, trials) < power:
        high *= 2
    low = high // 2
    while high - low > max(1, low // 20):  # to 5%
        middle = (low + high) // 2
        low, high = (middle, high) if share(drawn, asked, middle, batch, trials) < power else (low, middle)
    return high


def drifting(steps, batch, seed):
    """vLLM at K = 4: AL 2.4 for the first half, 2.8 for the second (pooled: AL 2.6's law exactly)."""
    return laws.law("vllm", 2.4, 4).draw(steps // 2, batch, seed) + \
        laws.law("vllm", 2.8, 4).draw(steps - steps // 2, batch, seed + 10**6)


def sticky(steps, batch, seed, keep=1.0):
    """vLLM at K = 3, AL 2.6: each request keeps its last length with chance ``keep``, else draws
    afresh (the law's mix at every step)."""
    import random

    fresh = laws.law("vllm", 2.6, 3).draw(steps, batch, seed)
    rng, run = random.Random(seed), [fresh[0]]
    for step in fresh[1:]:
        run.append([before if rng.random() < keep else now for before, now in zip(run[-1], step)])
    return run


def named(runs, law):
    """How often each check fails over ``runs``."""
    failed = Counter()
    for run in runs:
        for c in checks.judge(tally_of(law, run)).checks:
            failed[c.name] += not c.passed
    return failed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--power", type=float, default=0.99)
    parser.add_argument("--alarms", type=int, default=300, help="runs per law drawn from the law it is judged against")
    parser.add_argument("--skip-table", action="store_true", help="only the drift, serial and false-alarm figures")
    args = parser.parse_args(argv)

    def name(law):
        return f"{laws.ENGINES[law[0]].title} AL {law[1]:g}, K = {law[2]}"

    if not args.skip_table:
        print(f"| drawn from | judged against | batch | steps to fail {args.power:.0%} of {args.trials} runs "
              "| records |")
        print("|---|---|---|---|---|")
        for drawn, asked, batch in PAIRS:
            steps = fewest_steps(drawn, asked, batch, args.trials, args.power)
            print(f"| {name(drawn)} | {name(asked)} | {batch} | {steps} | {steps * batch} |", flush=True)
    vllm26_4, vllm26_3 = laws.law("vllm", 2.6, 4), laws.law("vllm", 2.6, 3)
    for steps, batch in ((400, 8), (400, 64), (100, 64)):
        failed = named([drifting(steps, batch, seed) for seed in range(args.trials)], vllm26_4)
        print(f"\ndrift AL 2.4 -> 2.8 (vLLM, K = 4), {batch} requests x {steps} steps: {dict(failed)} of "
              f"{args.trials} runs", flush=True)
    for keep in (1.0, 0.5, 0.2):
        failed = named([sticky(400, 64, seed, keep) for seed in range(args.trials)], vllm26_3)
        print(f"sticky (keep {keep}), vLLM AL 2.6, K = 3, 64 requests x 400 steps: {dict(failed)} of {args.trials} "
              "runs", flush=True)
    print()
    for law in ALARM_LAWS:
        lockstep = laws.ENGINES[law[0]].joint != laws.INDEPENDENT
        steps, batch = (2048, 4) if lockstep else (200, 16)
        runs = [laws.law(*law).draw(steps, batch, seed) for seed in range(args.alarms)]
        failed = named(runs, laws.law(*law))
        print(f"false alarms, {name(law)}, {batch} requests x {steps} steps: {sum(failed.values())} failed checks in "
              f"{args.alarms} runs {dict(failed) if sum(failed.values()) else ''}", flush=True)


if __name__ == "__main__":
    main()
