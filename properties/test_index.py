"""The returned index and ``num_correct_drafts`` (CONTRACT.md §4.2, §4.3)."""

import torch

from simacc.harness.assertions import check_equal
from simacc.harness.catalogue import claim
from simacc.properties import support

CONTRACTS = ("eagle", "legacy")
cases = support.eagle_cases_for_impl()


@claim(*CONTRACTS, case=cases)
def test_index_is_a_fresh_int32_tensor_of_shape_bs_by_width(simacc, case):
    support.check_index_type(simacc.run(case), case, "accept_index")


@claim(*CONTRACTS, case=cases)
def test_index_rows_are_root_plus_range_then_minus_one(simacc, case):
    outcome = simacc.run(case)
    length = support.length_of(simacc, outcome, case, "num_correct_drafts")
    check_equal("index", outcome.returned, support.expected_index(case, length).to(outcome.device), case)


@claim(*CONTRACTS, case=cases)
def test_num_correct_drafts_is_length_minus_one(simacc, case):
    outcome = simacc.run(case)
    length = support.length_of(simacc, outcome, case, "index")
    expected = torch.full((case.bs,), length - 1, dtype=torch.int32, device=outcome.device)
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], expected, case)
