"""sglang-jax's port as CONTRACT.md §10.4 documents it: the port of :mod:`simacc.zoo.sglang_jax`,
its config imported by name (as sglang-jax's callers import theirs), with sglang-jax's
Gaussian, which clamps the mean to ``[1, W]`` before adding the noise. For ``x`` outside
``[1, W]`` that is another distribution (CONTRACT.md §9.3: for W = 4, x = 5, P(L = 4) is about
0.69 instead of 0.93), which the multinomial distribution property must reject.
"""

from simacc.contract.jaxbridge import jax, jnp
from simacc.zoo import sglang_jax
from simacc.zoo.sglang_jax import SIMULATED_ACCEPTANCE_CONFIG  # a name of this module now: a glue replaces it here


def clamped_mean_length(rng, x, width):
    """``round(clamp(N(clamp(x, 1, width), 1), 1, width))``."""
    mean = jnp.clip(x, 1, width)
    return jnp.rint(jnp.clip(mean + jax.random.normal(rng), 1, width)).astype(jnp.int32)


def apply_simulated_acceptance(*, accept_index, predict, accept_lens, candidates, target_predict, valid_mask,
                               spec_steps, topk, rng):
    """Simulated acceptance with this module's ``SIMULATED_ACCEPTANCE_CONFIG``: ``(index, predict, lens)``."""
    return sglang_jax.accept(SIMULATED_ACCEPTANCE_CONFIG, clamped_mean_length, accept_index=accept_index,
                             predict=predict, accept_lens=accept_lens, candidates=candidates,
                             target_predict=target_predict, valid_mask=valid_mask, spec_steps=spec_steps, topk=topk,
                             rng=rng)
