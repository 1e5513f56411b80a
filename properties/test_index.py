"""The returned index and ``num_correct_drafts`` (SPEC.md steps 2-3)."""

import pytest
import torch
from hypothesis import given

from properties import support
from simacc.harness.assertions import check_equal

pytestmark = pytest.mark.contracts("eagle", "legacy")


@given(case=support.eagle_cases())
def test_index_is_a_fresh_int32_tensor_of_shape_bs_by_width(impl, device, case):
    support.check_index_type(impl.run(case, device), case, "accept_index")


@given(case=support.eagle_cases())
def test_index_rows_are_root_plus_range_then_minus_one(impl, device, case):
    outcome = impl.run(case, device)
    length = support.length_of(impl, outcome, case, "num_correct_drafts")
    check_equal("index", outcome.returned, support.expected_index(case, length).to(device), case)


@given(case=support.eagle_cases())
def test_num_correct_drafts_is_length_minus_one(impl, device, case):
    outcome = impl.run(case, device)
    length = support.length_of(impl, outcome, case, "index")
    expected = torch.full((case.bs,), length - 1, dtype=torch.int32, device=device)
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], expected, case)
