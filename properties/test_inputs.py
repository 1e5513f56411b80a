"""What the call must not touch: its inputs, and through the result, nothing it was given
(SPEC.md step 6)."""

import pytest
import torch
from hypothesis import given

from properties import support
from simacc.harness.assertions import check, check_equal

pytestmark = pytest.mark.contracts("eagle", "legacy")

INPUTS = ("accept_index", "candidates", "target_predict")


@given(case=support.eagle_cases())
def test_inputs_are_never_written(impl, device, case):
    support.check_inputs_untouched(impl.run(case, device), case, device, INPUTS)


@given(case=support.eagle_cases())
def test_result_is_fresh_across_calls(impl, device, case):
    first, second = impl.run(case, device), impl.run(case, device)
    support.check_fresh_result(second, first, case)


@given(case=support.eagle_cases())
def test_result_aliases_no_input(impl, device, case):
    outcome = impl.run(case, device)
    returned = outcome.returned
    check(isinstance(returned, torch.Tensor), "type(index)", type(returned).__name__, "Tensor", case)
    args = {name: arg for name, arg in outcome.args.items() if isinstance(arg, torch.Tensor)}
    for name, arg in args.items():
        check(not support.shares_storage(returned, arg), "index shares storage with", name, "nothing", case)
    after = {name: arg.clone() for name, arg in args.items()}
    returned.add_(1)
    for name, snapshot in after.items():
        check_equal(f"{name} after writing into the index", args[name], snapshot, case)
