"""Mutants of ``apply_dflash_simulated_acceptance`` (the DFLASH block layout): one mistake each.

The correct steps are :func:`_target` (a missing ``target_predict`` is the logits' argmax,
before the draw), :func:`_sample` (no ``> 0`` check in this contract), :func:`_counts` and
:func:`_write_real`; each mutant writes one of them wrong.
"""

import math

import torch

from simacc.contract.sampling import sample_simulated_acc_len
from simacc.zoo.base import FIXED, REAL, register


def _target(target_predict, next_token_logits, out_tokens, mode):
    if mode == REAL and target_predict is None:
        return torch.argmax(next_token_logits, dim=-1).reshape(out_tokens.shape)
    return target_predict


def _sample(x, method, out_tokens):
    return sample_simulated_acc_len(x, method, out_tokens.shape[1])


def _counts(accept_len, commit_lens, length):
    accept_len.fill_(length - 1)
    commit_lens.fill_(length)


def _write_real(out_tokens, bonus, candidates, target_predict, length):
    out_tokens.zero_()
    out_tokens[:, : length - 1] = candidates[:, 1:length]
    bonus.copy_(target_predict[:, length - 1])
    out_tokens[:, length - 1] = bonus


def _write(out_tokens, bonus, candidates, target_predict, length, mode, fixed_token_id):
    if mode == REAL:
        _write_real(out_tokens, bonus, candidates, target_predict, length)
    else:
        bonus.fill_(fixed_token_id)
        out_tokens.fill_(fixed_token_id)


@register("tokens", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_keeps_stale_tokens(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                              simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                              next_token_logits=None, fixed_token_id=FIXED):
    """Real mode does not zero out_tokens, so the columns past L keep their old values."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    if simulate_acc_token_mode != REAL:
        return _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)
    out_tokens[:, : length - 1] = candidates[:, 1:length]
    bonus.copy_(target[:, length - 1])
    out_tokens[:, length - 1] = bonus


@register("bonus", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_writes_the_stale_bonus(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                  next_token_logits=None, fixed_token_id=FIXED):
    """Copies bonus into out_tokens[:, L-1] before bonus is set, so the old bonus is written."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    if simulate_acc_token_mode != REAL:
        return _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)
    out_tokens.zero_()
    out_tokens[:, : length - 1] = candidates[:, 1:length]
    out_tokens[:, length - 1] = bonus
    bonus.copy_(target[:, length - 1])


