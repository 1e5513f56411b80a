"""Implementations written the way serving ports are (CONTRACT.md §11): state kept from one
call to the next, blocks of rows, a grad mode of their own. The mutants are what shipped in
engines (a cached length, static output buffers, a captured counter, a kernel grid that
drops its tail); the correct ones keep state too, legitimately, and must be accepted.

State that a CUDA-graph port keys by its input buffer (``data_ptr``) is found by the serving
loop's static buffers and rarely by single calls, whose tensors are new every time. Every
buffer kept across calls is made under ``torch.inference_mode(False)``: a normal tensor,
which any later call may update whatever its grad mode (CONTRACT.md §11.1).
"""

import sys
import weakref

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base, dflash, functional, kernel
from simacc.zoo.base import register

POOL = 4  # output buffers a pool hands out in turn
DEEP_POOL = 32  # ... and a pool as deep as a server's steps in flight might be
GRAPH_ROWS = 8192  # rows of a pool's buffers (a server's --cuda-graph-max-bs), past every batch: a failure at any start
WRAP = 4  # calls a captured length lasts
ROWS = 512  # rows a block of the blocked kernel covers


def _kept(shape, dtype, device):
    """A buffer kept across calls: a normal tensor whatever the caller's grad mode."""
    with torch.inference_mode(False):
        return torch.empty(shape, dtype=dtype, device=device)


# -- mutants --------------------------------------------------------------------------------

_POOLS = {}


