"""Mutants of ``generate_simulated_accept_index`` whose one mistake is in drawing ``L``.

Bounds (the wrong ``max_len``), distribution (a different law for ``L``) and the generator
(the right law from different draws: the length no longer matches what a seeded upstream
run, or another tensor-parallel rank, would draw). Everything after the draw is
:func:`simacc.zoo.base.simulate`.
"""

import fractions
import math
import random

import torch

from simacc.contract.sampling import sample_simulated_acc_len
from simacc.zoo import base
from simacc.zoo.base import register


def _clamped(x, width):
    """``match-expected``'s ``x'``, ``lo``, ``hi`` and weight of ``hi``, as CONTRACT.md §3.3 says."""
    x = max(1.0, min(width, x))
    lo = math.floor(x)
    return lo, (lo + 1 if lo < width else lo), float(x - lo)


def _gaussian(x, method, width, length_of):
    """``L`` with ``multinomial``'s one Gaussian draw (on the CPU generator, as documented) turned
    into a length by ``length_of(draw)``, the mutant's mistake; any other method as documented."""
    if method != "multinomial":
        return base.sample(x, method, width)
    base.check_length(x)
    return length_of(torch.normal(mean=x, std=1.0, size=(1,), device="cpu"))


# -- bounds ---------------------------------------------------------------------------------


@register("sampling bounds", "length_matches_the_documented_draw")
def clamps_to_spec_steps(accept_index, predict, num_correct_drafts, candidates, target_predict,
                         bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Samples with max_len = spec_steps instead of spec_steps + 1 (full acceptance impossible)."""
    length = base.sample(simulate_acc_len, simulate_acc_method, spec_steps)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1, simulate_acc_token_mode)


@register("sampling bounds", "length_is_within_one_and_width", "num_correct_drafts_is_length_minus_one")
def max_len_one_past_width(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Samples with max_len = W + 1 (counting the bonus twice), so L can exceed the width."""
    length = base.sample(simulate_acc_len, simulate_acc_method, spec_steps + 2)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1, simulate_acc_token_mode)


# -- distribution -----------------------------------------------------------------------------


