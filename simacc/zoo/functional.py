"""The functional contract (CONTRACT.md §10, :mod:`simacc.contract.functional`): a correct JAX implementation
of simacc's own, mutants with one step wrong, and sglang-jax's port through the README's
glue.

Each entry is the contract's steps in order: check, draw ``L`` (a Python int, or one per row
for the per-row mutant), then :func:`_simulate` builds ``index``, ``predict`` and ``lens``
in one jitted function that every entry shares (one compilation per shape for the whole
zoo, :func:`simacc.contract.jaxbridge.jit`). A mutant gets one step wrong, around or instead of it.
JAX is imported when an entry first runs (``requires``).
"""

import dataclasses
import math

import numpy as np
import torch

from simacc.contract import jaxbridge
from simacc.contract.jaxbridge import jax, jnp
from simacc.zoo import sglang_jax_clamped
from simacc.zoo.base import register

REAL = "real-draft-token"
JAX = ("jax",)


def _check(rng, candidates, width, mode):
    if rng is None:
        raise ValueError("rng must be a jax.random key, got None")
    if mode == REAL and candidates.shape[1] < width:
        raise ValueError(f"real-draft-token mode needs {width} candidate columns, got {candidates.shape[1]}")


def _length(rng, x, method, width):
    """``L`` as a Python int: a Bernoulli step for match-expected, a rounded Gaussian for
    multinomial (``jnp.rint`` rounds half to even)."""
    if method == "multinomial":
        return int(jnp.rint(jnp.clip(x + jax.random.normal(rng), 1, width)))
    clamped = max(1.0, min(float(width), x))
    return math.floor(clamped) + int(jax.random.bernoulli(rng, clamped - math.floor(clamped)))


def _index(accept_index, valid_mask, length):
    cols = jnp.arange(accept_index.shape[1])
    taken = (cols < jnp.reshape(length, (-1, 1))) & valid_mask[:, None]
    return jnp.where(taken, accept_index[:, :1] + cols, -1).astype(jnp.int32)


def _lens(valid_mask, length):
    return (valid_mask * jnp.asarray(length)).astype(jnp.int32)


def _written(predict, index, tokens):
    """``predict`` with ``tokens`` at the slots ``index`` names (-1 names none), through
    one-hot masks instead of a scatter: an independent way to say what the reference says."""
    hits = index[:, :, None] == jnp.arange(predict.shape[0])
    value = (hits * tokens[:, :, None].astype(predict.dtype)).sum(axis=(0, 1), dtype=predict.dtype)
    return jnp.where(hits.any(axis=(0, 1)), value, predict)


def _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id, *, real):
    """``(index, predict, lens)`` for a drawn ``L``, one for the call or one per row. Every
    call hands over one length per row and no tokens in fixed mode, so that the entries
    share a compilation per shape."""
    lengths = np.broadcast_to(np.asarray(length, np.int32), valid_mask.shape)
    tokens = (candidates, target_predict) if real else (None, None)
    return _arrays(accept_index, predict, *tokens, valid_mask, lengths, fixed_token_id, real=real)


@jaxbridge.jit(static_argnames="real")
def _arrays(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id, *, real):
    """In real mode column ``j`` of a row's tokens is draft ``j + 1``, column ``L - 1`` the bonus."""
    index = _index(accept_index, valid_mask, length)
    if not real:
        return index, jnp.full_like(predict, fixed_token_id), _lens(valid_mask, length)
    cols = jnp.arange(index.shape[1])
    drafts = candidates[:, jnp.minimum(cols + 1, index.shape[1] - 1)]
    tokens = jnp.where(cols == jnp.reshape(length, (-1, 1)) - 1, target_predict[:, : index.shape[1]], drafts)
    return index, _written(predict, index, tokens), _lens(valid_mask, length)


