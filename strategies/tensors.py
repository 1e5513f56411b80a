"""Strategies for tensors: dtypes, layouts and seeded integer contents.

Values come from ``torch.randint`` under a drawn seed rather than element-by-element draws:
about 7x faster to generate (MEASUREMENTS.md) at the price of shrinking only the seed, the
shape and the value range. Positions that matter to a property (roots, the agreeing prefix
of a chain) are set explicitly by the case strategies.
"""

import torch
from hypothesis import strategies as st

from simacc.cases import LAYOUTS, TensorArg
from strategies.scalars import seeds


def token_dtypes():
    """Token tensor dtypes; int64 (upstream's) first, so it is what shrinking reaches."""
    return st.sampled_from((torch.int64, torch.int32))


def layouts(ndim):
    """Memory layouts valid for an ``ndim``-D tensor; shrinks toward contiguous."""
    if ndim not in (1, 2):
        raise ValueError(f"{ndim=} must be 1 or 2")
    return st.sampled_from(LAYOUTS if ndim == 2 else tuple(x for x in LAYOUTS if x != "transposed"))


def fill(shape, dtype, low, high, seed):
    """A CPU tensor of ``shape`` with integers in ``[low, high)`` from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype)


def int_tensors(shape, dtype, low, high, *, label):
    """A :class:`TensorArg` of seeded integers in ``[low, high)`` with a drawn layout.

    ``shape`` is 1-D or 2-D. Shrinks toward seed 0 and the contiguous layout.
    """
    if high <= low:
        raise ValueError(f"{high=} <= {low=}")
    return _int_tensors(tuple(shape), dtype, low, high, layouts(len(shape)), label)


@st.composite
def _int_tensors(draw, shape, dtype, low, high, layout_strategy, label):
    seed = draw(seeds(), label=f"{label}.seed")
    layout = draw(layout_strategy, label=f"{label}.layout")
    return TensorArg(fill(shape, dtype, low, high, seed), layout)


def arbitrary_int32(shape, *, label):
    """Prefilled int32 buffers with arbitrary contents (never a constant array by design:
    two seeded draws over a wide range are equal with negligible probability)."""
    return int_tensors(shape, torch.int32, -(2**31), 2**31 - 1, label=label)
