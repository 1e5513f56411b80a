"""Mutants of ``generate_simulated_accept_index`` (the EAGLE contract): one mistake each.

Each function has the contract's signature; its docstring's first line names its bug and
the ``register`` decorator says which kind of bug it is and which properties should reject
it. Everything else is the correct step from :mod:`simacc.zoo.base`.
"""

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.contract.sampling import sample_simulated_acc_len
from simacc.zoo import base
from simacc.zoo.base import REAL, register

# -- index construction -------------------------------------------------------------------


@register("index", "index_rows_are_root_plus_range_then_minus_one")
def roots_at_i_times_width(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Assumes the roots sit at i*W (a chain's layout) instead of reading accept_index[:, 0]."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    roots = torch.arange(bs, device=accept_index.device) * width
    out = base.index(roots, length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("index", "index_rows_are_root_plus_range_then_minus_one")
def roots_at_i_times_d(accept_index, predict, num_correct_drafts, candidates, target_predict,
                       bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Assumes the roots sit at i*D with D = len(predict) // bs (sglang's layout)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    roots = torch.arange(bs, device=accept_index.device) * (predict.shape[0] // max(bs, 1))
    out = base.index(roots, length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("index", "index_rows_are_root_plus_range_then_minus_one")
def index_one_slot_too_long(accept_index, predict, num_correct_drafts, candidates, target_predict,
                            bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Off by one: the index holds root + 0..L (L+1 slots) when L < W."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    cols = torch.arange(width, dtype=torch.int32, device=accept_index.device)
    out = torch.where(cols <= length, accept_index[:, :1].to(torch.int32) + cols, -1).to(torch.int32)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("index", "index_rows_are_root_plus_range_then_minus_one")
def pads_with_zero(accept_index, predict, num_correct_drafts, candidates, target_predict,
                   bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Pads the rejected columns with 0 (a zeros() buffer) instead of -1."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = torch.zeros((bs, width), dtype=torch.int32, device=accept_index.device)
    out[:, :length] = accept_index[:, :1] + torch.arange(length, dtype=torch.int32, device=accept_index.device)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("batch size", "a_servers_batch_is_simulated_like_a_small_one")
def roots_kept_in_16_bits(accept_index, predict, num_correct_drafts, candidates, target_predict,
                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Keeps the roots in int16 (a slot of a small batch fits): past 2**15 slots they wrap around."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0].to(torch.int16), length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("batch size", "a_servers_batch_is_simulated_like_a_small_one")
def rows_past_4096_left_unwritten(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Simulates at most 4096 rows (one program's block): a bigger batch's last rows get -1, no count, no tokens."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    rows = min(bs, 4096)
    out = torch.full((bs, width), -1, dtype=torch.int32, device=accept_index.device)
    out[:rows] = base.index(accept_index[:rows, 0], length, width)
    real = simulate_acc_token_mode == REAL
    base.finish(out[:rows], length, predict, num_correct_drafts[:rows], candidates[:rows] if real else candidates,
                target_predict[:rows] if real else target_predict, simulate_acc_token_mode)
    return out


_WORKSPACES = {}


@register("batch size", "a_servers_batch_is_simulated_like_a_small_one")
def tail_block_at_a_power_of_two(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Runs the rows in blocks of 512 and launches the last, partial one with the largest power of two it holds, unmasked: past 512 rows a tail of 3, 5, 6, 7, ... rows loses its last rows (-1, no count, no tokens)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    tail = bs % 512 if bs > 512 else 0
    rows = bs - tail + (1 << (tail.bit_length() - 1) if tail else 0)
    out = torch.full((bs, width), -1, dtype=torch.int32, device=accept_index.device)
    out[:rows] = base.index(accept_index[:rows, 0], length, width)
    real = simulate_acc_token_mode == REAL
    base.finish(out[:rows], length, predict, num_correct_drafts[:rows], candidates[:rows] if real else candidates,
                target_predict[:rows] if real else target_predict, simulate_acc_token_mode)
    return out


@register("batch size", "a_servers_batch_is_simulated_like_a_small_one")
def index_in_a_workspace_past_2048_rows(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                        bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Past 2048 rows returns a view of one growing workspace: the next big batch overwrites a held index."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    if bs > 2048:
        space = _WORKSPACES.get(accept_index.device)
        if space is None or space.numel() < out.numel():
            space = _WORKSPACES[accept_index.device] = torch.empty(out.numel(), dtype=torch.int32,
                                                                   device=accept_index.device)
        out = space[: out.numel()].view(bs, width).copy_(out)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


CHUNK = 8192  # rows one launch of a chunked index builder takes


def _in_chunks(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
               simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, first_chunks_roots):
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = torch.empty((bs, width), dtype=torch.int32, device=accept_index.device)
    for start in range(0, bs, CHUNK):
        stop = min(start + CHUNK, bs)
        rows = slice(0, stop - start) if first_chunks_roots else slice(start, stop)
        out[start:stop] = base.index(accept_index[rows, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("batch size", "a_servers_batch_is_simulated_like_a_small_one")
def index_in_chunks_from_the_first_chunks_roots(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                                bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                                simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Builds the index in chunks of 8192 rows, every chunk from the first chunk's roots: past 8192 requests the later rows point at the first rows' slots."""
    return _in_chunks(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, True)


@register("correct")
def index_in_chunks(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                    simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: builds the index in chunks of 8192 rows, each chunk from its own rows' roots."""
    return _in_chunks(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, False)


@register("dtype", "index_is_a_fresh_int32_tensor_of_shape_bs_by_width")
def index_in_int64(accept_index, predict, num_correct_drafts, candidates, target_predict,
                   bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Returns the index as int64 (torch.arange's default dtype) instead of int32."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    cols = torch.arange(width, device=accept_index.device)
    out = torch.where(cols < length, accept_index[:, :1] + cols, -1)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("device", "index_is_a_fresh_int32_tensor_of_shape_bs_by_width", needs_cuda=True)
def index_on_cpu_always(accept_index, predict, num_correct_drafts, candidates, target_predict,
                        bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Builds the index on the CPU whatever device accept_index is on."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0].cpu(), length, width)
    base.finish(out.to(accept_index.device), length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)
    return out


# -- layout and stride assumptions --------------------------------------------------------


@register("layout", "index_rows_are_root_plus_range_then_minus_one")
def roots_read_through_raw_strides(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                   bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Reads the roots as if accept_index were row-major contiguous (ignores its strides)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    roots = torch.as_strided(accept_index, (bs,), (width,))
    out = base.index(roots, length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("layout", "index_rows_are_root_plus_range_then_minus_one")
def roots_dense_when_columns_are(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Copies accept_index only when its column stride is not 1, then reads rows W apart: a static buffer's slice is read wrong."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    index = accept_index if accept_index.stride(-1) == 1 else accept_index.contiguous()
    roots = torch.as_strided(index, (bs,), (width,), index.storage_offset())
    out = base.index(roots, length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("layout", "index_rows_are_root_plus_range_then_minus_one", "num_correct_drafts_is_length_minus_one")
def roots_through_view(accept_index, predict, num_correct_drafts, candidates, target_predict,
                       bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Takes the roots with accept_index.view(-1)[::W], which raises on a non-contiguous index."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index.view(-1)[::width], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("layout", "fixed_mode_fills_predict_with_the_fixed_id", "real_mode_writes_drafts_then_bonus_at_accepted_slots")
def writes_a_contiguous_copy(accept_index, predict, num_correct_drafts, candidates, target_predict,
                             bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Writes predict.contiguous(), a copy when predict is strided, so the writes are lost."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict.contiguous(), num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


# -- accepted-token writes and the bonus ----------------------------------------------------


@register("tokens", "real_mode_writes_drafts_then_bonus_at_accepted_slots", "real_mode_equals_greedy_verification")
def drafts_shifted_by_one(accept_index, predict, num_correct_drafts, candidates, target_predict,
                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Writes candidates[:, 0:L-1] (the root token first) instead of the drafts candidates[:, 1:L]."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
        return out
    tokens = torch.cat([candidates[:, : length - 1], target_predict[:, length - 1 : length]], 1)
    predict[out[:, :length].long().reshape(-1)] = tokens.reshape(-1).to(predict.dtype)
    return out


@register("tokens", "real_mode_writes_drafts_then_bonus_at_accepted_slots", "real_mode_leaves_other_predict_slots_unchanged")
def tokens_at_i_times_width(accept_index, predict, num_correct_drafts, candidates, target_predict,
                            bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Writes the tokens at slots i*W + j instead of the index's slots (right index, wrong slots)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    slots = base.index(torch.arange(bs, device=accept_index.device) * width, length, width)
    base.finish(slots, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)
    return out


@register("tokens", "real_mode_leaves_other_predict_slots_unchanged")
def real_mode_fills_fixed_first(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Real mode still fills predict with 100 before writing the accepted slots."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    predict.fill_(base.FIXED)
    if simulate_acc_token_mode == REAL:
        base.write_tokens(predict, out, candidates, target_predict, length)
    return out


@register("bonus", "real_mode_writes_drafts_then_bonus_at_accepted_slots")
def no_bonus_at_length_one(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Guards the real-mode write with `if L > 1`, so the bonus is never written at L == 1."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
    elif length > 1:
        base.write_tokens(predict, out, candidates, target_predict, length)
    return out


@register("bonus", "real_mode_writes_drafts_then_bonus_at_accepted_slots", "real_mode_equals_greedy_verification")
def bonus_from_column_l(accept_index, predict, num_correct_drafts, candidates, target_predict,
                        bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Takes the bonus from target_predict[:, L] (one column late; out of range at L == D)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
        return out
    tokens = torch.cat([candidates[:, 1:length], target_predict[:, length : length + 1]], 1)
    predict[out[:, :length].long().reshape(-1)] = tokens.reshape(-1).to(predict.dtype)
    return out


@register("bonus", "real_mode_writes_drafts_then_bonus_at_accepted_slots", "real_mode_equals_greedy_verification")
def bonus_from_the_drafts(accept_index, predict, num_correct_drafts, candidates, target_predict,
                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Writes the draft candidates[:, L-1] at the last accepted slot instead of the target's bonus."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, candidates, simulate_acc_token_mode)


@register("dtype", "real_mode_writes_drafts_then_bonus_at_accepted_slots")
def tokens_written_as_int64(accept_index, predict, num_correct_drafts, candidates, target_predict,
                            bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Writes int64 tokens into the int32 predict without a cast (index_put_ raises)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
        return out
    tokens = torch.cat([candidates[:, 1:length].long(), target_predict[:, length - 1 : length]], 1)
    predict[out[:, :length].long().reshape(-1)] = tokens.reshape(-1)
    return out


# -- the fixed id and num_correct_drafts ----------------------------------------------------


@register("fixed id", "fixed_mode_fills_predict_with_the_fixed_id", "fixed_mode_is_byte_identical_to_legacy")
def fixed_id_101(accept_index, predict, num_correct_drafts, candidates, target_predict,
                 bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Fills predict with 101 in fixed mode instead of 100 (one more than the fixed id)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode, lambda predict, out, length: predict.fill_(base.FIXED + 1))


@register("fixed id", "fixed_mode_fills_predict_with_the_fixed_id", "fixed_mode_is_byte_identical_to_legacy")
def fixed_id_only_at_accepted_slots(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                    bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Fixed mode writes 100 only at the accepted slots instead of all of predict."""

    def at_accepted_slots(predict, out, length):
        predict[out[:, :length].long().reshape(-1)] = base.FIXED

    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode, at_accepted_slots)


@register("fixed id", "fixed_mode_fills_predict_with_the_fixed_id", "fixed_mode_is_byte_identical_to_legacy")
def fixed_mode_reads_candidates(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Gathers the draft tokens before branching on the mode, so fixed mode fails on candidates=None."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    drafts = candidates[:, 1:length]
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
        return out
    tokens = torch.cat([drafts, target_predict[:, length - 1 : length]], 1)
    predict[out[:, :length].long().reshape(-1)] = tokens.reshape(-1).to(predict.dtype)
    return out


@register("fixed id", "fixed_mode_fills_predict_with_the_fixed_id")
def fixed_mode_leaves_minus_one(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Fixed mode takes a -1 in predict for padding and leaves it, instead of writing every slot."""

    def around_the_padding(predict, out, length):
        predict.masked_fill_(predict != -1, base.FIXED)

    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode, around_the_padding)


@register("num_correct_drafts", "num_correct_drafts_is_length_minus_one")
def counts_include_the_bonus(accept_index, predict, num_correct_drafts, candidates, target_predict,
                             bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Sets num_correct_drafts to L (counting the bonus) instead of L - 1."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)
    num_correct_drafts.fill_(length)
    return out


@register("num_correct_drafts", "num_correct_drafts_is_length_minus_one")
def counts_only_the_first_row(accept_index, predict, num_correct_drafts, candidates, target_predict,
                              bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Writes num_correct_drafts[0] only, leaving the other rows stale."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    scratch = num_correct_drafts.clone()
    base.finish(out, length, predict, scratch, candidates, target_predict, simulate_acc_token_mode)
    num_correct_drafts[:1] = scratch[:1]
    return out


# -- writing or aliasing the inputs ---------------------------------------------------------


@register("inputs", "inputs_are_never_written")
def writes_accept_index_prefix(accept_index, predict, num_correct_drafts, candidates, target_predict,
                               bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Also writes the accepted range into accept_index[:, :L], as greedy verification does."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    accept_index[:, :length] = out[:, :length]
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("inputs", "inputs_are_never_written", "result_aliases_no_input")
def index_built_in_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Builds the index in accept_index.to(torch.int32), which is accept_index itself."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = accept_index.to(torch.int32)
    out.copy_(base.index(accept_index[:, 0], length, width))
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


_BUFFERS = {}


@register("inputs", "result_is_fresh_across_calls")
def reuses_one_output_buffer(accept_index, predict, num_correct_drafts, candidates, target_predict,
                             bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Keeps one index buffer per shape and device and returns it from every call."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    key = (bs, width, accept_index.device)
    out = _BUFFERS.setdefault(key, torch.empty((bs, width), dtype=torch.int32, device=accept_index.device))
    out.copy_(base.index(accept_index[:, 0], length, width))
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("inputs", "result_is_fresh_across_calls")
def reuses_an_output_buffer_under_no_grad(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                          bs, spec_steps, simulate_acc_len, simulate_acc_method,
                                          simulate_acc_token_mode):
    """Under no_grad (sglang's default mode) and past 64 rows, keeps one index buffer per shape and returns it from every call; under inference mode every index is new."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    if bs > 64 and not torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
        key = (bs, width, accept_index.device, "no_grad")
        out = _BUFFERS.setdefault(key, torch.empty((bs, width), dtype=torch.int32, device=accept_index.device))
        out.copy_(base.index(accept_index[:, 0], length, width))
    else:
        out = base.index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("inputs", "result_aliases_no_input")
def empty_batch_returns_the_input(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Shortcuts bs == 0 by returning accept_index itself (right shape, but an alias)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    if bs == 0:
        return accept_index
    out = base.index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("inputs", "inputs_are_never_written")
def bonus_written_into_candidates(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Assembles drafts + bonus in a slice of candidates, overwriting candidates[:, L]."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
        return out
    tokens = candidates[:, 1 : length + 1]
    tokens[:, length - 1] = target_predict[:, length - 1]
    predict[out[:, :length].long().reshape(-1)] = tokens.reshape(-1).to(predict.dtype)
    return out


# -- argument checks ------------------------------------------------------------------------


@register("checks", "rejects_nonpositive_or_nan_length_before_writing")
def no_length_check(accept_index, predict, num_correct_drafts, candidates, target_predict,
                    bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Drops the `simulate_acc_len > 0` assertion, so 0, negatives and NaN go through."""
    width = spec_steps + 1
    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("checks", "rejects_unknown_method_before_writing")
def writes_before_sampling(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Fills predict in fixed mode before sampling, so an unknown method leaves it half-written."""
    width = spec_steps + 1
    if not simulate_acc_len > 0:
        raise ValueError(f"simulate_acc_len must be > 0, got {simulate_acc_len}")
    if simulate_acc_token_mode != REAL:
        predict.fill_(base.FIXED)
    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


@register("checks", "rejects_unknown_method_before_writing")
def unknown_method_raises_key_error(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                    bs, spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                    simulate_acc_token_mode="fixed"):
    """Looks the method up in a dict, so an unknown method is a KeyError, not a ValueError naming it."""
    base.check_length(simulate_acc_len)
    known = {"match-expected": "match-expected", "multinomial": "multinomial"}
    width = spec_steps + 1
    length = sample_simulated_acc_len(simulate_acc_len, known[simulate_acc_method], width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("checks", "rejects_unknown_method_before_writing")
def matches_the_method_by_prefix(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Matches the method by its prefix, to allow versioned names: "multinomial-v2" is taken for multinomial, not refused."""
    method = next((m for m in ("match-expected", "multinomial") if simulate_acc_method.startswith(m)),
                  simulate_acc_method)
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("checks", "rejects_unknown_method_before_writing")
def strips_the_method(accept_index, predict, num_correct_drafts, candidates, target_predict,
                      bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Strips whitespace from the method, as from a value read from a config file: "multinomial\\n" is taken for multinomial, not refused."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method.strip(), width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("checks", "rejects_unknown_method_before_writing")
def drops_the_methods_namespace(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Reads the method after its last ":" or "/", to allow namespaced names: "sglang:multinomial" is taken for multinomial, not refused."""
    method = simulate_acc_method.replace("/", ":").rpartition(":")[2]
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


# -- defaults -------------------------------------------------------------------------------


@register("defaults", "omitted_arguments_take_their_documented_defaults")
def default_method_is_multinomial(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method="multinomial",
                                  simulate_acc_token_mode="fixed"):
    """Defaults the method to multinomial, which sglang's caller (it never passes one) then gets."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("defaults", "omitted_arguments_take_their_documented_defaults")
def default_mode_is_real_draft_token(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                     bs, spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                     simulate_acc_token_mode=REAL):
    """Defaults the token mode to real-draft-token, so callers older than the modes lose the fixed id."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("layout", "inputs_are_never_written")
def fills_the_counts_span(accept_index, predict, num_correct_drafts, candidates, target_predict,
                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Fills num_correct_drafts over the memory its view spans, in one launch: a strided view's gaps get written too."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                        simulate_acc_token_mode)
    base.span(num_correct_drafts).fill_(length - 1)
    return out
