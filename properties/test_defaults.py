"""Defaults are part of the contract (CONTRACT.md §5.1): sglang's caller passes the length
and the token mode but never the method, and callers older than the token modes pass no mode,
so the function's defaults decide what they get. A call that leaves an argument out must do
exactly what the call passing its documented default does: ``match-expected`` and ``fixed``,
or what ``SGLANG_SIMULATE_ACC_METHOD`` / ``SGLANG_SIMULATE_ACC_TOKEN_MODE`` say (upstream
reads them at import into the signature); for DFLASH a missing ``next_token_logits`` is
``None``. The call with every argument is checked by the rest of the catalogue.

Two calls are compared output for output: that needs the documented draws (exact level).
"""

import dataclasses

import pytest

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

logits_left_out = sx.dflash_cases().filter(lambda c: c.next_token_logits is None).map(
    lambda c: dataclasses.replace(c, omitted=("next_token_logits",)))


def check_defaults_apply(simacc, case):
    __tracebackhide__ = True
    if not case.omitted:
        pytest.skip("this signature has no argument with a default")
    left_out = simacc.run(case)
    passed = simacc.run(dataclasses.replace(case, omitted=()))
    support.check_same_outputs(f"with {', '.join(case.omitted)} left out", left_out, passed, case)


@claim(*sx.EAGLE_LAYOUTS, levels=("exact",), case=support.defaulted_eagle_cases)
def test_omitted_arguments_take_their_documented_defaults(simacc, case):
    """Leaving out the method or the mode does what passing its documented default does (§5.1)."""
    check_defaults_apply(simacc, case)


@claim(sx.DFLASH, levels=("exact",), case=logits_left_out)
def test_dflash_omitted_arguments_take_their_documented_defaults(simacc, case):
    """DFLASH: leaving out next_token_logits does what passing None does (§7.1)."""
    check_defaults_apply(simacc, case)
