"""The kernel op (CONTRACT.md §8): two correct implementations and mutants.

``triton_simulated_accept`` launches Triton kernels of simacc's own
(:mod:`simacc.zoo.triton_kernels`, imported only when it runs: Triton is an optional extra)
with upstream's signature; ``kernel_eager`` says the same in torch ops. Each mutant gets one
step wrong; the correct steps are :func:`_index`, :func:`_counts` and :func:`_tokens`.
"""

import torch

from simacc.zoo.base import FIXED, register

# a program per 256 rows (a server's batch of 16,391 is 65 programs, the last of 7 rows) and per 8192
# elements of predict_tokens: on CPU tensors Triton's interpreter spends its time per program, so
# 64 rows and 1024 elements cost it four times as much for the same rows and masks
_BLOCK_ROWS = 256
_BLOCK_FILL = 8192


def _index(accept_indices, width, length):
    cols = torch.arange(width, dtype=torch.int32, device=accept_indices.device)
    return torch.where(cols < length, accept_indices[:, :1].to(torch.int32) + cols, -1).to(torch.int32)


def _counts(num_correct_drafts, length):
    num_correct_drafts.fill_(length - 1)


def _tokens(predict_tokens, out, candidate_tokens, target_tokens, length, real_tokens):
    if not real_tokens:
        predict_tokens.fill_(FIXED)
        return
    slots = out[:, :length].long()
    predict_tokens[slots[:, : length - 1]] = candidate_tokens[:, 1:length].to(predict_tokens.dtype)
    predict_tokens[slots[:, length - 1]] = target_tokens[:, length - 1].to(predict_tokens.dtype)


@register("correct")
def kernel_eager(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens, target_tokens,
                 width, num_accept_tokens, real_tokens):
    """Correct: the kernel op in eager torch ops (strides followed by torch itself)."""
    out = _index(accept_indices, width, num_accept_tokens)
    _counts(num_correct_drafts, num_accept_tokens)
    _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("correct", requires=("triton",))
def triton_simulated_accept(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens, target_tokens,
                            width, num_accept_tokens, real_tokens):
    """Correct: a Triton kernel, a block of rows per program, every tensor through its strides."""
    import triton

    from simacc.zoo import triton_kernels

    bs = accept_indices.shape[0]
    out = torch.empty((bs, width), dtype=torch.int32, device=accept_indices.device)
    simulate, fill = triton_kernels.jitted(accept_indices.is_cuda)
    if bs:
        cand, target = (candidate_tokens, target_tokens) if real_tokens else (accept_indices, accept_indices)
        simulate[(triton.cdiv(bs, _BLOCK_ROWS),)](
            accept_indices, accept_indices.stride(0), predict_tokens, predict_tokens.stride(0),
            num_correct_drafts, num_correct_drafts.stride(0), cand, cand.stride(0), cand.stride(1),
            target, target.stride(0), target.stride(1), out, bs, width, num_accept_tokens,
            REAL=real_tokens, BLOCK_ROWS=_BLOCK_ROWS, BLOCK_COLS=max(2, triton.next_power_of_2(width)),
        )
    if not real_tokens and predict_tokens.shape[0]:
        n = predict_tokens.shape[0]
        fill[(triton.cdiv(n, _BLOCK_FILL),)](predict_tokens, predict_tokens.stride(0), n, FIXED, BLOCK=_BLOCK_FILL)
    return out


# -- mutants: one step wrong ------------------------------------------------------------------


_BUFFERS = {}


@register("inputs", "kernel_result_aliases_no_input_and_no_earlier_result")
def kernel_reuses_one_output_buffer(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                    target_tokens, width, num_accept_tokens, real_tokens):
    """Keeps one output buffer per shape and returns it from every call (a static allocation)."""
    key = (accept_indices.shape[0], width, accept_indices.device)
    out = _BUFFERS.setdefault(key, torch.empty(key[:2], dtype=torch.int32, device=key[2]))
    out.copy_(_index(accept_indices, width, num_accept_tokens))
    _counts(num_correct_drafts, num_accept_tokens)
    _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("layout", "kernel_fixed_mode_fills_every_predict_element", "kernel_writes_nothing_outside_its_views")
