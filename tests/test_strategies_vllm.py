"""Self-tests of the vLLM strategies: their batches are coherent (CONTRACT.md §16, §17), they
reach what their docstrings promise, reject bad arguments by quoting them, and shrink where
they say."""

import pytest
import torch
from test_strategies import minimal, reaches

from simacc.contract import vllm as ref
from simacc.strategies import vllm as sv


def placeholder_at(batch, where):
    """Whether some request of a decision batch has a -1 as its first, a middle or its last draft."""
    start = 0
    for n in batch.num_draft_tokens:
        drafts = batch.draft_token_ids[start : start + n].tolist()
        start += n
        if n >= 3 and {"first": drafts[0], "middle": min(drafts[1:-1], default=0), "last": drafts[-1]}[where] == -1:
            return True
    return False


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_decision_batches_reach_placeholders_anywhere(where):
    assert reaches(sv.decision_batches(max_bs=64), lambda b: placeholder_at(b, where))


@pytest.mark.parametrize("what, predicate", [
    ("a server's batch", lambda b: len(b.num_draft_tokens) > 256),
    ("a request without drafts beside one with drafts", lambda b: 0 in b.num_draft_tokens and sum(b.num_draft_tokens)),
    ("greedy and random rows together", lambda b: 0 < int(b.is_greedy.sum()) < len(b.num_draft_tokens)),
    ("a rate of 0 after a rate of 1", lambda b: 1.0 in b.rates and 0.0 in b.rates),
    ("a uniform exactly at a rate inside (0, 1)", lambda b: bool(
        set(b.uniform_probs.tolist()) & set(ref.conditional_rates(unconditional_rates=b.rates).double().tolist())
        - {0.0, 1.0})),
])
def test_decision_batches_reach(what, predicate):
    assert reaches(sv.decision_batches(), predicate), what


def test_decision_batches_are_coherent_and_valid_for_the_reference():
    def coherent(batch):
        counts = batch.num_draft_tokens
        assert len(batch.draft_token_ids) == sum(counts) and max(counts, default=0) <= len(batch.rates)
        assert tuple(batch.bonus_token_ids.shape) == (len(counts), 1)
        out = ref.synthetic_accept(**batch.kwargs())
        assert tuple(out.shape) == (len(counts), max(counts, default=0) + 1)
        return False

    assert not reaches(sv.decision_batches(max_bs=300), coherent, examples=60)


def test_v2_batches_are_coherent():
    def coherent(batch):
        sizes = batch.cu_num_logits.diff()
        assert int(batch.cu_num_logits[0]) == 0 and bool(((sizes >= 1) & (sizes <= len(batch.rates) + 1)).all())
        assert len(set(batch.seed.tolist())) == len(batch.seed)  # distinct seeds: independent requests
        for r, n in enumerate(batch.num_draft_tokens):  # positions run on within a request
            start = int(batch.cu_num_logits[r])
            assert batch.pos[start : start + n + 1].diff().eq(1).all()
        return False

    assert not reaches(sv.v2_batches(max_bs=300), coherent, examples=60)


def test_v1_batches_reach_seeded_requests_without_drafts_in_a_sampling_batch():
    assert reaches(sv.v1_batches(max_bs=64), lambda b: not bool(b.is_greedy.all()) and any(
        b.num_draft_tokens[r] == 0 for r in b.generator_seeds))


@pytest.mark.parametrize("strategy", [sv.decision_batches, sv.v1_batches, sv.v2_batches])
def test_batches_shrink_to_one_greedy_request_with_k_1_and_rates_of_0(strategy):
    batch = minimal(strategy(max_bs=16, max_k=4))
    greedy = batch.temperature == 0 if isinstance(batch, sv.V2Batch) else batch.is_greedy
    assert len(batch.num_draft_tokens) == 1 and batch.rates == (0.0,) and bool(greedy.all())


def test_settings_shrink_to_k_1_and_a_rate_of_0():
    setting = minimal(sv.synthetic_settings())
    assert setting.num_speculative_tokens == 1 and setting.synthetic_acceptance_rates == (0.0,)


@pytest.mark.parametrize("call, quoted", [
    (lambda: sv.decision_batches(max_k=0), "max_k=0"),
    (lambda: sv.v2_batches(max_k=9), "max_k=9"),
    (lambda: sv.acceptance_rates(0), "k=0"),
    (lambda: sv.decision_batches(min_bs=5, max_bs=2), "max_bs=2 < min_bs=5"),
])
def test_bad_arguments_are_rejected_and_quoted(call, quoted):
    with pytest.raises(ValueError, match=quoted):
        call()


def test_a_batch_builds_its_arguments_on_another_device():
    batch = sv.V1Batch(num_draft_tokens=(1,), draft_token_ids=torch.tensor([3], dtype=torch.int32),
                       target_logits=torch.zeros(1, 4), bonus_token_ids=torch.tensor([[2]]),
                       is_greedy=torch.tensor([False]), generator_seeds={}, rates=(0.5,), seed=0)
    kwargs = batch.kwargs("meta")  # the meta device has no generators: none are asked for here
    assert kwargs["target_logits"].device.type == "meta" and kwargs["synthetic_conditional_rates"].device.type == "meta"
    assert isinstance(kwargs["num_draft_tokens"], list) and torch.equal(batch.kwargs()["is_greedy"], batch.is_greedy)


def test_a_batch_builds_fresh_generators_from_its_seeds():
    batch = sv.V1Batch(num_draft_tokens=(1,), draft_token_ids=torch.tensor([3], dtype=torch.int32),
                       target_logits=torch.zeros(1, 4), bonus_token_ids=torch.tensor([[2]]),
                       is_greedy=torch.tensor([False]), generator_seeds={0: 5}, rates=(0.5,), seed=0)
    first, second = batch.kwargs()["generators"][0], batch.kwargs()["generators"][0]
    assert first is not second and torch.equal(first.get_state(), torch.Generator().manual_seed(5).get_state())
