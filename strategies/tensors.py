"""Strategies for tensors: dtypes, layouts and seeded integer contents.

Values come from ``torch.randint`` under a drawn seed rather than element-by-element draws:
about 7x faster to generate (measured on a 2-core machine) at the price of shrinking only the seed, the
shape and the value range. The case strategies go further, because each Hypothesis draw
costs more than the tensor it seeds: every tensor of a case comes from the case's one seed
(:func:`fill` with an offset per field), and one draw of :func:`layout_codes` names the
layouts of all of them. Positions that matter to a property (roots, the agreeing prefix of
a chain) are set explicitly by the case strategies.
"""

import functools

import torch
from hypothesis import strategies as st

from simacc.harness.model.cases import LAYOUTS

INT32 = (-(2**31), 2**31 - 1)  # the range of arbitrary prefilled int32 buffers
WIDE = (-(2**40), 2**40)  # the range of arbitrary prefilled int64 outputs
_TOKEN_DTYPES = st.sampled_from((torch.int64, torch.int32))
_LAYOUT_CODES = {2: LAYOUTS, 1: tuple("strided" if x == "transposed" else x for x in LAYOUTS)}


def token_dtypes():
    """Token tensor dtypes; int64 (upstream's) first, so it is what shrinking reaches."""
    return _TOKEN_DTYPES


@functools.lru_cache(maxsize=None)
def layout_codes(count):
    """Integers that name the layouts of ``count`` tensors at once (:func:`decode_layouts`).

    One base-5 digit per tensor (a layout of :data:`LAYOUTS`), the first tensor in the lowest:
    one draw instead of one per tensor, and shrinking the integer lowers the digits, so a
    failure that needs one tensor off contiguous shrinks toward that tensor alone. Shrinks
    toward 0, every tensor contiguous.
    """
    if count < 1:
        raise ValueError(f"{count=} must be >= 1")
    return st.integers(0, len(LAYOUTS) ** count - 1)


def decode_layouts(code, ndims):
    """The layouts that ``code`` names for tensors of ``ndims`` dimensions; a 1-D tensor
    has no transposed view and reads that code as strided."""
    base = len(LAYOUTS)
    return tuple(_LAYOUT_CODES[ndim][code // base**i % base] for i, ndim in enumerate(ndims))


def fill(shape, dtype, low, high, seed):
    """A CPU tensor of ``shape`` with integers in ``[low, high)`` from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype)