@register("correct", requires=JAX)
def functional_one_hot(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                       simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    """Correct: jitted jax.numpy writing predict through one-hot masks, not a scatter."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


# -- mutants: one step wrong --------------------------------------------------------------


@register("shape", "functional_results_are_index_predict_and_lens", requires=JAX)
def functional_lens_kept_as_a_column(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                     simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                     rng):
    """Counts lens from the index with keepdims=True, returning a (bs, 1) array."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    index, new, _ = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                              real=simulate_acc_token_mode == REAL)
    return index, new, (index != -1).sum(axis=1, keepdims=True, dtype=jnp.int32)


@register("sampling", "functional_valid_rows_share_one_length", requires=JAX)
def functional_draws_per_row(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                             simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    """Draws L for each row from a split key (per-request acceptance), not once per call."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    keys = jax.random.split(rng, valid_mask.shape[0])
    length = [_length(key, simulate_acc_len, simulate_acc_method, width) for key in keys]
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


@register("sampling", "functional_length_is_within_one_and_width", requires=JAX)
def functional_max_len_one_too_many(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                    simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                    rng):
    """Draws L in [1, W + 1] (spec_steps + 2 as max_len), so lens can exceed W."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width + 1)
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


@register("mask", "functional_masked_rows_have_length_zero_and_no_accepted_slot", requires=JAX)
def functional_lens_ignore_the_mask(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                    simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                    rng):
    """Gives every row length L in lens, masked rows too."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    index, new, _ = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                              real=simulate_acc_token_mode == REAL)
    return index, new, jnp.full(valid_mask.shape, length, jnp.int32)


@register("lens", "functional_valid_index_rows_are_root_plus_lens_slots_then_minus_one", requires=JAX)
def functional_lens_without_the_bonus(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                      rng):
    """Returns L - 1 in lens (drafts only, sglang's num_correct_drafts) while the index holds L slots."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    index, new, _ = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                              real=simulate_acc_token_mode == REAL)
    return index, new, _lens(valid_mask, length - 1)


@register("fixed", "functional_fixed_mode_fills_predict_with_the_fixed_id", requires=JAX)
def functional_fixed_id_at_accepted_slots_only(*, accept_index, predict, candidates, target_predict, valid_mask,
                                               spec_steps, simulate_acc_len, simulate_acc_method,
                                               simulate_acc_token_mode, fixed_token_id, rng):
    """Fixed mode writes the fixed id only at the valid rows' accepted slots, as real mode writes."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    index, new, lens = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                                 real=simulate_acc_token_mode == REAL)
    if simulate_acc_token_mode != REAL:
        new = _written(predict, index, jnp.full(index.shape, fixed_token_id))
    return index, new, lens


@register("bonus", "functional_real_mode_writes_drafts_then_bonus_at_accepted_slots", requires=JAX)
def functional_no_bonus_at_length_one(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                      simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                      rng):
    """Skips the token writes when L == 1, so the lone bonus is never written."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    index, new, lens = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                                 real=simulate_acc_token_mode == REAL)
    return index, predict if simulate_acc_token_mode == REAL and length == 1 else new, lens


@register("mask", "functional_real_mode_leaves_other_predict_slots_unchanged", requires=JAX)
def functional_writes_masked_rows(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                  rng):
    """Writes drafts and bonus at masked rows' slots too: the mask is applied to the index only."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    real = simulate_acc_token_mode == REAL
    index, _, lens = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                               real=real)
    every_row = jnp.ones_like(valid_mask)
    _, new, _ = _simulate(accept_index, predict, candidates, target_predict, every_row, length, fixed_token_id,
                          real=real)
    return index, new, lens


@register("inputs", "functional_inputs_are_never_written", requires=JAX)
def functional_writes_its_input_through_dlpack(*, accept_index, predict, candidates, target_predict, valid_mask,
                                               spec_steps, simulate_acc_len, simulate_acc_method,
                                               simulate_acc_token_mode, fixed_token_id, rng):
    """Copies the new predict into its input's buffer through DLPack, in place as the torch code did."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    index, new, lens = _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                                 real=simulate_acc_token_mode == REAL)
    torch.from_dlpack(predict).copy_(torch.from_dlpack(new))
    return index, predict, lens


_OWN_KEY = []  # the module-level key of functional_keeps_its_own_key, made on its first call


@register("sampling", "functional_same_key_gives_identical_outputs", requires=JAX)
def functional_keeps_its_own_key(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                                 simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id,
                                 rng):
    """Draws L from a module-level key it splits on every call, ignoring the key it was given."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    state = _OWN_KEY.pop() if _OWN_KEY else jax.random.PRNGKey(0)
    state, key = jax.random.split(state)
    _OWN_KEY.append(state)
    length = _length(key, simulate_acc_len, simulate_acc_method, width)
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


@register("rng", "functional_rejects_a_call_without_a_key", requires=JAX)
def functional_default_key(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                           simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    """Falls back to jax.random.PRNGKey(0) when rng is None instead of raising."""
    rng = jax.random.PRNGKey(0) if rng is None else rng
    return functional_one_hot(accept_index=accept_index, predict=predict, candidates=candidates,
                              target_predict=target_predict, valid_mask=valid_mask, spec_steps=spec_steps,
                              simulate_acc_len=simulate_acc_len, simulate_acc_method=simulate_acc_method,
                              simulate_acc_token_mode=simulate_acc_token_mode, fixed_token_id=fixed_token_id, rng=rng)


@register("bounds", "functional_real_mode_rejects_too_few_candidate_columns", requires=JAX)
def functional_reads_past_the_candidates(*, accept_index, predict, candidates, target_predict, valid_mask,
                                         spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                                         fixed_token_id, rng):
    """Skips the column check: its gathers clamp (JAX's default), so narrow candidates repeat their last column."""
    width = spec_steps + 1
    if rng is None:
        raise ValueError("rng must be a jax.random key, got None")
    length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    if simulate_acc_token_mode == REAL:
        clamped = ((0, 0), (0, max(0, width - candidates.shape[1])))  # what an out-of-range gather reads
        candidates, target_predict = (jnp.pad(t, clamped, mode="edge") for t in (candidates, target_predict))
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


@register("sampling", "functional_match_expected_length_has_the_documented_distribution", requires=JAX)
def functional_swapped_weights(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                               simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    """match-expected takes the longer length with probability 1 - frac instead of frac."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    clamped = max(1.0, min(float(width), simulate_acc_len))
    if simulate_acc_method == "match-expected" and clamped < width:
        low = math.floor(clamped)
        length = low + int(jax.random.bernoulli(rng, 1 - (clamped - low)))
    else:
        length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


@register("sampling", "functional_match_expected_length_has_the_documented_distribution", requires=JAX)
def functional_never_reaches_width_from_below(*, accept_index, predict, candidates, target_predict, valid_mask,
                                              spec_steps, simulate_acc_len, simulate_acc_method,
                                              simulate_acc_token_mode, fixed_token_id, rng):
    """match-expected's longer length is lo + 1 only while lo + 1 < W: an x between W - 1 and W never gives W."""
    width = spec_steps + 1
    _check(rng, candidates, width, simulate_acc_token_mode)
    clamped = max(1.0, min(float(width), simulate_acc_len))
    if simulate_acc_method == "match-expected" and math.floor(clamped) + 1 >= width:
        length = math.floor(clamped)
    else:
        length = _length(rng, simulate_acc_len, simulate_acc_method, width)
    return _simulate(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id,
                     real=simulate_acc_token_mode == REAL)


@register("sampling", "functional_multinomial_length_has_the_documented_distribution", requires=JAX)
def sglang_jax_clamped_mean(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                            simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    """sglang-jax's port through the glue of docs/jax.md: its Gaussian is centred on x clamped to [1, W]."""
    port = sglang_jax_clamped
    port.SIMULATED_ACCEPTANCE_CONFIG = dataclasses.replace(
        port.SIMULATED_ACCEPTANCE_CONFIG, enabled=True, acc_len=simulate_acc_len, method=simulate_acc_method,
        token_mode=simulate_acc_token_mode)
    return port.apply_simulated_acceptance(
        accept_index=accept_index, predict=predict, accept_lens=jnp.zeros(valid_mask.shape, jnp.int32),
        candidates=candidates, target_predict=target_predict, valid_mask=valid_mask,
        spec_steps=spec_steps, topk=1, rng=rng)
