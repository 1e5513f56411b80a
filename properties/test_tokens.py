"""Real-draft-token mode: which ``predict`` slots get which tokens (SPEC.md step 5)."""

import pytest
from hypothesis import given

import strategies as sx
from properties import support
from simacc.harness.assertions import check_equal

pytestmark = pytest.mark.contracts("eagle")

real_cases = sx.eagle_cases(modes=("real-draft-token",))


@given(case=real_cases)
def test_real_mode_writes_drafts_then_bonus_at_accepted_slots(impl, device, case):
    outcome = impl.run(case, device)
    predict = outcome.args["predict"]
    length = support.length_of(impl, outcome, case, "num_correct_drafts")
    slots = support.accepted_slots(case, length)
    expected = support.drafts_then_bonus(case.candidates.values, case.target_predict.values, length)
    got = predict.cpu()[slots.reshape(-1)].reshape(slots.shape)
    check_equal("predict at the accepted slots (row, j)", got, expected.int(), case)


@given(case=real_cases)
def test_real_mode_leaves_other_predict_slots_unchanged(impl, device, case):
    outcome = impl.run(case, device)
    got = outcome.args["predict"].cpu()
    slots = support.accepted_slots(case, support.length_of(impl, outcome, case, "num_correct_drafts")).reshape(-1)
    expected = case.predict.values.clone()
    expected[slots] = got[slots]  # the accepted slots are another property's business
    check_equal("predict", got, expected, case)
