"""The Triton kernels behind ``simacc.zoo.kernel.triton_simulated_accept``.

One program per block of rows writes the index, the counts and, in real mode, the drafts
and the bonus; fixed mode fills the ``predict_tokens`` view with a second kernel. Every
tensor is addressed through its strides, in 64-bit offsets (no product of a row and a stride can
overflow; Triton's interpreter also checks every 32-bit sum and product for overflow, a fifth of
its time on a server's batch). On CUDA tensors the kernels run compiled; CPU
tensors only Triton's interpreter can run, and whether ``triton.jit`` makes an interpreted
function is decided by ``TRITON_INTERPRET`` when it is applied, so :func:`jitted` applies
it once per mode. The kernels use only Triton's builtins (``tl.full``, not ``tl.zeros``):
its library functions were jitted, compiled, when Triton was imported, and the interpreter
cannot call them. This module imports Triton: import it only when Triton is installed.
"""

import functools
import os

import triton
import triton.language as tl


def _simulate(index_ptr, index_stride, predict_ptr, predict_stride, counts_ptr, counts_stride,
              cand_ptr, cand_stride0, cand_stride1, target_ptr, target_stride0, target_stride1,
              out_ptr, bs, width, length,
              REAL: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_COLS).to(tl.int64)
    live = rows < bs
    roots = tl.load(index_ptr + rows * index_stride, mask=live, other=0).to(tl.int64)
    slots = roots[:, None] + cols[None, :]
    value = tl.where(cols[None, :] < length, slots, -1).to(tl.int32)
    tl.store(out_ptr + rows[:, None] * width + cols[None, :], value, mask=live[:, None] & (cols[None, :] < width))
    counts = tl.full([BLOCK_ROWS], length - 1, dtype=counts_ptr.dtype.element_ty)
    tl.store(counts_ptr + rows * counts_stride, counts, mask=live)
    if REAL:
        drafts = live[:, None] & (cols[None, :] < length - 1)
        tokens = tl.load(cand_ptr + rows[:, None] * cand_stride0 + (cols[None, :] + 1) * cand_stride1, mask=drafts)
        tl.store(predict_ptr + slots * predict_stride, tokens.to(predict_ptr.dtype.element_ty), mask=drafts)
        bonus = tl.load(target_ptr + rows * target_stride0 + (length - 1) * target_stride1, mask=live)
        tl.store(predict_ptr + (roots + length - 1) * predict_stride, bonus.to(predict_ptr.dtype.element_ty), mask=live)


def _fill(predict_ptr, predict_stride, n, value, BLOCK: tl.constexpr):
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    fill = tl.full([BLOCK], value, dtype=predict_ptr.dtype.element_ty)
    tl.store(predict_ptr + at.to(tl.int64) * predict_stride, fill, mask=at < n)


@functools.lru_cache(maxsize=2)
def jitted(on_cuda):
    """``(simulate, fill)`` compiled for CUDA, or interpreted for CPU tensors."""
    if on_cuda:
        return triton.jit(_simulate), triton.jit(_fill)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        return triton.jit(_simulate), triton.jit(_fill)
    finally:
        if before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = before
