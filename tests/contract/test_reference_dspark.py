"""Example tests that pin hand-computed outputs of DSpark's references (CONTRACT.md §19-§21), and
sglang 0.5.23's own DSpark files on the same examples (marked ``sglang``; skipped where its kernel
files are not on the path).

The accept's example is §21.3's: two rows of an anchor and three drafts, row 0's target agreeing
with its first draft only, row 1's with all three, so the real counts are 1 and 3; each simulated
count commits the drafts before it and the target's token at it.
"""

import random

import pytest
import torch
from tests.contract.literals import assert_tensor, i32, i64

from simacc.contract import dspark, dspark_glue

CANDIDATES = [[10, 11, 12, 13], [20, 21, 22, 23]]
TARGET = [[11, 99, 98, 97], [21, 22, 23, 24]]
# simulated count: (bonus, out_tokens) the contract requires; None: the real greedy accept (counts 1 and 3)
EXPECTED = {
    None: ([99, 24], [[11, 99, 13, 0], [21, 22, 23, 24]]),
    0: ([11, 21], [[11, 12, 13, 0], [21, 22, 23, 0]]),
    1: ([99, 22], [[11, 99, 13, 0], [21, 22, 23, 0]]),
    2: ([98, 23], [[11, 12, 98, 0], [21, 22, 23, 0]]),
    3: ([97, 24], [[11, 12, 13, 97], [21, 22, 23, 24]]),
}
# what sglang's greedy paths without the fold write instead: the target's token at the real counts (99, 24),
# at the simulated position (§21.3); the same as the contract's only where the two counts agree
SGLANG_TOKENS = {
    None: [[11, 99, 13, 0], [21, 22, 23, 24]],
    0: [[99, 12, 13, 0], [24, 22, 23, 0]],
    1: [[11, 99, 13, 0], [21, 24, 23, 0]],
    2: [[11, 12, 99, 0], [21, 22, 24, 0]],
    3: [[11, 12, 13, 99], [21, 22, 23, 24]],
}


def accept_kwargs(simulated=None, spare=1, **extra):
    rows = 2 + spare
    return {**dict(
        candidates=i64(CANDIDATES), target_predict=i64(TARGET).reshape(-1),
        seq_lens=i64([100, 200]), verify_lens=i64([4, 2]), gate=i32([1]),
        correct_len_out=i64([-9] * rows), bonus_out=i64([-9] * rows), cap_trim_lens_out=i32([-9] * rows),
        commit_lens_out=i32([-9] * rows), new_seq_lens_out=i64([-9] * rows),
        out_tokens_out=torch.full((rows, 4), -9, dtype=torch.int64),
        simulated_correct_len=None if simulated is None else i64([simulated]),
        gated_commit_lens_out=i32([-9] * rows)), **extra}


@pytest.mark.parametrize("simulated", list(EXPECTED), ids=lambda s: "real" if s is None else f"sim {s}")
def test_the_accept_commits_the_drafts_then_the_targets_token_at_the_count(simulated):
    kwargs = accept_kwargs(simulated)
    assert dspark.static_accept_tail(**kwargs) is None
    correct = [1, 3] if simulated is None else [simulated] * 2
    bonus, tokens = EXPECTED[simulated]
    assert_tensor("correct_len_out", kwargs["correct_len_out"], i64([*correct, -9]))
    assert_tensor("bonus_out", kwargs["bonus_out"], i64([*bonus, -9]))
    assert_tensor("out_tokens_out", kwargs["out_tokens_out"], i64([*tokens, [-9] * 4]))
    assert_tensor("commit_lens_out", kwargs["commit_lens_out"], i32([c + 1 for c in correct] + [-9]))
    assert_tensor("new_seq_lens_out", kwargs["new_seq_lens_out"], i64([101 + correct[0], 201 + correct[1], -9]))
    assert_tensor("cap_trim_lens_out", kwargs["cap_trim_lens_out"], i32([0, 0, -9]))
    assert_tensor("gated_commit_lens_out", kwargs["gated_commit_lens_out"],
                  i32([min(correct[0] + 1, 4), min(correct[1] + 1, 2), -9]))


def test_a_supplied_bonus_replaces_the_targets_and_needs_no_target():
    kwargs = accept_kwargs(2, target_predict=None, bonus_in=i64([555, 666, 777]))
    dspark.static_accept_tail(**kwargs)
    assert_tensor("out_tokens_out", kwargs["out_tokens_out"][:2], i64([[11, 12, 555, 0], [21, 22, 666, 0]]))


