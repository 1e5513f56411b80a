"""Fixed token mode: the backward-compatible behaviour (CONTRACT.md §4.4, §6.4)."""

import torch

import simacc as sa
from simacc import strategies as sx
from simacc.harness.assertions import check, check_equal
from simacc.harness.catalogue import claim

CONTRACTS = ("eagle", "legacy")
fixed_cases = sx.eagle_cases(modes=("fixed",))


@claim(*CONTRACTS, case=fixed_cases)
def test_fixed_mode_fills_predict_with_the_fixed_id(simacc, case):
    predict = simacc.run(case).args["predict"]
    expected = torch.full(tuple(case.predict.values.shape), simacc.impl.fixed_token_id, dtype=torch.int32,
                          device=predict.device)
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


@claim(*CONTRACTS, levels=("exact",), case=fixed_cases)
def test_fixed_mode_is_byte_identical_to_legacy(simacc, case):
    outcome = simacc.run(case)
    returned, args, rng_after = legacy_run(case, outcome.device)
    check_equal("index", outcome.returned, returned, case)
    check_equal("predict", outcome.args["predict"], args["predict"].fill_(simacc.impl.fixed_token_id), case)
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], args["num_correct_drafts"], case)
    same = torch.equal(outcome.rng_after, rng_after)
    check(same, "CPU generator state after the call", "a different state", "the legacy code's state", case)
