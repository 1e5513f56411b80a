"""Correct implementations written independently of the reference: the suite must accept them.

``per_row_loop`` spells the contract out request by request and slot by slot, with its own
copy of the sampler in plain Python arithmetic (the same generator calls, so the same
draws); it is also the naive baseline that ``simacc bench`` times the reference against.
``scatter_based`` is vectorised differently from the reference: a masked fill for the
index, ``roll`` to line the drafts up with their slots, and ``scatter_`` to write them.
``plain_eager`` is upstream's sequence of torch ops with no argument checks at all: the
latency baseline the reference is measured against.
"""

import math

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.contract.sampling import sample_simulated_acc_len
from simacc.zoo.base import FIXED, REAL, register

_METHODS = ("multinomial", "match-expected")


def _draw_length(x, method, max_len):
    """The sampler of CONTRACT.md §3 written out again; the same torch calls on the CPU generator."""
    if method == "multinomial":
        draw = torch.normal(x, 1.0, (1,)).item()
        return int(round(min(max(draw, 1), max_len)))
    if method != "match-expected":
        raise ValueError(f"unknown simulate_acc_method {method!r}; expected one of {_METHODS}")
    x = max(1.0, min(max_len, x))
    lo = math.floor(x)
    if lo >= max_len:
        return lo
    frac = float(x - lo)
    return lo + int(torch.multinomial(torch.tensor([1.0 - frac, frac]), 1).item())


@register("correct")
def per_row_loop(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                 simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: the contract as plain loops over requests and accepted slots."""
    if not simulate_acc_len > 0:
        raise ValueError(f"simulate_acc_len must be > 0, got {simulate_acc_len}")
    width = spec_steps + 1
    length = _draw_length(simulate_acc_len, simulate_acc_method, width)
    real = simulate_acc_token_mode == REAL
    out = torch.full((bs, width), -1, dtype=torch.int32, device=accept_index.device)
    for i in range(bs):
        root = int(accept_index[i, 0])
        num_correct_drafts[i] = length - 1
        for j in range(length):
            out[i, j] = root + j
            if real:
                token = candidates[i, j + 1] if j < length - 1 else target_predict[i, j]
                predict[root + j] = int(token)
    if not real:
        predict.fill_(FIXED)
    return out


@register("correct")
def legacy_per_row_loop(accept_index, predict, accept_length, bs, spec_steps, simulate_acc_len,
                        simulate_acc_method=DEFAULT_METHOD):
    """Correct: the legacy signature (third parameter accept_length) over the per-row loop."""
    return per_row_loop(accept_index, predict, accept_length, None, None, bs, spec_steps,
                        simulate_acc_len, simulate_acc_method, "fixed")


@register("correct")
def plain_eager(accept_index, predict, num_correct_drafts, candidates, target_predict,
                bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: upstream's op sequence, unchecked: -1 buffer, ranged fill, two indexed writes."""
    assert simulate_acc_len > 0
    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, spec_steps + 1)
    out = torch.full((bs, spec_steps + 1), -1, dtype=torch.int32, device=accept_index.device)
    out[:, :length] = accept_index[:, :1] + torch.arange(length, dtype=torch.int32, device=accept_index.device)
    num_correct_drafts.fill_(length - 1)
    if simulate_acc_token_mode != REAL:
        predict.fill_(FIXED)
        return out
    if length > 1:
        predict[out[:, : length - 1].long()] = candidates[:, 1:length].to(predict.dtype)
    predict[out[:, length - 1].long()] = target_predict[:, length - 1].to(predict.dtype)
    return out


@register("correct")
def scatter_based(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                  simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: vectorised with a masked fill, roll and scatter_ instead of where and indexing."""
    if not simulate_acc_len > 0:
        raise ValueError(f"simulate_acc_len must be > 0, got {simulate_acc_len}")
    width = spec_steps + 1
    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    offsets = torch.arange(width, dtype=torch.int32, device=accept_index.device).expand(bs, width)
    out = (accept_index.narrow(1, 0, 1).to(torch.int32) + offsets).masked_fill(offsets >= length, -1)
    num_correct_drafts.copy_(torch.full_like(num_correct_drafts, length - 1))
    if simulate_acc_token_mode != REAL:
        predict.copy_(torch.full_like(predict, FIXED))
        return out
    shifted = candidates.roll(-1, dims=1)[:, :length].to(torch.int64)  # column j holds draft j+1
    tokens = torch.where(offsets[:, :length] < length - 1, shifted, target_predict[:, length - 1 : length])
    predict.scatter_(0, out[:, :length].reshape(-1).long(), tokens.reshape(-1).to(predict.dtype))
    return out


@register("correct")
def dflash_per_row_loop(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                        simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, next_token_logits=None,
                        fixed_token_id=FIXED):
    """Correct: the DFLASH contract as plain loops over requests and block columns."""
    bs, block = out_tokens.shape
    real = simulate_acc_token_mode == REAL
    if real and target_predict is None:
        target_predict = next_token_logits.argmax(dim=-1).reshape(bs, block)
    length = _draw_length(simulate_acc_len, simulate_acc_method, block)
    for i in range(bs):
        accept_len[i] = length - 1
        commit_lens[i] = length
        bonus[i] = int(target_predict[i, length - 1]) if real else fixed_token_id
        for j in range(block):
            if not real:
                out_tokens[i, j] = fixed_token_id
            elif j < length - 1:
                out_tokens[i, j] = int(candidates[i, j + 1])
            else:
                out_tokens[i, j] = int(bonus[i]) if j == length - 1 else 0
    return None
