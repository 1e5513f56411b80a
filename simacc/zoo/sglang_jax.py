"""A port in sglang-jax's calling convention (CONTRACT.md §10),
written for the zoo from the facts CONTRACT.md §10 lists, not from sglang-jax's code:

    apply_simulated_acceptance(*, accept_index, predict, accept_lens, candidates,
                               target_predict, valid_mask, spec_steps, topk, rng)
        -> (index, predict, lens)

The length, method and token mode come from ``SIMULATED_ACCEPTANCE_CONFIG``, a frozen record
with four required fields that a private ``_load_config()`` builds from ``SIMULATE_ACC_LEN``,
``SIMULATE_ACC_METHOD`` and ``SIMULATE_ACC_TOKEN_MODE`` when the module is imported, the shape
sglang-jax's own config takes (simulation is off for a length <= 0: the inputs come back as
they are). The fixed token is 32; ``lens`` counts the bonus; masked rows get -1, length 0 and
no token writes; real mode needs ``topk == 1``, ``target_predict`` and ``W`` candidate
columns, and a call needs ``rng``, else ``ValueError``. Only :func:`accept` takes the config
and the Gaussian as arguments, so that :mod:`simacc.zoo.sglang_jax_clamped` can be the same
port with sglang-jax's own Gaussian. The config is read on every call, outside the jitted
array work, so the glue of ``docs/jax.md`` can replace it per call to adapt either port to
simacc's functional contract.
"""

import math
import os
from dataclasses import dataclass

from simacc.contract import jaxbridge
from simacc.contract.jaxbridge import jax, jnp

FIXED_TOKEN_ID = 32
REAL = "real-draft-token"


@dataclass(frozen=True)
class SimulatedAcceptanceConfig:
    """The port's settings, every one required."""

    enabled: bool
    acc_len: float
    method: str
    token_mode: str


def _load_config(environ=os.environ):
    """The settings as sglang-jax reads them, once, at import (no validation): on for a length > 0."""
    acc_len = float(environ.get("SIMULATE_ACC_LEN", "-1"))
    return SimulatedAcceptanceConfig(acc_len > 0, acc_len, environ.get("SIMULATE_ACC_METHOD", "match-expected"),
                                     environ.get("SIMULATE_ACC_TOKEN_MODE", "fixed"))


SIMULATED_ACCEPTANCE_CONFIG = _load_config()


def gaussian_length(rng, x, width):
    """``round(clamp(N(x, 1), 1, width))``, rounding half to even."""
    return jnp.rint(jnp.clip(x + jax.random.normal(rng), 1, width)).astype(jnp.int32)


def apply_simulated_acceptance(*, accept_index, predict, accept_lens, candidates, target_predict, valid_mask,
                               spec_steps, topk, rng):
    """Simulated acceptance with this module's ``SIMULATED_ACCEPTANCE_CONFIG``: ``(index, predict, lens)``."""
    return accept(SIMULATED_ACCEPTANCE_CONFIG, gaussian_length, accept_index=accept_index, predict=predict,
                  accept_lens=accept_lens, candidates=candidates, target_predict=target_predict,
                  valid_mask=valid_mask, spec_steps=spec_steps, topk=topk, rng=rng)


def accept(config, gaussian, *, accept_index, predict, accept_lens, candidates, target_predict, valid_mask,
           spec_steps, topk, rng):
    """The port's body under ``config``, drawing multinomial lengths with ``gaussian``."""
    if not config.enabled:
        return accept_index, predict, accept_lens
    width = spec_steps + 1
    real = config.token_mode == REAL
    if rng is None:
        raise ValueError("simulated acceptance needs an rng key")
    if real and topk != 1:
        raise ValueError(f"{REAL} needs topk == 1, got topk={topk}")
    if real and (target_predict is None or candidates is None or candidates.shape[1] < width):
        raise ValueError(f"{REAL} needs target_predict and at least {width} candidate columns")
    if config.method == "multinomial":
        length = gaussian(rng, config.acc_len, width)
    elif config.method == "match-expected":
        clamped = max(1.0, min(float(width), config.acc_len))
        length = math.floor(clamped) + jax.random.bernoulli(rng, clamped - math.floor(clamped)).astype(jnp.int32)
    else:
        raise ValueError(f"unknown simulate-acc method {config.method!r}")
    tokens = (candidates, target_predict) if real else (None, None)  # unread in fixed mode
    return _arrays(accept_index, predict, *tokens, valid_mask, length, real=real)


@jaxbridge.jit(static_argnames="real")
def _arrays(accept_index, predict, candidates, target_predict, valid_mask, length, *, real):
    """The port's array work, jitted: it gets ``L`` and the mode as arguments, so nothing
    read from the config is frozen into the compiled function."""
    width = accept_index.shape[1]
    taken = (jnp.arange(width) < length)[None, :] & valid_mask[:, None]
    index = jnp.where(taken, accept_index[:, :1] + jnp.arange(width), -1).astype(jnp.int32)
    lens = valid_mask.astype(jnp.int32) * length
    if not real:
        return index, jnp.full_like(predict, FIXED_TOKEN_ID), lens
    drafts = jnp.pad(candidates[:, 1:width], ((0, 0), (0, 1)))  # column j: draft j + 1
    tokens = jnp.where(jnp.arange(width) == length - 1, target_predict[:, :width], drafts)
    slots = jnp.where(taken, index, predict.shape[0]).ravel()
    return index, predict.at[slots].set(tokens.ravel().astype(predict.dtype), mode="drop"), lens
