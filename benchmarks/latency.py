"""Per-call CPU latency of ``generate_simulated_accept_index`` (issue #2).

Each configuration builds its inputs once, seeds the generator once, warms up, then times
calls one by one with ``time.perf_counter`` and reports the median in microseconds. Nothing
is reseeded or rebuilt inside the timed region (the calls overwrite ``predict`` and
``num_correct_drafts`` in place, which is what a serving loop does too). ``x = 1.5`` under
``match-expected`` so that every call makes its one generator draw.

    python benchmarks/latency.py [--repeats N] [--warmup N] [--json PATH]

``measure`` takes any function with the reference's keyword signature, so another module can
time other implementations the same way.
"""

import argparse
import json
import statistics
import time

import torch

import simacc as sa

BATCH_SIZES = (1, 64, 256)
WIDTHS = (2, 8)
MODES = ("fixed", "real-draft-token")


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def make_inputs(bs, width, mode, device="cpu"):
    """A ``topk == 1`` chain batch (``D == W``) with roots at ``i*D``."""
    gen = torch.Generator().manual_seed(0)  # a private generator: the default one stays put
    accept_index = torch.full((bs, width), -1, dtype=torch.int32)
    accept_index[:, 0] = torch.arange(bs, dtype=torch.int32) * width
    candidates = torch.randint(0, 32000, (bs, width), generator=gen)
    return dict(
        accept_index=accept_index.to(device),
        predict=torch.zeros(bs * width, dtype=torch.int32, device=device),
        num_correct_drafts=torch.zeros(bs, dtype=torch.int32, device=device),
        candidates=candidates.to(device),
        target_predict=torch.randint(0, 32000, (bs, width), generator=gen).to(device),
        bs=bs,
        spec_steps=width - 1,
        simulate_acc_len=1.5,
        simulate_acc_method="match-expected",
        simulate_acc_token_mode=mode,
    )


def measure(fn, bs, width, mode, repeats, warmup=50):
    """Median wall time of one ``fn(**inputs)`` call, in microseconds."""
    kwargs = make_inputs(bs, width, mode)
    torch.manual_seed(0)
    for _ in range(warmup):
        fn(**kwargs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(**kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=positive_int, default=2000, help="timed calls per row")
    parser.add_argument("--warmup", type=positive_int, default=50, help="untimed calls first")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    fn, rows = sa.generate_simulated_accept_index, []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.repeats} calls/row")
    print(f"{'bs':>5} {'W':>3}  {'mode':<17} {'median us':>10}")
    for bs in BATCH_SIZES:
        for width in WIDTHS:
            for mode in MODES:
                us = measure(fn, bs, width, mode, args.repeats, args.warmup)
                rows.append(dict(bs=bs, width=width, mode=mode, median_us=round(us, 2)))
                print(f"{bs:>5} {width:>3}  {mode:<17} {us:>10.1f}")
    if args.json:
        meta = dict(torch=torch.__version__, threads=torch.get_num_threads(), repeats=args.repeats)
        with open(args.json, "w") as f:
            json.dump(dict(meta, rows=rows), f, indent=2)


if __name__ == "__main__":
    main()
