"""Real-draft-token mode: which ``predict`` slots get which tokens (CONTRACT.md §4.5)."""

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

real_cases = sx.eagle_cases(modes=("real-draft-token",))


@claim(sx.EAGLE, case=real_cases)
def test_real_mode_writes_drafts_then_bonus_at_accepted_slots(simacc, case):
    """Real mode writes candidates[i, 1:L], then the bonus target_predict[i, L-1], at row i's slots (§4.5)."""
    outcome = simacc.run(case)
    length = support.length_of(simacc, outcome, case, "num_correct_drafts")
    tokens = support.drafts_then_bonus(case.candidates.values, case.target_predict.values, length)
    support.check_accepted_slots("predict", outcome.args["predict"], support.accepted_positions(case, length), tokens,
                                 case, length)


@claim(sx.EAGLE, case=real_cases)
def test_real_mode_leaves_other_predict_slots_unchanged(simacc, case):
    """Real mode leaves every predict element outside the accepted slots as it was (§4.5)."""
    outcome = simacc.run(case)
    length = support.length_of(simacc, outcome, case, "num_correct_drafts")
    positions = support.accepted_positions(case, length)
    support.check_other_slots_unchanged("predict", outcome.args["predict"], case.predict.values, positions, case,
                                        length)