@register("sampling distribution", "length_matches_the_documented_draw")
def match_expected_floors(accept_index, predict, num_correct_drafts, candidates, target_predict,
                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """match-expected returns floor(x) without a draw instead of rounding stochastically."""
    width = spec_steps + 1
    if simulate_acc_method == "match-expected":
        base.check_length(simulate_acc_len)
        length = _clamped(simulate_acc_len, width)[0]
    else:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("sampling distribution", "length_matches_the_documented_draw")
def match_expected_swaps_the_weights(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                     bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """match-expected draws with weights [frac, 1 - frac], so E[L] is lo + 1 - frac."""
    width = spec_steps + 1
    if simulate_acc_method == "match-expected":
        base.check_length(simulate_acc_len)
        lo, hi, frac = _clamped(simulate_acc_len, width)
        length = lo if lo == hi or torch.multinomial(torch.tensor([frac, 1 - frac]), 1).item() == 0 else hi
    else:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("sampling distribution", "length_matches_the_documented_draw")
def multinomial_truncates(accept_index, predict, num_correct_drafts, candidates, target_predict,
                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """multinomial truncates the clamped Gaussian draw with int() instead of rounding it."""
    width = spec_steps + 1
    length = _gaussian(simulate_acc_len, simulate_acc_method, width, lambda draw: int(torch.clamp(draw, 1, width).item()))
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("sampling distribution", "regression")
def multinomial_rounds_half_up(accept_index, predict, num_correct_drafts, candidates, target_predict,
                               bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """multinomial rounds the clamped Gaussian draw half up, floor(v + 0.5), not half to even: 2.5 gives 3."""
    width = spec_steps + 1
    length = _gaussian(simulate_acc_len, simulate_acc_method, width,
                       lambda draw: math.floor(torch.clamp(draw, 1, width).item() + 0.5))
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("sampling distribution", "length_matches_the_documented_draw")
def match_expected_weight_in_thousandths(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                         bs, spec_steps, simulate_acc_len, simulate_acc_method,
                                         simulate_acc_token_mode):
    """match-expected rounds hi's weight to 1/1000 before its one draw, so near the draw's edge L differs."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    lo, hi, frac = _clamped(simulate_acc_len, width)
    if simulate_acc_method == "match-expected" and lo != hi:
        weight = round(frac, 3)
        length = hi if torch.multinomial(torch.tensor([1 - weight, weight]), 1).item() else lo
    else:
        length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("sampling distribution", "length_matches_the_documented_draw")
def gaussian_in_half_precision(accept_index, predict, num_correct_drafts, candidates, target_predict,
                               bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """multinomial draws its Gaussian in float16, where a draw near k + 0.5 rounds the other way."""
    width = spec_steps + 1
    length = _gaussian(simulate_acc_len, simulate_acc_method, width,
                       lambda draw: int(torch.round(torch.clamp(draw.half(), 1, width)).item()))
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


# -- the generator: same law, different draws -------------------------------------------------


@register("generator", "generator_consumes_exactly_the_documented_draws")
def length_read_in_float32(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Reads the length through a float32 tensor: a hair below W becomes W, and the draw is skipped."""
    base.check_length(simulate_acc_len)
    width = spec_steps + 1
    length = sample_simulated_acc_len(torch.tensor(simulate_acc_len).item(), simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("generator", "generator_consumes_exactly_the_documented_draws", "fixed_mode_is_byte_identical_to_legacy")
def match_expected_draws_with_rand(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                   bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """match-expected picks hi when torch.rand(1) < frac: the same law, but not upstream's draw."""
    width = spec_steps + 1
    if simulate_acc_method == "match-expected":
        base.check_length(simulate_acc_len)
        lo, hi, frac = _clamped(simulate_acc_len, width)
        length = lo if lo == hi or torch.rand(1).item() >= frac else hi
    else:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("generator", "generator_consumes_exactly_the_documented_draws", "fixed_mode_is_byte_identical_to_legacy")
def skips_the_draw_for_an_integer_length(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                         bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """match-expected returns an integer x < W without its draw (upstream still draws once)."""
    width = spec_steps + 1
    if simulate_acc_method == "match-expected" and simulate_acc_len > 0 and _clamped(simulate_acc_len, width)[2] == 0:
        length = _clamped(simulate_acc_len, width)[0]
    else:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("generator", "generator_consumes_exactly_the_documented_draws", "fixed_mode_is_byte_identical_to_legacy")
def draws_from_a_private_generator(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                   bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Draws from a private generator seeded like the default one, which is never advanced."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch.initial_seed())
        length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("generator", "length_matches_the_documented_draw", "generator_consumes_exactly_the_documented_draws")
def match_expected_uses_python_random(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                      bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """match-expected rounds with Python's random.random(), which torch.manual_seed does not seed."""
    width = spec_steps + 1
    if simulate_acc_method == "match-expected":
        base.check_length(simulate_acc_len)
        lo, hi, frac = _clamped(simulate_acc_len, width)
        length = lo if random.random() >= frac else hi
    else:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


_MODULE_GENERATOR = torch.Generator().manual_seed(0)


@register("generator", "same_generator_state_gives_identical_outputs", "generator_consumes_exactly_the_documented_draws")
def draws_from_a_module_generator(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                  bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Draws from a generator made once at import, so two calls from one default state disagree."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    if simulate_acc_method == "multinomial":
        draw = torch.normal(mean=simulate_acc_len, std=1.0, size=(1,), generator=_MODULE_GENERATOR)
        length = int(torch.round(torch.clamp(draw, 1, width)).item())
    elif simulate_acc_method == "match-expected":
        lo, hi, frac = _clamped(simulate_acc_len, width)
        weights = torch.tensor([1 - frac, frac])
        length = lo if lo == hi or torch.multinomial(weights, 1, generator=_MODULE_GENERATOR).item() == 0 else hi
    else:
        raise ValueError(f"unknown simulate_acc_method {simulate_acc_method!r}")
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


@register("generator", "cuda_matches_cpu_byte_for_byte", needs_cuda=True)
def multinomial_draws_on_the_input_device(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                          bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """multinomial draws its Gaussian on accept_index's device: CUDA's generator, not the CPU's."""
    width = spec_steps + 1
    if simulate_acc_method == "multinomial":
        base.check_length(simulate_acc_len)
        draw = torch.normal(mean=simulate_acc_len, std=1.0, size=(1,), device=accept_index.device)
        length = int(torch.round(torch.clamp(draw, 1, width)).item())
    else:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, simulate_acc_token_mode)


# -- ports with their own randomness, checked at the semantic level ---------------------------


def _own_generator():
    """A private generator seeded by one draw from the default one: the port's randomness is
    its own (no draw matches upstream's), yet a seeded run stays reproducible."""
    return torch.Generator().manual_seed(int(torch.randint(2**62, (1,)).item()))


def _own_draw(x, method, width, gen=None, mean=None):
    """The documented law of ``L`` (CONTRACT.md §9), drawn from ``gen`` (by default a fresh :func:`_own_generator`,
    made once the method is known to be valid); ``mean`` replaces the Gaussian's mean."""
    if method not in ("multinomial", "match-expected"):
        raise ValueError(f"unknown simulate_acc_method {method!r}")
    gen = gen or _own_generator()
    if method == "multinomial":
        draw = torch.normal(x if mean is None else mean, 1.0, (1,), generator=gen)
        return int(torch.round(torch.clamp(draw, 1, width)).item())
    lo, hi, frac = _clamped(x, width)
    return hi if torch.rand((), generator=gen).item() < frac else lo


@register("correct", level="semantic")
def own_generator_port(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                       simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    """Correct at the semantic level: the documented law for L, drawn from a generator of its own."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    length = _own_draw(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("sampling distribution", "multinomial_matches_the_rounded_clamped_gaussian", level="semantic")
def own_generator_clamps_the_mean(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                  spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                  simulate_acc_token_mode="fixed"):
    """Draws the Gaussian around x clamped to [1, W] (as sglang-jax does), not around x."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    mean = max(1.0, min(width, simulate_acc_len))
    length = _own_draw(simulate_acc_len, simulate_acc_method, width, mean=mean)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("sampling distribution", "match_expected_has_the_documented_mean_and_support", level="semantic")
def own_generator_rounds_to_nearest(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                    spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                    simulate_acc_token_mode="fixed"):
    """match-expected rounds x to the nearest integer instead of drawing floor or ceil by the fraction."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    if simulate_acc_method == "match-expected":
        length = int(round(max(1.0, min(width, simulate_acc_len))))
    else:
        length = _own_draw(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("sampling distribution", "length_is_one_value_for_the_whole_batch", level="semantic")
def own_generator_per_request(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                              spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                              simulate_acc_token_mode="fixed"):
    """Draws one L per request (as vLLM does) instead of one for the whole batch."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    _own_draw(simulate_acc_len, simulate_acc_method, width)  # rejects a bad method before anything is drawn
    gen = _own_generator()
    lengths = [_own_draw(simulate_acc_len, simulate_acc_method, width, gen) for _ in range(bs)]
    out = torch.full((bs, width), -1, dtype=torch.int32, device=accept_index.device)
    for i, length in enumerate(lengths):
        out[i, :length] = base.index(accept_index[i : i + 1, 0], length, width)[0, :length]
        num_correct_drafts[i] = length - 1
    if simulate_acc_token_mode != base.REAL:
        predict.fill_(base.FIXED)
    else:
        for i, length in enumerate(lengths):
            base.write_tokens(predict, out[i : i + 1], candidates[i : i + 1], target_predict[i : i + 1], length)
    return out


# -- ports with a law of their own making, one step wrong, and the same steps right (semantic level) --------
#
# Each mistake here passed every property until the checks were strengthened (CONTRACT.md §9.4):
# a spread of 0.71, an expected length up to 0.1 low, a generator that never advances.


def _box_muller(gen, factor):
    """A standard normal draw from two uniforms of ``gen``: ``sqrt(-factor ln u1) cos(2 pi u2)``
    (Box-Muller with ``factor`` 2)."""
    u1, u2 = (1.0 - torch.rand((), generator=gen, dtype=torch.float64)).item(), torch.rand((), generator=gen).item()
    return math.sqrt(-factor * math.log(u1)) * math.cos(2 * math.pi * u2)


def _port_length(x, method, width, gen, factor=2.0, weight=None):
    """``L`` by the documented law (CONTRACT.md §9) from ``gen``: the Gaussian by Box-Muller with
    ``factor``; match-expected's ``hi`` when a uniform falls below ``weight(x')`` (by default the
    exact fraction of the clamped length)."""
    if method == "multinomial":
        return int(round(max(1.0, min(float(width), x + _box_muller(gen, factor)))))
    clamped = min(max(fractions.Fraction(x), 1), width) if math.isfinite(x) else fractions.Fraction(width)
    lo = math.floor(clamped)
    frac = (weight or (lambda c: c - math.floor(c)))(clamped)
    return lo + int(lo < width and fractions.Fraction(torch.rand((), generator=gen, dtype=torch.float64).item()) < frac)


def _port(simulate_acc_len, simulate_acc_method, spec_steps, draw):
    """Check the length and the method, then ``draw(x, method, W)``."""
    base.check_length(simulate_acc_len)
    if simulate_acc_method not in ("multinomial", "match-expected"):
        raise ValueError(f"unknown simulate_acc_method {simulate_acc_method!r}")
    return draw(simulate_acc_len, simulate_acc_method, spec_steps + 1)


@register("correct", level="semantic")
def own_law_on_a_copy_of_the_generator(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                       spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                       simulate_acc_token_mode="fixed"):
    """Correct at the semantic level: draws from a copy of the default generator, hands the advanced state back (Box-Muller, exact fractions)."""

    def draw(x, method, width):
        gen = torch.Generator()
        gen.set_state(torch.default_generator.get_state())
        length = _port_length(x, method, width, gen)
        torch.default_generator.set_state(gen.get_state())
        return length

    length = _port(simulate_acc_len, simulate_acc_method, spec_steps, draw)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1,
                         simulate_acc_token_mode)


@register("generator", "serving_loop_conforms_at_every_step", level="semantic")
def own_law_inside_fork_rng(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                            simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    """Draws L its own way from the default generator inside torch.random.fork_rng, which never advances it."""

    def draw(x, method, width):
        with torch.random.fork_rng(devices=[]):
            return _port_length(x, method, width, torch.default_generator)

    length = _port(simulate_acc_len, simulate_acc_method, spec_steps, draw)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1,
                         simulate_acc_token_mode)


@register("sampling distribution", "multinomial_matches_the_rounded_clamped_gaussian", level="semantic")
def own_generator_box_muller_without_the_two(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                             bs, spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                             simulate_acc_token_mode="fixed"):
    """Draws the Gaussian by Box-Muller as sqrt(-ln u1) cos(2 pi u2), the 2 under the root left out: sigma 0.71, not 1."""
    length = _port(simulate_acc_len, simulate_acc_method, spec_steps,
                   lambda x, method, width: _port_length(x, method, width, _own_generator(), factor=1.0))
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1,
                         simulate_acc_token_mode)


@register("sampling distribution", "multinomial_matches_the_rounded_clamped_gaussian", level="semantic")
def own_generator_rounds_up_from_four_tenths(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                             bs, spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                             simulate_acc_token_mode="fixed"):
    """Rounds the clamped Gaussian as floor(v + 0.6), not round(v): the law of a mean 0.1 too high."""

    def draw(x, method, width):
        if method != "multinomial":
            return _own_draw(x, method, width)
        value = torch.clamp(torch.normal(x, 1.0, (1,), generator=_own_generator()), 1, width)
        return int(torch.floor(value + 0.6).item())

    length = _port(simulate_acc_len, simulate_acc_method, spec_steps, draw)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1,
                         simulate_acc_token_mode)


@register("sampling distribution", "match_expected_has_the_documented_mean_and_support", level="semantic")
def own_generator_length_in_tenths(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                   spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                   simulate_acc_token_mode="fixed"):
    """Keeps the length in tenths of a token (int(10 x) / 10, a setting stored to one decimal): E[L] low by up to 0.1."""
    tenths = lambda c: fractions.Fraction(int(c * 10), 10) - math.floor(c)  # noqa: E731
    length = _port(simulate_acc_len, simulate_acc_method, spec_steps,
                   lambda x, method, width: _port_length(x, method, width, _own_generator(), weight=tenths))
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps + 1,
                         simulate_acc_token_mode)


class _Stream:
    """A port's private stream of L: a generator seeded at its first call with the seed the
    process's generator was last given (``torch.initial_seed()``: no draw taken from it), then
    drawn from call after call (``reseed_every``: seeded again, from the same place, every that
    many calls, as a port that resets its generator with its CUDA graphs does)."""

    def __init__(self, reseed_every=None):
        self.reseed_every, self.calls, self.gen = reseed_every, 0, torch.Generator()

    def draw(self, x, method, width):
        if self.calls == 0 or (self.reseed_every and self.calls % self.reseed_every == 0):
            self.gen.manual_seed(torch.initial_seed())
        self.calls += 1
        return _own_draw(x, method, width, self.gen)


_RESEEDED, _CONTINUED = _Stream(reseed_every=16), _Stream()


@register("independence", "serving_loop_conforms_at_every_step", level="semantic")
def own_stream_reseeded_every_16_calls(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                       spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                       simulate_acc_token_mode="fixed"):
    """Draws L from a private stream that it seeds from torch.initial_seed() every 16 calls: a server seeded once repeats the same 16 lengths, each with the documented law."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    _own_draw(simulate_acc_len, simulate_acc_method, width, torch.Generator())  # rejects a bad method first
    length = _RESEEDED.draw(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("correct", level="semantic")
def own_stream_continued(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                         simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    """Correct at the semantic level: draws L from a private stream seeded once, at its first call, and continued call after call."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    _own_draw(simulate_acc_len, simulate_acc_method, width, torch.Generator())  # rejects a bad method first
    length = _CONTINUED.draw(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)
