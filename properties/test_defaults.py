"""Defaults are part of the contract (issue #13): sglang's caller passes the length and the
token mode but never the method, and callers older than the token modes pass no mode, so
the function's defaults decide what they get. A call that leaves an argument out must do
exactly what the call passing its documented default does: ``match-expected`` and
``fixed``, or what ``SGLANG_SIMULATE_ACC_METHOD`` / ``SGLANG_SIMULATE_ACC_TOKEN_MODE`` say
(upstream reads them at import into the signature); for DFLASH a missing
``next_token_logits`` is ``None``. The call with every argument is checked by the rest of
the catalogue."""

import dataclasses

import pytest
from hypothesis import given

import strategies as sx
from properties import support

# Two calls are compared output for output: that needs the documented draws (exact level).
pytestmark = [pytest.mark.contracts("eagle", "legacy"), pytest.mark.levels("exact")]


def check_defaults_apply(impl, device, case):
    __tracebackhide__ = True
    if not case.omitted:
        pytest.skip("this signature has no argument with a default")
    left_out = impl.run(case, device)
    passed = impl.run(dataclasses.replace(case, omitted=()), device)
    support.check_same_outputs(f"with {', '.join(case.omitted)} left out", left_out, passed, case)


@given(case=support.defaulted_eagle_cases())
def test_omitted_arguments_take_their_documented_defaults(impl, device, case):
    check_defaults_apply(impl, device, case)


@pytest.mark.contracts("dflash")
@given(case=sx.dflash_cases().filter(lambda c: c.next_token_logits is None).map(
    lambda c: dataclasses.replace(c, omitted=("next_token_logits",))))
def test_dflash_omitted_arguments_take_their_documented_defaults(impl, device, case):
    check_defaults_apply(impl, device, case)
