"""Cases for the kernel op (SPEC.md, "The kernel op"): the length is an input, so it is drawn
directly and every ``L`` in ``1..width`` is as cheap to reach as any other (issue #11).

The layout of every tensor is drawn (contiguous, transposed, strided, offset), since the op
reads and writes each one through its strides; fixed mode passes token tensors too, whose
contents the op must not need.
"""

import functools

import torch
from hypothesis import strategies as st

import simacc as sa
from simacc.cases import KernelCase, TensorArg
from strategies import scalars as sc
from strategies import tensors as tn
from strategies.cases import roots

MAX_WIDTH = 17
_TREE_EXTRA = st.integers(0, 8)
_LAYOUTS_1D, _LAYOUTS_2D = tn.layouts(1), tn.layouts(2)


def kernel_cases(*, modes=sa.TOKEN_MODES, min_bs=0, max_bs=256, max_width=MAX_WIDTH):
    """Cases for the kernel op in the given token ``modes`` (``real_tokens`` is True for
    ``real-draft-token``), ``bs`` in ``[min_bs, max_bs]``, ``width`` in ``[1, max_width]``.

    Real mode is a chain (``D == width``); fixed mode may have more nodes per request.
    Shrinks toward bs=1, width=1, L=1, fixed mode, sglang roots and contiguous tensors.
    """
    if max_width < 1:
        raise ValueError(f"{max_width=} must be >= 1")
    return _kernel_cases(sc.token_modes(modes), sc.batch_sizes(min_bs, max_bs), st.integers(1, max_width))


@functools.lru_cache(maxsize=None)
def _lengths(width):
    return st.integers(1, width)


@st.composite
def _kernel_cases(draw, modes, batch_sizes, widths):
    real = draw(modes, label="mode") == "real-draft-token"
    bs = draw(batch_sizes, label="bs")
    width = draw(widths, label="width")
    length = draw(_lengths(width), label="num_accept_tokens")
    d = width if real else width + draw(_TREE_EXTRA, label="tree_extra_nodes")
    root_list, predict_len = draw(roots(bs, d))
    seed = draw(sc.seeds(), label="contents.seed")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    dtype = draw(tn.token_dtypes(), label="candidate_tokens.dtype")

    index = tn.fill((bs, width), torch.int32, -1, predict_len + 1, seed)
    if bs:
        index[:, 0] = torch.tensor(root_list, dtype=torch.int32)
    return KernelCase(
        accept_indices=TensorArg(index, draw(_LAYOUTS_2D, label="accept_indices.layout")),
        predict_tokens=TensorArg(tn.fill((predict_len,), torch.int32, -(2**31), 2**31 - 1, seed + 1),
                                 draw(_LAYOUTS_1D, label="predict_tokens.layout")),
        num_correct_drafts=TensorArg(tn.fill((bs,), torch.int32, -(2**31), 2**31 - 1, seed + 2),
                                     draw(_LAYOUTS_1D, label="num_correct_drafts.layout")),
        candidate_tokens=TensorArg(tn.fill((bs, d), dtype, 0, vocab, seed + 3),
                                   draw(_LAYOUTS_2D, label="candidate_tokens.layout")),
        target_tokens=TensorArg(tn.fill((bs, d), torch.int64, 0, vocab, seed + 4),
                                draw(_LAYOUTS_2D, label="target_tokens.layout")),
        width=width,
        num_accept_tokens=length,
        real_tokens=real,
        seed=draw(sc.seeds(), label="seed"),
    )
