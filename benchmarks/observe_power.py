"""The power of ``simacc observe`` for docs/laws.md: how many steps of a batch it needs to tell a
run of one law from the law it asked for. Measures, never asserts.

    python benchmarks/observe_power.py [--trials 100] [--power 0.99]

For each pair (the law a run was drawn from, the law it is judged against) and batch size, the
number of steps doubles until at least ``--power`` of ``--trials`` runs (fresh seeds) fail the
verdict, then halves back by bisection: the figure is the fewest steps (and records, steps x
batch) at which the verdict fails that often. And the other way round: the share of runs drawn
from the asked law itself that fail (the false alarms; at most 1e-6 by construction, so 0 here).
"""

import argparse

from simacc.commands import observe
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


def fails(drawn, asked, steps, batch, seed):
    run = laws.law(*drawn).draw(steps, batch, seed)
    records = {s: [observe.Record(0, s, r, n) for r, n in enumerate(step)] for s, step in enumerate(run)}
    return not observe.judge(laws.law(*asked), records).passed


def share(drawn, asked, steps, batch, trials):
    return sum(fails(drawn, asked, steps, batch, seed) for seed in range(trials)) / trials


def fewest_steps(drawn, asked, batch, trials, power):
    high = 1
    while share(drawn, asked, high, batch, trials) < power:
        high *= 2
    low = high // 2
    while high - low > max(1, low // 20):  # to 5%
        middle = (low + high) // 2
        low, high = (middle, high) if share(drawn, asked, middle, batch, trials) < power else (low, middle)
    return high


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--power", type=float, default=0.99)
    args = parser.parse_args(argv)
    print(f"| drawn from | judged against | batch | steps to fail {args.power:.0%} of {args.trials} runs | records |")
    print("|---|---|---|---|---|")
    for drawn, asked, batch in PAIRS:
        steps = fewest_steps(drawn, asked, batch, args.trials, args.power)
        name = lambda law: f"{laws.ENGINES[law[0]].title} AL {law[1]:g}, K = {law[2]}"  # noqa: E731
        print(f"| {name(drawn)} | {name(asked)} | {batch} | {steps} | {steps * batch} |", flush=True)
    alarms = sum(fails(law, law, 200, 16, seed) for law in [("vllm", 2.6, 3), ("sglang", 2.6, 3), ("trtllm", 2.6, 3)]
                 for seed in range(args.trials))
    print(f"\nfalse alarms: {alarms} of {3 * args.trials} runs drawn from the law they are judged against")


if __name__ == "__main__":
    main()