def test_the_partial_maxima_give_the_largest_value_and_ties_the_lowest_index():
    parts = (torch.tensor([[1.0, 3.0, 3.0], [2.0, 0.5, 2.0]]), i32([[7, 9, 4], [5, 1, 8]]), 16)
    kwargs = accept_kwargs(1, spare=0, bonus_parts=parts)
    dspark.static_accept_tail(**kwargs)
    assert_tensor("bonus_out", kwargs["bonus_out"], i64([4, 5]))


@pytest.mark.parametrize("change, match", [
    (dict(target_predict=None), "target_predict may be None"),
    (dict(simulated=4), r"simulated_correct_len must lie in \[0, gamma = 3\]"),
    (dict(bonus_in=i64([1, 2]), bonus_parts=(torch.zeros(2, 1), i32([[0], [0]]), 4)), "give one at most"),
    (dict(spare=-1), "out_tokens_out must have at least bs = 2 rows"),
])
def test_the_accept_rejects_what_it_cannot_run_before_writing(change, match):
    simulated, spare = change.pop("simulated", 1), change.pop("spare", 1)
    kwargs = {**accept_kwargs(simulated, spare=max(spare, 0)), **change}
    if spare < 0:
        kwargs["out_tokens_out"] = kwargs["out_tokens_out"][:1]
    before = {k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    with pytest.raises(ValueError, match=match):
        dspark.static_accept_tail(**kwargs)
    assert all(torch.equal(kwargs[k], v) for k, v in before.items())


@pytest.mark.parametrize("x, gamma, count", [(2.0, 3, 1), (9.0, 3, 3), (0.0, 3, 0), (-4.5, 2, 0), (1.0, 0, 0)])
def test_the_step_holds_the_correct_draft_count(x, gamma, count):
    buffer = i64([-1])
    before = torch.get_rng_state()
    dspark.begin_simulated_step(simulated_correct_len=buffer, simulate_acc_len=x, gamma=gamma)
    assert_tensor("simulated_correct_len", buffer, i64([count]))
    assert torch.equal(torch.get_rng_state(), before) == (x >= gamma + 1 or gamma == 0)  # a draw below the top


def bonus_kwargs(temperatures, logits=((0.0, 5.0, 1.0), (3.0, 0.0, 1.0), (1.0, 1.0, 9.0), (0.0, 2.0, 0.0))):
    return dict(target_logits=torch.tensor(logits), correct_len=i64([1, 0]),
                temperatures=torch.tensor(temperatures).reshape(-1, 1), bs=2, rows_per_request=2)


def test_a_greedy_bonus_is_the_argmax_of_each_requests_row():
    assert_tensor("bonus", dspark.simulated_bonus_sample(**bonus_kwargs([0.0, -1.0])), i64([0, 2]))


def test_the_bonus_takes_one_seed_from_pythons_generator_and_nothing_from_torchs():
    random.seed(5)
    torch_state = torch.get_rng_state()
    first = dspark.simulated_bonus_sample(**bonus_kwargs([1.0, 1.0]))
    after = random.getstate()
    random.seed(5)
    random.getrandbits(dspark.SEED_BITS)
    assert after == random.getstate() and torch.equal(torch_state, torch.get_rng_state())
    random.seed(5)
    assert_tensor("bonus, the same seed again", dspark.simulated_bonus_sample(**bonus_kwargs([1.0, 1.0])), first)


# -- sglang 0.5.23's own files (marked sglang) --------------------------------------------------------------------

needs_sglang = pytest.mark.skipif(dspark_glue.unavailable() is not None, reason=str(dspark_glue.unavailable()))


@pytest.mark.sglang
@needs_sglang
@pytest.mark.parametrize("glue", ["static_accept_tail_torch", "static_accept_tail_triton"])
@pytest.mark.parametrize("simulated", list(SGLANG_TOKENS), ids=lambda s: "real" if s is None else f"sim {s}")
def test_sglang_tail_writes_the_bonus_of_the_real_count_at_the_simulated_position(glue, simulated, monkeypatch):
    """The finding of §21.3, from sglang's own files: without a supplied bonus its fused tail (the
    torch reference and the Triton kernel, interpreted) takes the target's token at the real count."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when the kernel's file is first loaded
    kwargs = accept_kwargs(simulated)
    getattr(dspark_glue, glue)(**kwargs)
    assert_tensor("bonus_out", kwargs["bonus_out"][:2], i64([99, 24]))
    assert_tensor("out_tokens_out", kwargs["out_tokens_out"][:2], i64(SGLANG_TOKENS[simulated]))
    assert (SGLANG_TOKENS[simulated] == EXPECTED[simulated][1]) == (simulated is None)


@pytest.mark.sglang
@needs_sglang
def test_sglang_graph_bonus_takes_the_argmax_of_the_simulated_row_when_greedy(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert_tensor("bonus", dspark_glue.simulated_bonus_sample_graph(**bonus_kwargs([0.0, 0.0])), i64([0, 2]))