@register("serving", "serving_loop_conforms_at_every_step", "result_is_fresh_across_calls")
def index_from_a_pool_of_buffers(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Returns views of four static output buffers in turn, so the fifth call overwrites the first's result."""
    return _from_pool(POOL, accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("serving", "result_is_fresh_across_calls")
def index_from_a_deep_pool_of_buffers(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                      bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                      simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Returns views of 32 static output buffers in turn, so the 33rd call overwrites the first's result."""
    return _from_pool(DEEP_POOL, accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


def _from_pool(size, accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
               simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """The call, its index written into the next of ``size`` static output buffers."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    pool = _POOLS.get((size, width, accept_index.device))
    if pool is None:  # sized for the largest batch a graph is captured for, as a graph's outputs are
        pool = _POOLS[(size, width, accept_index.device)] = [
            _kept((GRAPH_ROWS, width), torch.int32, accept_index.device) for _ in range(size)]
    pool.append(pool.pop(0))
    out = pool[-1][:bs]
    out.copy_(base.index(accept_index[:, 0], length, width))
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


_POOLED = {}  # (shape, device): output buffers of that shape, recycled once nobody else references them


def _pooled(shape, device):
    """A buffer of ``shape`` nobody but the pool references (``sys.getrefcount``), or a new one
    made in the caller's grad mode (an inference tensor under inference mode)."""
    buffers = _POOLED.setdefault((shape, device), [])
    for buffer in buffers:
        if sys.getrefcount(buffer) == 3:  # the list, this loop's name and getrefcount's argument: no caller
            return buffer
    buffers.append(torch.empty(shape, dtype=torch.int32, device=device))
    return buffers[-1]


@register("serving", "result_is_fresh_across_calls", "serving_loop_conforms_at_every_step")
def index_from_a_refcounted_pool(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Returns a pooled buffer of its shape, recycled once only the pool references it: a caller keeping a view or the data of a result sees it overwritten."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = _pooled((bs, width), accept_index.device)
    out.copy_(base.index(accept_index[:, 0], length, width))
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


_INDEXES = {}


@register("serving", "serving_loop_conforms_at_every_step")
def index_cached_per_buffer_with_its_roots(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                           bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                           simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Caches the index per input buffer, shape and L, roots included, so a rewritten buffer gets stale roots."""
    return _from_cache(torch.Tensor.data_ptr, accept_index, predict, num_correct_drafts, candidates, target_predict,
                       spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("serving", "serving_loop_conforms_at_every_step")
def index_cached_per_input_object(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                  simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Caches the index per input tensor object (``id``), shape and L, so a view refilled in place gets stale roots."""
    return _from_cache(id, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                       simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


_LAST = {}  # device: the index the last call returned


@register("serving", "serving_loop_conforms_at_every_step")
def builds_its_index_in_the_last_one(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                     bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                     simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Builds each index in the one it returned last (same shape), copies it out and puts the old values back: a reader of the last result sees the new one meanwhile."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    last = _LAST.get(accept_index.device)
    if last is not None and last.shape == (bs, width):
        saved = last.clone()
        last.copy_(base.index(accept_index[:, 0], length, width))
        out = last.clone()
        last.copy_(saved)
    else:
        with torch.inference_mode(False):
            out = base.index(accept_index[:, 0], length, width)
    _LAST[accept_index.device] = out
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


def _from_cache(key_of, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """The call, its index cached per ``key_of(accept_index)``, shape and L."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    key = (key_of(accept_index), tuple(accept_index.shape), length, accept_index.device)
    if key not in _INDEXES:
        _INDEXES[key] = base.index(accept_index[:, 0], length, width).clone()
    out = _INDEXES[key].clone()
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


_LENGTHS = {}


@register("serving", "serving_loop_conforms_at_every_step")
def length_cached_per_setting(accept_index, predict, num_correct_drafts, candidates, target_predict,
                              bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                              simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Samples L once per (length, method, width) and reuses it for the whole run, as DSpark's rounded length was."""
    width = spec_steps + 1
    key = (simulate_acc_len, simulate_acc_method, width)
    if key not in _LENGTHS:
        _LENGTHS[key] = base.sample(simulate_acc_len, simulate_acc_method, width)
    base.check_length(simulate_acc_len)
    return base.simulate(_LENGTHS[key], accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


_FILLED = {}  # id(predict) -> (the buffer, weakly; its version counter after the fill)


@register("serving", "serving_loop_conforms_at_every_step")
def fill_skipped_while_the_version_stands(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                          bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                          simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Fixed mode skips refilling a predict whose version counter has not moved, as a graph's replay leaves it."""

    def unless_the_version_stands(predict, out, length):
        seen = _FILLED.get(id(predict))
        if predict.is_inference() or seen is None or seen[0]() is not predict or seen[1] != predict._version:
            predict.fill_(base.FIXED)
            if not predict.is_inference():
                _FILLED[id(predict)] = (weakref.ref(predict), predict._version)

    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode, unless_the_version_stands)


_CAPTURED = {}


@register("serving", "serving_loop_conforms_at_every_step")
def length_redrawn_when_a_counter_wraps(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                        bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                        simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Per input buffer (a captured graph), draws L only when its call counter wraps every 4 calls, else replays it."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    key = (accept_index.data_ptr(), width)
    calls, length = _CAPTURED.get(key, (0, None))
    if calls % WRAP == 0 or not bs:  # graphs are captured for non-empty batches only
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    _CAPTURED[key] = (calls + 1, length)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("serving", "kernel_serving_loop_conforms_at_every_step",
          "kernel_result_aliases_no_input_and_no_earlier_result")
def kernel_index_from_a_pool_of_buffers(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                        target_tokens, width, num_accept_tokens, real_tokens):
    """The kernel op writing its index into four static output buffers in turn (a CUDA-graph port's outputs)."""
    bs = accept_indices.shape[0]
    pool = _POOLS.get(("kernel", width, accept_indices.device))
    if pool is None:
        pool = _POOLS[("kernel", width, accept_indices.device)] = [
            _kept((GRAPH_ROWS, width), torch.int32, accept_indices.device) for _ in range(POOL)]
    pool.append(pool.pop(0))
    out = pool[-1][:bs]
    out.copy_(kernel._index(accept_indices, width, num_accept_tokens))
    kernel._counts(num_correct_drafts, num_accept_tokens)
    kernel._tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens, real_tokens)
    return out


@register("serving", "dflash_serving_loop_conforms_at_every_step")
def dflash_length_cached_per_setting(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                     simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                     next_token_logits=None, fixed_token_id=base.FIXED):
    """Samples L once per (length, method, block) and reuses it for the whole run, as DSpark did."""
    target = dflash._target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    key = ("dflash", simulate_acc_len, simulate_acc_method, out_tokens.shape[1])
    if key not in _LENGTHS:
        _LENGTHS[key] = dflash._sample(simulate_acc_len, simulate_acc_method, out_tokens)
    dflash._counts(accept_len, commit_lens, _LENGTHS[key])
    dflash._write(out_tokens, bonus, candidates, target, _LENGTHS[key], simulate_acc_token_mode, fixed_token_id)


_FUNCTIONAL_INDEXES = {}


@register("serving", "functional_serving_loop_conforms_at_every_step", requires=functional.JAX, level="semantic")
def functional_index_cached_per_shape(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                      fixed_token_id, rng):
    """Caches its index per batch shape and L (a jitted port's trace), so a changed valid_mask keeps the old rows."""
    width = spec_steps + 1
    functional._check(rng, candidates, width, simulate_acc_token_mode)
    length = functional._length(rng, simulate_acc_len, simulate_acc_method, width)
    _, new, lens = functional._simulate(accept_index, predict, candidates, target_predict, valid_mask, length,
                                        fixed_token_id, real=simulate_acc_token_mode == base.REAL)
    key = (tuple(accept_index.shape), length)
    if key not in _FUNCTIONAL_INDEXES:
        _FUNCTIONAL_INDEXES[key] = functional._index(accept_index, valid_mask, length)
    return _FUNCTIONAL_INDEXES[key], new, lens


@register("grad mode", "index_rows_are_root_plus_range_then_minus_one", "serving_loop_conforms_at_every_step")
def works_only_outside_inference_mode(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                      bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                      simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Writes its outputs under torch.inference_mode(False), which refuses a caller's inference tensors."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    with torch.inference_mode(False):  # meant to give the caller a result it may update anywhere
        out = base.index(accept_index[:, 0], length, width)
        return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict,
                           simulate_acc_token_mode)


@register("batch size", "kernel_index_rows_are_root_plus_range_then_minus_one",
          "kernel_num_correct_drafts_is_length_minus_one", "kernel_a_servers_batch_is_simulated_like_a_small_one")
def kernel_grid_drops_the_tail_block(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
                                     target_tokens, width, num_accept_tokens, real_tokens):
    """Launches bs // 512 row blocks (at least one): a partial last block's rows past 512 are never written."""
    bs = accept_indices.shape[0]
    covered = min(bs, max(1, bs // ROWS) * ROWS)
    out = torch.full((bs, width), -1, dtype=torch.int32, device=accept_indices.device)
    out[:covered] = kernel._index(accept_indices[:covered], width, num_accept_tokens)
    kernel._counts(num_correct_drafts[:covered], num_accept_tokens)
    kernel._tokens(predict_tokens, out[:covered], candidate_tokens[:covered], target_tokens[:covered],
                   num_accept_tokens, real_tokens)
    return out


# -- correct alternatives ---------------------------------------------------------------------

_TEMPLATES = {}


@register("correct")
def index_from_cached_templates(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: caches the column offsets and mask per (width, L), without roots, and builds a new index each call."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    key = (width, length, accept_index.device)
    if key not in _TEMPLATES:
        with torch.inference_mode(False):
            cols = torch.arange(width, dtype=torch.int32, device=accept_index.device)
            _TEMPLATES[key] = (cols, cols < length)
    cols, taken = _TEMPLATES[key]
    out = torch.where(taken, accept_index[:, :1].to(torch.int32) + cols, -1).to(torch.int32)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


_WORKSPACES = {}


@register("correct")
def index_copied_out_of_a_refcounted_pool(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                          bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                          simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: builds the index in a pooled buffer recycled by reference count, and returns a copy of it."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = _pooled((bs, width), accept_index.device)
    out.copy_(base.index(accept_index[:, 0], length, width))
    return base.finish(out.clone(), length, predict, num_correct_drafts, candidates, target_predict,
                       simulate_acc_token_mode)


@register("correct")
def tokens_staged_in_a_workspace(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: stages the accepted tokens in a preallocated workspace that it grows, never returns."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != base.REAL:
        predict.fill_(base.FIXED)
        return out
    needed = bs * length
    space = _WORKSPACES.get((predict.dtype, predict.device))
    if space is None or space.shape[0] < needed:
        space = _kept((max(needed, 1024),), predict.dtype, predict.device)
        _WORKSPACES[(predict.dtype, predict.device)] = space
    staged = space[:needed].view(bs, length)
    staged[:, : length - 1] = candidates[:, 1:length]
    staged[:, length - 1] = target_predict[:, length - 1]
    predict[out[:, :length].long().reshape(-1)] = staged.reshape(-1)
    return out


@register("correct")
@torch.inference_mode()
def decorated_with_inference_mode(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                  simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: the contract's steps under @torch.inference_mode(), as vLLM's model runner runs."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)
