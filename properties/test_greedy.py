"""Why the real mode exists: on a chain whose target agrees with exactly the first ``k``
drafts, real-mode simulation at ``L = k + 1`` is greedy verification (SPEC.md, "Why the
real mode exists"). That fixed mode differs is shown by a self-test of ``chain_cases`` in
``tests/test_strategies.py``."""

import pytest
import torch
from hypothesis import given

import simacc as sa
import strategies as sx
from simacc.harness.assertions import check_equal

pytestmark = pytest.mark.contracts("eagle")


def greedy_run(case, device):
    """``verify_chain_greedy`` on fresh copies of the case's buffers:
    ``(accept_index, accept_token_num, predict)`` after it."""
    args = case.args(device)
    index, counts, predict = args["accept_index"], args["num_correct_drafts"], args["predict"]
    sa.verify_chain_greedy(args["candidates"], args["target_predict"], predict, index, counts)
    return index, counts, predict


@given(case=sx.chain_cases())
def test_real_mode_equals_greedy_verification(impl, device, case):
    outcome = impl.run(case, device)
    index, counts, predict = greedy_run(case, device)
    check_equal("index", outcome.returned, index, case)
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], counts.to(torch.int32), case)
    check_equal("predict", outcome.args["predict"], predict, case)