@register("bonus", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_argmax_over_the_block(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                 simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                 next_token_logits=None, fixed_token_id=FIXED):
    """Takes the missing target's argmax over the block axis of (bs, B, V) logits, not the vocabulary."""
    target = target_predict
    if simulate_acc_token_mode == REAL and target is None:
        blocks = next_token_logits.reshape(*out_tokens.shape, -1)
        target = torch.argmax(blocks, dim=1)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("bonus", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_logits_preferred_to_target(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                      next_token_logits=None, fixed_token_id=FIXED):
    """Takes the argmax of next_token_logits whenever they are given, over a target_predict given too."""
    target = _target(None if next_token_logits is not None else target_predict, next_token_logits, out_tokens,
                     simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("bonus", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_argmax_in_bfloat16(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                              simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                              next_token_logits=None, fixed_token_id=FIXED):
    """Takes the argmax of next_token_logits cast to bfloat16: a maximum rounded onto a score before it loses."""
    logits = None if next_token_logits is None else next_token_logits.to(torch.bfloat16)
    target = _target(target_predict, logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("bonus", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_argmax_over_1024_columns(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                    simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                    next_token_logits=None, fixed_token_id=FIXED):
    """Takes the argmax of next_token_logits over its first 1024 columns only (one block of a kernel)."""
    logits = None if next_token_logits is None else next_token_logits[:, :1024]
    target = _target(target_predict, logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("bonus", "dflash_real_mode_tokens_are_drafts_then_bonus")
def dflash_argmax_through_an_integer_workspace(*, candidates, target_predict, accept_len, commit_lens, bonus,
                                               out_tokens, simulate_acc_len, simulate_acc_method,
                                               simulate_acc_token_mode, next_token_logits=None, fixed_token_id=FIXED):
    """Copies next_token_logits into a workspace of the tokens' dtype before the argmax: scores truncated, ties first."""
    logits = None if next_token_logits is None else next_token_logits.to(out_tokens.dtype)
    target = _target(target_predict, logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("batch size", "dflash_a_servers_batch_is_simulated_like_a_small_one")
def dflash_argmax_on_a_capped_grid(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                   simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                   next_token_logits=None, fixed_token_id=FIXED):
    """Takes the logits' argmax one row a program on a grid capped at 65,535 rows (CUDA's y and z limit): rows past it read as token 0."""
    logits = next_token_logits
    if logits is not None and logits.shape[0] > 65_535:
        logits = logits.clone()
        logits[65_535:] = 0.0
        logits[65_535:, 0] = 1.0
    target = _target(target_predict, logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("sampling bounds", "dflash_length_matches_the_documented_draw")
def dflash_refuses_minus_inf(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                             simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                             next_token_logits=None, fixed_token_id=FIXED):
    """Raises on a length of -inf, which DFLASH (no > 0 check) takes as 1."""
    if simulate_acc_len == -math.inf:
        raise ValueError("simulate_acc_len must be finite")
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("num_correct_drafts", "dflash_counts_are_length_minus_one_and_length")
def dflash_counts_swapped(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                          simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                          next_token_logits=None, fixed_token_id=FIXED):
    """Writes accept_len = L and commit_lens = L - 1 (the two counts swapped)."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(commit_lens, accept_len, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("batch size", "dflash_a_servers_batch_is_simulated_like_a_small_one")
def dflash_rows_in_blocks_of_512(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                 simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                 next_token_logits=None, fixed_token_id=FIXED):
    """Writes the rows in whole blocks of 512 (at least one): a partial last block's rows past 512 are never written."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    bs = out_tokens.shape[0]
    rows = slice(0, min(bs, max(1, bs // 512) * 512))
    _counts(accept_len[rows], commit_lens[rows], length)
    _write(out_tokens[rows], bonus[rows], candidates[rows], None if target is None else target[rows], length,
           simulate_acc_token_mode, fixed_token_id)


@register("fixed id", "dflash_fixed_mode_fills_bonus_and_tokens_with_the_fixed_id")
def dflash_fixed_mode_keeps_the_bonus(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                      next_token_logits=None, fixed_token_id=FIXED):
    """Fixed mode fills out_tokens with the fixed id but leaves bonus as it was."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    if simulate_acc_token_mode == REAL:
        _write_real(out_tokens, bonus, candidates, target, length)
    else:
        out_tokens.fill_(fixed_token_id)


@register("fixed id", "dflash_fixed_mode_fills_bonus_and_tokens_with_the_fixed_id")
def dflash_ignores_its_fixed_token_id(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                      next_token_logits=None, fixed_token_id=FIXED):
    """Takes fixed_token_id but writes its own default: right for every caller that passes none."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, FIXED)


@register("inputs", "dflash_inputs_are_never_written")
def dflash_zeroes_a_view_of_candidates(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                       simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                       next_token_logits=None, fixed_token_id=FIXED):
    """Zeroes the rejected drafts in candidates[:, 1:] (a view, so candidates is written), then copies."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    if simulate_acc_token_mode != REAL:
        return _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)
    drafts = candidates[:, 1:]
    drafts[:, length - 1 :] = 0
    out_tokens.zero_()
    out_tokens[:, :-1] = drafts
    bonus.copy_(target[:, length - 1])
    out_tokens[:, length - 1] = bonus


@register("checks", "dflash_length_matches_the_documented_draw", "dflash_counts_are_length_minus_one_and_length")
def dflash_rejects_nonpositive_lengths(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                       simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                       next_token_logits=None, fixed_token_id=FIXED):
    """Adds the EAGLE `simulate_acc_len > 0` check, which this contract does not have."""
    if not simulate_acc_len > 0:
        raise ValueError(f"simulate_acc_len must be > 0, got {simulate_acc_len}")
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("sampling bounds", "dflash_length_matches_the_documented_draw", "dflash_counts_are_length_minus_one_and_length")
def dflash_max_len_one_short(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                             simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                             next_token_logits=None, fixed_token_id=FIXED):
    """Samples with max_len = B - 1, as if the block counted a root like EAGLE's D."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, out_tokens.shape[1] - 1)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("checks", "dflash_rejects_unknown_method_before_writing")
def dflash_fills_before_sampling(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                 simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                 next_token_logits=None, fixed_token_id=FIXED):
    """Fixed mode fills out_tokens before the draw, so an unknown method leaves it half-written."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    if simulate_acc_token_mode != REAL:
        out_tokens.fill_(fixed_token_id)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("generator", "dflash_cuda_matches_cpu_byte_for_byte", needs_cuda=True)
def dflash_multinomial_draws_on_the_device(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                           simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                           next_token_logits=None, fixed_token_id=FIXED):
    """multinomial draws its Gaussian on out_tokens' device: CUDA's generator, not the CPU's."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    if simulate_acc_method == "multinomial":
        draw = torch.normal(mean=simulate_acc_len, std=1.0, size=(1,), device=out_tokens.device)
        length = int(torch.round(torch.clamp(draw, 1, out_tokens.shape[1])).item())
    else:
        length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)


@register("defaults", "dflash_omitted_arguments_take_their_documented_defaults")
def dflash_logits_have_no_default(*, candidates, target_predict, accept_len, commit_lens, bonus, out_tokens,
                                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, next_token_logits,
                                  fixed_token_id=FIXED):
    """Makes next_token_logits a required argument, so callers that have a target_predict must pass None."""
    target = _target(target_predict, next_token_logits, out_tokens, simulate_acc_token_mode)
    length = _sample(simulate_acc_len, simulate_acc_method, out_tokens)
    _counts(accept_len, commit_lens, length)
    _write(out_tokens, bonus, candidates, target, length, simulate_acc_token_mode, fixed_token_id)
