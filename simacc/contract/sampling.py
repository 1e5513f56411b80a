"""The acceptance-length sampler (CONTRACT.md §3).

Every draw comes from torch's default CPU generator with exactly the calls CONTRACT.md §3 names, so
that a seeded run reproduces the upstream random stream and tensor-parallel ranks agree.
"""

import math

import torch

METHODS = ("multinomial", "match-expected")


def sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, max_len):
    """One acceptance length for the whole batch, in ``[1, max_len]``.

    ``simulate_acc_len`` is not checked here (the callers do); an unknown method is a
    ``ValueError`` raised before any draw.
    """
    x = simulate_acc_len
    if simulate_acc_method == "multinomial":
        # Despite its name this is a Gaussian around x: one draw, in the default dtype.
        draw = torch.normal(mean=x, std=1.0, size=(1,), device="cpu")
        return int(torch.round(torch.clamp(draw, 1, max_len)).item())
    if simulate_acc_method == "match-expected":
        # Python's min/max on purpose: NaN and +inf land on max_len, x <= 0 on 1.
        x = max(1.0, min(max_len, x))
        lo = math.floor(x)
        hi = lo + 1 if lo < max_len else lo
        if lo == hi:
            return lo
        frac = float(x - lo)  # an int x would give an int64 tensor, which multinomial rejects
        pick = torch.multinomial(torch.tensor([1 - frac, frac]), 1).item()
        return lo if pick == 0 else hi
    raise ValueError(
        f"unknown simulate_acc_method {simulate_acc_method!r}; expected one of {METHODS}"
    )
