"""Why the real mode exists: on a chain whose target agrees with exactly the first ``k``
drafts, real-mode simulation at ``L = k + 1`` is greedy verification (CONTRACT.md §1.3).
That fixed mode differs is shown by a self-test of ``chain_cases`` in
``tests/contract/test_strategies.py``."""

import torch

import simacc as sa
from simacc import strategies as sx
from simacc.harness.judging.assertions import check_equal
from simacc.harness.judging.catalogue import claim
from simacc.properties import support


def greedy_run(case, device):
    """``verify_chain_greedy`` on fresh copies of the case's buffers:
    ``(accept_index, accept_token_num, predict)`` after it."""
    args = case.args(device)
    index, counts, predict = args["accept_index"], args["num_correct_drafts"], args["predict"]
    sa.verify_chain_greedy(args["candidates"], args["target_predict"], predict, index, counts)
    return index, counts, predict


@claim("eagle", case=sx.chain_cases())
def test_real_mode_equals_greedy_verification(simacc, case):
    """On a chain the target agrees with for k drafts, real mode at L = k + 1 is greedy verification (§1.3)."""
    outcome = simacc.run(case)
    index, counts, predict = greedy_run(case, outcome.device)
    length = case.expected_length()
    check_equal("index", outcome.returned, index, case, length, support.index_roles(case, length))
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], counts.to(torch.int32), case, length,
                support.count_role)
    check_equal("predict", outcome.args["predict"], predict, case, length, support.predict_roles(case, length))
