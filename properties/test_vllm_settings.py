"""vLLM: the synthetic settings and the conditional rates (CONTRACT.md §13, §14), exact.

Valid rates come back as given; a length becomes the minimum-variance schedule, computed in
float64; each bad setting is a ``ValueError`` when the config is built. The conversion to
conditional rates is a float32 tensor on the device asked for, each quotient taken in float64.
"""

import torch

from simacc import strategies as sx
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.strategies import vllm as sv

SETTINGS = sx.VLLM_SETTINGS


def _rates(case):
    return [float(p) for p in case.synthetic_acceptance_rates.values.tolist()]


def _resolved(simacc, case):
    """The rates the call returned, as a list of Python floats (the check says so)."""
    got = simacc.run(case).returned
    floats = isinstance(got, list) and all(type(p) is float for p in got)
    check(floats, "the resolved rates", repr(got)[:200], "a list of Python floats", case)
    return got


@claim(SETTINGS, case=sx.synthetic_settings().filter(lambda c: c.knobs == "rates"))
def test_vllm_rates_come_back_as_given(simacc, case):
    """Valid rates come back as given, each the same float (§13.1)."""
    got = _resolved(simacc, case)
    check(got == _rates(case), "the resolved rates", got, _rates(case), case)


def schedule(k, length):
    """§13.3 by hand: ``d = x - 1`` accepted drafts on average; ``floor(d)`` ones, the
    fraction ``d - floor(d)``, then zeros, ``K`` entries in all."""
    drafts = float(length) - 1.0
    rates = []
    for i in range(k):
        rates.append(1.0 if i + 1 <= drafts else drafts - i if i < drafts else 0.0)
    return rates


@claim(SETTINGS, case=sx.synthetic_settings().filter(lambda c: c.knobs == "length"))
def test_vllm_a_length_becomes_the_minimum_variance_schedule(simacc, case):
    """A length x becomes floor(x - 1) ones, then the fraction, then zeros, in float64 (§13.3)."""
    got = _resolved(simacc, case)
    expected = schedule(case.num_speculative_tokens, case.synthetic_acceptance_length)
    check(got == expected, f"the rates of length {case.synthetic_acceptance_length!r}", got,
          f"{expected} (mean length 1 + sum = x, on two counts only)", case)


def _rejected(simacc, case, why):
    """The call raised a ``ValueError`` (§13.2)."""
    outcome = simacc.attempt(case)
    error = outcome.error
    said = "returned " + repr(outcome.returned)[:200] if error is None else f"{type(error).__name__}: {error}"[:200]
    check(isinstance(error, ValueError), f"the call with {why}", said, "a ValueError", case)


@claim(SETTINGS, case=sv.bad_settings("knobs"))
def test_vllm_exactly_one_knob_is_accepted(simacc, case):
    """Neither knob, or both, is a ValueError (§13.2)."""
    _rejected(simacc, case, "both knobs" if case.knobs == "both" else "neither knob")


@claim(SETTINGS, case=sv.bad_settings("count"))
def test_vllm_rates_of_another_count_than_k_are_rejected(simacc, case):
    """Rates whose number is not K are a ValueError (§13.2)."""
    _rejected(simacc, case, f"{case.synthetic_acceptance_rates.values.numel()} rates for K={case.num_speculative_tokens}")


@claim(SETTINGS, case=sv.bad_settings("range"))
def test_vllm_a_rate_outside_zero_one_is_rejected(simacc, case):
    """A rate below 0, above 1 or NaN is a ValueError (§13.2)."""
    _rejected(simacc, case, f"rates {_rates(case)}")


@claim(SETTINGS, case=sv.bad_settings("increasing"))
def test_vllm_increasing_rates_are_rejected(simacc, case):
    """Rates that rise anywhere are a ValueError (§13.2)."""
    _rejected(simacc, case, f"rising rates {_rates(case)}")


@claim(SETTINGS, case=sv.bad_settings("length"))
def test_vllm_a_length_outside_one_to_k_plus_one_is_rejected(simacc, case):
    """A length outside [1, K + 1], NaN and the infinities included, is a ValueError (§13.2)."""
    _rejected(simacc, case, f"length {case.synthetic_acceptance_length!r}")


@claim(sx.VLLM_CONVERSION, case=sx.conversion_cases())
def test_vllm_conditional_rates_are_quotients_of_the_unconditional_ones(simacc, case):
    """c_i = p_i / p_(i-1) in float64 (p_(-1) = 1; 0 where p_(i-1) = 0), as a float32 (K,) tensor on the device (§14)."""
    outcome = simacc.run(case)
    p = case.unconditional_rates.values.double().tolist()
    quotients = [p[i] / (p[i - 1] if i else 1.0) if i == 0 or p[i - 1] > 0 else 0.0 for i in range(len(p))]
    expected = torch.tensor(quotients, dtype=torch.float64).to(dtype=torch.float32, device=outcome.args["device"])

    def role(index):
        i = index[0]
        return f"c_{i} = p_{i} / p_{i - 1} = {p[i]!r} / {p[i - 1]!r}" if i else f"c_0 = p_0 = {p[0]!r}"

    check_equal("conditional rates", outcome.returned, expected, case, role=role)
