"""The returned index and ``num_correct_drafts`` (CONTRACT.md §4.2, §4.3)."""

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

CONTRACTS = sx.EAGLE_LAYOUTS
cases = support.eagle_cases_for_impl()


@claim(*CONTRACTS, case=cases)
def test_index_is_a_fresh_int32_tensor_of_shape_bs_by_width(simacc, case):
    """The result is an int32 tensor of shape (bs, W) on the inputs' own device (§4.2)."""
    support.check_index_type(simacc.run(case), case, "accept_index")


@claim(*CONTRACTS, case=cases)
def test_index_rows_are_root_plus_range_then_minus_one(simacc, case):
    """Row i of the index is root_i + 0..L-1, then -1 (§4.2)."""
    outcome = simacc.run(case)
    length = support.length_of(simacc, outcome, case, "num_correct_drafts")
    support.check_index_rows(outcome.returned, case, length, outcome.device)


@claim(*CONTRACTS, case=cases)
def test_num_correct_drafts_is_length_minus_one(simacc, case):
    """Every element of num_correct_drafts becomes L - 1: drafts only, not the bonus (§4.3)."""
    outcome = simacc.run(case)
    length = support.length_of(simacc, outcome, case, "index")
    support.check_counts(outcome.args["num_correct_drafts"], case, length, outcome.device)
