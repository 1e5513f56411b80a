"""Bad arguments (SPEC.md step 0, "Length sampling" and "The caller's checks").

The implementation must raise before it writes or draws anything. For a length that is not
``> 0`` any exception will do (upstream asserts, SPEC.md says a harness should not require a
type). An unknown method must be a ``ValueError`` that names the method, as SPEC.md
specifies and every upstream path does (they share the sampler): a caller that catches it
to report a bad setting must be able to rely on it (issue #13). Token-mode validation is
the caller's job upstream, so those properties check simacc's own caller checks, not the
implementation under test.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import simacc as sa
import strategies as sx
from properties import support
from simacc.harness.assertions import check

pytestmark = pytest.mark.contracts("eagle", "legacy")


@given(case=support.eagle_cases(acc_lens=sx.bad_acc_lens()))
def test_rejects_nonpositive_or_nan_length_before_writing(impl, device, case):
    support.check_rejected_untouched(impl.attempt(case, device), case)


@given(case=support.eagle_cases(methods=sx.bad_methods()))
def test_rejects_unknown_method_before_writing(impl, device, case):
    outcome = impl.attempt(case, device)
    support.check_rejected_untouched(outcome, case, naming=case.simulate_acc_method)


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
