"""Fixed token mode: the backward-compatible behaviour (SPEC.md step 4 and "Legacy
behaviour")."""

import pytest
import torch
from hypothesis import given

import simacc as sa
import strategies as sx
from properties import support
from simacc.harness.assertions import check, check_equal

pytestmark = pytest.mark.contracts("eagle", "legacy")


@given(case=sx.eagle_cases(modes=("fixed",)))
def test_fixed_mode_fills_predict_with_the_fixed_id(impl, device, case):
    predict = impl.run(case, device).args["predict"]
    expected = torch.full(tuple(case.predict.values.shape), support.FIXED_ID, dtype=torch.int32, device=device)
    check_equal("predict", predict, expected, case)


def legacy_run(case, device):
    """The legacy reference on ``case`` from the same seed: its result, buffers and the
    generator state afterwards."""
    args = case.args(device)
    torch.default_generator.manual_seed(case.seed)
    returned = sa.legacy_generate_simulated_accept_index(
        accept_index=args["accept_index"],
        predict=args["predict"],
        num_correct_drafts=args["num_correct_drafts"],
        bs=case.bs,
        spec_steps=case.spec_steps,
        simulate_acc_len=case.simulate_acc_len,
        simulate_acc_method=case.simulate_acc_method,
    )
    return returned, args, torch.get_rng_state()


@pytest.mark.levels("exact")
@given(case=sx.eagle_cases(modes=("fixed",)))
def test_fixed_mode_is_byte_identical_to_legacy(impl, device, case):
    outcome = impl.run(case, device)
    returned, args, rng_after = legacy_run(case, device)
    check_equal("index", outcome.returned, returned, case)
    check_equal("predict", outcome.args["predict"], args["predict"], case)
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], args["num_correct_drafts"], case)
    same = torch.equal(outcome.rng_after, rng_after)
    check(same, "CPU generator state after the call", "a different state", "the legacy code's state", case)
