"""What the call must not touch: its inputs, and through the result, nothing it was given
or returned before (CONTRACT.md §4.6, §11.2). The result is written into only in the grad mode
it was made in (§11.1): an implementation decorated with ``torch.inference_mode()`` returns an
inference tensor, which a server in that mode may update and one outside it may not. Both
claims about the result run in every grad mode: a port whose buffers depend on the mode (a
static output kept under no_grad, sglang's default, past some batch size) passed a check that
judged freshness under inference mode alone."""

import torch

from simacc import strategies as sx
from simacc.harness.config import grad_modes
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

CONTRACTS = sx.EAGLE_LAYOUTS
INPUTS = ("accept_index", "candidates", "target_predict")
OUTPUTS = ("predict", "num_correct_drafts")  # written, within their views only
cases = support.eagle_cases_for_impl()


@claim(*CONTRACTS, case=cases)
def test_inputs_are_never_written(simacc, case):
    """accept_index, candidates and target_predict are never written, nor the gaps of strided views, theirs or predict's and num_correct_drafts' (§4.6)."""
    outcome = simacc.run(case)
    support.check_inputs_untouched(outcome, case, INPUTS)
    support.check_nothing_outside_views(outcome, case, OUTPUTS)


@claim(*CONTRACTS, across_contexts=True, case=cases)
def test_result_is_fresh_across_calls(simacc, case):
    """The index shares storage with no argument and with none of the 7 results before it (32 in about one case in ten), still held, in each grad mode (§4.6, §11.2, §11.5)."""
    support.check_fresh_across_calls(simacc, case)


@claim(*CONTRACTS, across_contexts=True, case=cases)
def test_result_aliases_no_input(simacc, case):
    """Writing into the returned index changes no argument of the call (§4.6)."""
    outcome = simacc.run(case)
    returned = outcome.returned
    check(isinstance(returned, torch.Tensor), "type(index)", type(returned).__name__, "Tensor", case)
    args = {name: arg for name, arg in outcome.args.items() if isinstance(arg, torch.Tensor)}
    for name, arg in args.items():
        check(not support.shares_storage(returned, arg), "index shares storage with", name, "nothing", case)
    after = {name: arg.clone() for name, arg in args.items()}
    with grad_modes.of_tensor(returned):
        returned.add_(1)
    for name, snapshot in after.items():
        check_equal(f"{name} after writing into the index", args[name], snapshot, case,
                    role=lambda index: "an argument, unchanged by a write into the result")