def kernel_fills_the_storage_not_the_view(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                          target_tokens, width, num_accept_tokens, real_tokens):
    """Fixed mode fills len(predict_tokens) contiguous elements from the view's start, ignoring its stride."""
    out = _index(accept_indices, width, num_accept_tokens)
    _counts(num_correct_drafts, num_accept_tokens)
    if real_tokens:
        _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    else:
        torch.as_strided(predict_tokens, (predict_tokens.shape[0],), (1,)).fill_(FIXED)
    return out


@register("num_correct_drafts", "kernel_num_correct_drafts_is_length_minus_one", "kernel_matches_upstreams_grid")
def kernel_counts_the_bonus(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                            target_tokens, width, num_accept_tokens, real_tokens):
    """Writes num_accept_tokens into num_correct_drafts instead of num_accept_tokens - 1."""
    out = _index(accept_indices, width, num_accept_tokens)
    _counts(num_correct_drafts, num_accept_tokens + 1)
    _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("bonus", "kernel_real_mode_writes_drafts_then_bonus_at_accepted_slots", "kernel_matches_upstreams_grid")
def kernel_no_bonus_at_length_one(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                  target_tokens, width, num_accept_tokens, real_tokens):
    """Skips every token write when num_accept_tokens == 1, so the lone bonus is never written."""
    out = _index(accept_indices, width, num_accept_tokens)
    _counts(num_correct_drafts, num_accept_tokens)
    if num_accept_tokens > 1 or not real_tokens:
        _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("layout", "kernel_index_rows_are_root_plus_range_then_minus_one", "kernel_real_mode_leaves_other_predict_slots_unchanged")
def kernel_roots_read_as_contiguous(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                    target_tokens, width, num_accept_tokens, real_tokens):
    """Reads the roots at storage offsets i * width, as if accept_indices were contiguous."""
    roots = torch.as_strided(accept_indices, (accept_indices.shape[0], 1), (width, 1))
    out = _index(roots, width, num_accept_tokens)
    _counts(num_correct_drafts, num_accept_tokens)
    _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("device", "kernel_index_is_an_int32_tensor_of_shape_bs_by_width", needs_cuda=True)
def kernel_index_on_the_cpu(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                            target_tokens, width, num_accept_tokens, real_tokens):
    """Returns the index built on the CPU whatever device the inputs are on."""
    out = _index(accept_indices, width, num_accept_tokens)
    _counts(num_correct_drafts, num_accept_tokens)
    _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out.cpu()


@register("device", "kernel_index_rows_are_root_plus_range_then_minus_one", "kernel_cuda_matches_cpu_byte_for_byte",
          needs_cuda=True)
def kernel_cuda_path_leaves_zeros_past_the_length(*, accept_indices, predict_tokens, num_correct_drafts,
                                                  candidate_tokens, target_tokens, width, num_accept_tokens,
                                                  real_tokens):
    """Its CUDA path writes the accepted slots into a zeroed index, so the padding there is 0, not -1."""
    out = _index(accept_indices, width, num_accept_tokens)
    if out.is_cuda:  # as a kernel that writes only the accepted slots of a zeroed buffer would
        out = torch.where(out == -1, 0, out).to(torch.int32)
    _counts(num_correct_drafts, num_accept_tokens)
    _tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("inputs", "kernel_inputs_are_never_written")
def kernel_zeroes_the_rejected_drafts(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                      target_tokens, width, num_accept_tokens, real_tokens):
    """Zeroes the rejected drafts in candidate_tokens after writing the accepted ones (an input written)."""
    out = kernel_eager(accept_indices=accept_indices, predict_tokens=predict_tokens,
                       num_correct_drafts=num_correct_drafts, candidate_tokens=candidate_tokens,
                       target_tokens=target_tokens, width=width, num_accept_tokens=num_accept_tokens,
                       real_tokens=real_tokens)
    candidate_tokens[:, num_accept_tokens:] = 0
    return out
