"""Fixed token mode: the backward-compatible behaviour (CONTRACT.md §4.4, §6.4)."""

import torch

import simacc as sa
from simacc import strategies as sx
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import seeded
from simacc.properties import support

CONTRACTS = sx.EAGLE_LAYOUTS
fixed_cases = sx.eagle_cases(modes=("fixed",))


@claim(*CONTRACTS, case=fixed_cases)
def test_fixed_mode_fills_predict_with_the_fixed_id(simacc, case):
    """Fixed mode writes the fixed id to every element of predict, accepted or not (§4.4, §5.2)."""
    predict = simacc.run(case).args["predict"]
    expected = torch.full(tuple(case.predict.values.shape), simacc.impl.fixed_token_id, dtype=torch.int32,
                          device=predict.device)
    check_equal("predict", predict, expected, case, role=EVERY_ELEMENT)


EVERY_ELEMENT = lambda index: "fixed mode writes the fixed id to every element, accepted or not"  # noqa: E731


def legacy_run(case, device):
    """The legacy reference on ``case`` from the same seed: its result, buffers and the
    generator state afterwards."""
    args = case.args(device)
    seeded(torch.default_generator, case.seed)
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
    """Fixed mode gives the legacy function's index, predict, counts and generator state (§6.4)."""
    outcome = simacc.run(case)
    returned, args, rng_after = legacy_run(case, outcome.device)
    length = case.expected_length()
    check_equal("index", outcome.returned, returned, case, length, support.index_roles(case, length))
    check_equal("predict", outcome.args["predict"], args["predict"].fill_(simacc.impl.fixed_token_id), case,
                role=EVERY_ELEMENT)
    check_equal("num_correct_drafts", outcome.args["num_correct_drafts"], args["num_correct_drafts"], case,
                role=support.count_role)
    same = torch.equal(outcome.rng_after, rng_after)
    check(same, "CPU generator state after the call", "a different state", "the legacy code's state", case)
