"""Bad arguments (SPEC.md step 0 and "The caller's checks").

The implementation must raise (any exception type) before it writes or draws anything.
Token-mode validation is the caller's job upstream, so those properties check simacc's own
caller checks, not the implementation under test.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import simacc as sa
import strategies as sx
from properties import support
from simacc.assertions import check, check_equal

pytestmark = pytest.mark.contracts("eagle", "legacy")


def check_rejected_untouched(outcome, case):
    """The call raised, left every tensor argument as it was and drew nothing."""
    __tracebackhide__ = True
    check(outcome.error is not None, "the call", f"returned {outcome.returned!r}", "an exception", case)
    for name, before in outcome.before.items():
        check_equal(f"{name} after the rejected call", outcome.args[name], before, case)
    check(not outcome.draws_consumed, "CPU generator state after the rejected call", "advanced", "unchanged", case)


@given(case=support.eagle_cases(acc_lens=sx.bad_acc_lens()))
def test_rejects_nonpositive_or_nan_length_before_writing(impl, device, case):
    check_rejected_untouched(impl.attempt(case, device), case)


@given(case=support.eagle_cases(methods=sx.bad_methods()))
def test_rejects_unknown_method_before_writing(impl, device, case):
    check_rejected_untouched(impl.attempt(case, device), case)


@pytest.mark.contracts("eagle")
@given(mode=sx.bad_token_modes(), topk=st.integers(1, 8))
def test_caller_rejects_unknown_token_mode(mode, topk):
    with pytest.raises(ValueError) as raised:
        sa.check_token_mode(mode, topk)
    message = str(raised.value)
    clear = repr(mode) in message and all(repr(m) in message for m in sa.TOKEN_MODES)
    check(clear, "the error message", message, f"one naming {mode!r} and the allowed modes {sa.TOKEN_MODES}", None)


@pytest.mark.contracts("eagle")
@given(topk=st.integers(2, 64) | st.integers(-4, 0))
def test_caller_rejects_real_mode_on_trees(topk):
    with pytest.raises(ValueError) as raised:
        sa.check_token_mode("real-draft-token", topk)
    message = str(raised.value)
    check(f"topk={topk}" in message, "the error message", message, f"one naming topk={topk}", None)
