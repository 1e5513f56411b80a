"""The functional contract (CONTRACT.md §10 and §9): what a port that returns new arrays must do, with the per-call settings as
arguments so that a check can vary them from one example to the next.

    simulated_acceptance(*, accept_index, predict, candidates, target_predict, valid_mask,
                         spec_steps, simulate_acc_len, simulate_acc_method,
                         simulate_acc_token_mode, fixed_token_id, rng) -> (index, predict, lens)

JAX arrays in and out (:mod:`simacc.contract.jaxbridge` converts the cases): ``accept_index``
``(bs, W)`` int32 with ``W = spec_steps + 1``, ``predict`` ``(P,)`` int32, ``candidates``
and ``target_predict`` ``(bs, D)`` (None allowed in fixed mode), ``valid_mask`` ``(bs,)``
bool, ``rng`` a ``jax.random`` key. Nothing is written; the results are new arrays:

* one ``L`` per call, drawn with ``rng``, in ``[1, W]``, distributed as CONTRACT.md §9 says for the
  method. Which ``L`` a key gives is the port's business (any RNG), so it is checked through
  what the outputs show and, over many keys, through its distribution;
* ``index`` ``(bs, W)`` int32: valid row ``i`` is ``accept_index[i, 0] + 0..L-1`` then -1, a
  masked row all -1; ``lens`` ``(bs,)`` int32: ``L`` for a valid row (the bonus counted,
  as sglang-jax counts it), 0 for a masked one;
* ``predict``, same shape and dtype: fixed mode fills every element with ``fixed_token_id``
  (as sglang's fixed mode does); real mode (``real-draft-token``) writes
  ``candidates[i, 1:L]`` then the bonus ``target_predict[i, L-1]`` at valid row ``i``'s
  accepted slots, every other element (masked rows' slots included) keeping its value;
* ``rng=None`` is a ``ValueError``, and so is a real-mode call whose ``candidates`` has
  fewer than ``W`` columns.

Unlike sglang-jax's ``apply_simulated_acceptance``, the length, method, mode and fixed id are
arguments, not a module config read at import (a harness varies them per example); there
is no ``accept_lens`` (sglang-jax only hands it back when simulation is off, ``x <= 0``,
which is outside this contract: ``simulate_acc_len`` is > 0) and no ``topk`` (real mode is
for chains, ``topk == 1``: a glue passes 1).

The fixed id is an argument: which one a check asks for is a setting of the check
(``--fixed-token-id``): 100 as in sglang, 32 for sglang-jax.
"""

import math

from simacc.contract import jaxbridge
from simacc.contract import validation as checks
from simacc.contract.jaxbridge import jax, jnp
from simacc.contract.sampling import METHODS

REAL = "real-draft-token"
def sample_length(rng, x, method, width):
    """``L`` in ``[1, width]`` drawn with ``rng`` (a JAX int32 scalar): CONTRACT.md §9's
    distributions, not its torch draws. The arithmetic on ``x`` is Python's, the draw one
    compiled function (eager, its four JAX operations took 0.3 ms a call)."""
    if method == "multinomial":  # a Gaussian around x itself, not around x clamped
        return _around(rng, jnp.float32(x), width)
    if method == "match-expected":
        clamped = max(1.0, min(float(width), x))  # Python's min/max: NaN and inf give width
        low = math.floor(clamped)
        return _up_with(rng, low, clamped - low)  # probability frac(clamped); never at width
    raise ValueError(f"unknown simulate_acc_method {method!r}; expected one of {METHODS}")


@jaxbridge.jit()  # x, the width and the fraction traced, weakly typed as Python's numbers are: one compilation
def _around(rng, x, width):
    return jnp.round(jnp.clip(x + jax.random.normal(rng), 1, width)).astype(jnp.int32)  # jnp.round: half to even


@jaxbridge.jit()
def _up_with(rng, low, fraction):
    return (low + (jax.random.uniform(rng) < fraction)).astype(jnp.int32)


def simulated_acceptance(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                         simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    """The functional contract's reference (see the module): the checks and the draw in
    Python, the arrays in one jitted function (:func:`simacc.contract.jaxbridge.jit`)."""
    width = spec_steps + 1
    _check(candidates, target_predict, width, simulate_acc_len, simulate_acc_token_mode, rng)
    length = sample_length(rng, simulate_acc_len, simulate_acc_method, width)
    real = simulate_acc_token_mode == REAL
    tokens = (candidates, target_predict) if real else (None, None)  # unread in fixed mode: one compilation less
    return _accept(accept_index, predict, *tokens, valid_mask, length, fixed_token_id, real=real)


@jaxbridge.jit(static_argnames="real")  # L and the fixed id are traced: they cost no recompilation
def _accept(accept_index, predict, candidates, target_predict, valid_mask, length, fixed_token_id, *, real):
    width = accept_index.shape[1]
    cols = jnp.arange(width, dtype=jnp.int32)
    accepted = (cols < length) & valid_mask[:, None]
    index = jnp.where(accepted, accept_index[:, :1] + cols, -1)
    lens = jnp.where(valid_mask, length, 0)
    if not real:
        return index, jnp.full_like(predict, fixed_token_id), lens
    drafts = jnp.roll(candidates[:, :width], -1, axis=1)  # column j holds draft j + 1
    tokens = jnp.where(cols == length - 1, target_predict[:, :width], drafts)
    slots = jnp.where(accepted, index, predict.shape[0])  # past the end: dropped
    return index, predict.at[slots.reshape(-1)].set(tokens.reshape(-1).astype(predict.dtype), mode="drop"), lens


def _check(candidates, target_predict, width, x, mode, rng):
    if rng is None:
        raise ValueError("rng must be a jax.random key, got None")
    checks.check_length(x)
    checks.check_mode(mode)
    if mode == REAL:
        if candidates is None or target_predict is None:
            raise ValueError("real-draft-token mode needs candidates and target_predict")
        if min(candidates.shape[1], target_predict.shape[1]) < width:
            raise ValueError(f"real-draft-token mode needs at least {width} candidate columns (spec_steps + 1), "
                             f"got {candidates.shape[1]} and {target_predict.shape[1]}")
