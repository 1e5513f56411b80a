"""Per-call latency of the reference next to a plain eager implementation.

The plain one (``simacc.zoo.correct.plain_eager``) is upstream's sequence of torch ops with
no argument checks: the difference is what the reference's validation and op choices cost.
Each configuration builds its inputs once, seeds the generator once, warms up, then times
calls one by one with ``time.perf_counter`` and reports the median in microseconds; on CUDA
each timed call ends with a synchronisation, so the time covers the device's work too.
Nothing is reseeded or rebuilt inside the timed region (the calls overwrite ``predict`` and
``num_correct_drafts`` in place, which is what a serving loop does too). ``x = 1.5`` under
``match-expected`` so that every call makes its one generator draw.

    python benchmarks/latency.py [--device cuda] [--repeats N] [--warmup N] [--json PATH]

``measure`` takes any function with the reference's keyword signature, so another module can
time other implementations the same way.
"""

import argparse
import json
import statistics
import time

import torch

import simacc as sa
from simacc.harness.config.settings import argtype, positive_int
from simacc.zoo.correct import plain_eager

BATCH_SIZES = (1, 64, 256)
WIDTHS = (2, 8)
MODES = ("fixed", "real-draft-token")


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


def measure(fn, bs, width, mode, repeats, warmup=50, device="cpu"):
    """Median wall time of one ``fn(**inputs)`` call on ``device``, in microseconds."""
    kwargs = make_inputs(bs, width, mode, device)
    cuda = torch.device(device).type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.manual_seed(0)
    for _ in range(warmup):
        fn(**kwargs)
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(**kwargs)
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def table(device="cpu", repeats=2000, warmup=50):
    """``[{bs, width, mode, reference_us, plain_us, ratio}]`` for every configuration."""
    rows = []
    for bs in BATCH_SIZES:
        for width in WIDTHS:
            for mode in MODES:
                ref = measure(sa.generate_simulated_accept_index, bs, width, mode, repeats, warmup, device)
                plain = measure(plain_eager, bs, width, mode, repeats, warmup, device)
                rows.append(dict(bs=bs, width=width, mode=mode, reference_us=round(ref, 1),
                                 plain_us=round(plain, 1), ratio=round(ref / plain, 2)))
    return rows


def render(rows, device):
    lines = [f"call latency on {device}, median us: the reference vs plain eager (upstream's ops, no checks)",
             f"  {'bs':>4}  {'W':>2}  {'mode':<17}  {'reference':>9}  {'plain':>9}  {'ref/plain':>9}"]
    for r in rows:
        lines.append(f"  {r['bs']:>4}  {r['width']:>2}  {r['mode']:<17}  {r['reference_us']:>9.1f}  "
                     f"{r['plain_us']:>9.1f}  {r['ratio']:>9.2f}")
    ratios = sorted(r["ratio"] for r in rows)
    lines.append(f"  median ratio {statistics.median(ratios):.2f} (range {ratios[0]:.2f}-{ratios[-1]:.2f})")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or a CUDA device")
    parser.add_argument("--repeats", type=argtype(positive_int), default=2000, help="timed calls per row")
    parser.add_argument("--warmup", type=argtype(positive_int), default=50, help="untimed calls first")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.repeats} calls/row")
    rows = table(args.device, args.repeats, args.warmup)
    print(render(rows, args.device))
    if args.json:
        meta = dict(torch=torch.__version__, threads=torch.get_num_threads(), repeats=args.repeats, device=args.device)
        with open(args.json, "w") as f:
            json.dump(dict(meta, rows=rows), f, indent=2)


if __name__ == "__main__":
    main()
