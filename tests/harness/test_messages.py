"""Failure messages explain the bug on their own: the first line names the element, its role
(draft ``j``, the bonus, untouched, padding) and the ``L``, ``W``, ``bs`` and mode the outputs
were held to; small tensors' values follow, then the case as Hypothesis prints a falsifying
example (values for tensors up to 64 elements, a summary above)."""

import pytest
import torch

from simacc import properties, zoo
from simacc.harness.call import impl
from simacc.harness.call.runner import Runner
from simacc.harness.judging.assertions import check_equal
from simacc.harness.model import explain
from simacc.harness.model.cases import EagleCase, KernelCase, TensorArg


def chain(candidates, target, x, mode="real-draft-token", predict=(7, 8)):
    """A one-request EAGLE case with W = 2 and root 0."""
    return EagleCase(
        accept_index=TensorArg(torch.tensor([[0, -1]], dtype=torch.int32)),
        predict=TensorArg(torch.tensor(predict, dtype=torch.int32)),
        num_correct_drafts=TensorArg(torch.tensor([-3], dtype=torch.int32)),
        candidates=TensorArg(torch.tensor([candidates])),
        target_predict=TensorArg(torch.tensor([target])),
        bs=1, spec_steps=1, simulate_acc_len=x, simulate_acc_method="match-expected", simulate_acc_token_mode=mode,
        seed=0,
    )


def failure(mutant, property_id, case):
    """The message with which ``property_id`` rejects zoo entry ``mutant`` on ``case``."""
    with Runner(impl.load(zoo.ENTRIES[mutant].spec)) as runner:
        error = properties.find(property_id).replay(runner, case)
    assert error is not None
    return str(error)


def test_a_wrong_bonus_names_the_slot_its_role_the_length_the_width_the_mode_and_the_values():
    # the issue's example: the drafts' token where target_predict[0, 1] = 14 belongs
    message = failure("bonus_from_the_drafts", "real_mode_writes_drafts_then_bonus_at_accepted_slots",
                      chain([5, 3], [3, 14], 2.0))
    first, *rest = message.splitlines()
    assert first == ("predict[1]=3, but should be 14: row 0's slot j=1: the bonus, target_predict[0, 1] "
                     "[L=2, W=2, bs=1, mode real-draft-token]")
    assert rest[:2] == ["got      [3, 3]", "expected [3, 14]"]
    assert "case=EagleCase(" in message and "    target_predict=tensor([[3, 14]], dtype=int64)," in rest
    assert "    simulate_acc_len=2.0," in rest and rest[-1] == ")"


def test_a_wrong_draft_slot_is_named_as_the_draft_it_should_hold():
    message = failure("drafts_shifted_by_one", "real_mode_writes_drafts_then_bonus_at_accepted_slots",
                      chain([5, 3], [3, 14], 2.0))
    assert "predict[0]=" in message and ": row 0's slot j=0: draft 1, candidates[0, 1] [L=2," in message


def test_a_write_outside_the_accepted_slots_is_named_untouched():
    message = failure("real_mode_fills_fixed_first", "real_mode_leaves_other_predict_slots_unchanged",
                      chain([5, 3], [3, 14], 1.0))
    assert message.startswith("predict[1]=100, but should be 8: untouched: no row accepts this slot, so it keeps "
                              "its value [L=1, W=2, bs=1, mode real-draft-token]"), message


def test_an_index_past_the_length_is_named_padding():
    message = failure("pads_with_zero", "index_rows_are_root_plus_range_then_minus_one",
                      chain([5, 3], [3, 14], 1.0, mode="fixed"))
    assert message.startswith("index[0, 1]=0, but should be -1: row 0, j=1: padding (j >= L), -1 [L=1, W=2, bs=1, "
                              "mode fixed]"), message


def test_a_rejected_call_says_no_length_was_drawn():
    message = failure("no_length_check", "rejects_nonpositive_or_nan_length_before_writing",
                      chain([5, 3], [3, 14], -1.0, mode="fixed"))
    assert "[L not drawn (the call must raise first), W=2, bs=1, mode fixed]" in message.splitlines()[0]


def test_without_a_length_from_the_property_the_message_says_it_is_the_documented_draw():
    case = chain([5, 3], [3, 14], 2.0)
    assert explain.context(case) == "L=2 by the documented draw, W=2, bs=1, mode real-draft-token"
    kernel = KernelCase(*(TensorArg(torch.zeros(shape, dtype=torch.int32)) for shape in ((1, 3), (3,), (1,), (1, 3),
                                                                                        (1, 3))), 3, 2, True, 0)
    assert explain.context(kernel) == "L=2, W=3, bs=1, mode real-draft-token"


def test_a_tensor_of_more_than_64_elements_is_summarised_and_a_layout_is_named():
    big = TensorArg(torch.zeros(65, dtype=torch.int32))
    assert explain.tensor_text(big) == "Tensor[size=(65,), dtype=int32]"
    small = TensorArg(torch.arange(4).reshape(2, 2), "transposed")
    assert explain.tensor_text(small) == "tensor([[0, 1], [2, 3]], dtype=int64, layout=transposed)"


def test_the_values_of_both_tensors_follow_only_when_they_are_small():
    with pytest.raises(AssertionError) as info:
        check_equal("x", torch.zeros(65), torch.ones(65), None)
    assert str(info.value) == "x[0]=0.0, but should be 1.0"
    with pytest.raises(AssertionError) as info:
        check_equal("x", torch.zeros(2), torch.ones(2), None, role=lambda index: f"element {index[0]}")
    assert str(info.value).splitlines() == ["x[0]=0.0, but should be 1.0: element 0", "got      [0.0, 0.0]",
                                            "expected [1.0, 1.0]"]


def test_an_implementation_that_raises_gets_the_same_context_and_case():
    with Runner(impl.load(zoo.ENTRIES["tokens_written_as_int64"].spec)) as runner:
        error = properties.find("real_mode_writes_drafts_then_bonus_at_accepted_slots").replay(
            runner, chain([5, 3], [3, 14], 2.0))
    first = str(error).splitlines()[0]
    assert " raised " in first and first.endswith(" on cpu [L=2 by the documented draw, W=2, bs=1, mode "
                                                  "real-draft-token]"), first
    assert "\ncase=EagleCase(\n" in str(error)
