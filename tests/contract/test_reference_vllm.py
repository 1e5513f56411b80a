"""Self-tests of the vLLM references (CONTRACT.md §13-§18): hand-computed cases (vLLM's own
among them), properties against a per-request loop written from the contract's prose, the
law by seeded statistical tests, and, marked ``vllm``, the references against vLLM's own V1
and V2 code where it is importable (0.33.0; 0.34.0, which has V2 only: docs/vllm.md says how;
CI skips them).

Every statistical test uses a fixed seed and simacc's CDF test at a false-alarm rate of 1e-6
(:func:`simacc.harness.judging.statistics.cdf_test`): a correct reference fails one with
probability below 1e-6, and with the seeds fixed it passes or fails the same way on every run.
"""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from tests.contract.literals import assert_tensor, i32, i64

from simacc.contract import vllm as ref
from simacc.contract import vllm_glue
from simacc.contract import vllm_v2 as ref2
from simacc.harness.judging import statistics
from simacc.strategies import vllm as sv
from simacc.zoo import vllm as zoo

QUICK = settings(max_examples=25, deadline=None, database=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def follows(samples, probabilities):
    """Whether integer ``samples`` pass the CDF test against ``P(X = k)``, ``k = 0..``, at 1e-6."""
    return statistics.cdf_test(samples.tolist(), probabilities, support=range(len(probabilities))).passed


# -- §13: the settings ------------------------------------------------------------------------------


@pytest.mark.parametrize("k, length, rates", [
    (3, 2.6, [1.0, (2.6 - 1.0) - 1.0, 0.0]),  # vLLM's example: [1, 0.6, 0] (0.6 as the float64 of 2.6 - 2)
    (3, 1, [0.0, 0.0, 0.0]),
    (3, 4, [1.0, 1.0, 1.0]),
    (3, 2.0, [1.0, 0.0, 0.0]),
    (1, 1.5, [0.5]),
    (1, 2.0, [1.0]),
    (4, 3.25, [1.0, 1.0, 0.25, 0.0]),
    (7, 3.78, [1.0, 1.0, (3.78 - 1.0) - 2.0, 0.0, 0.0, 0.0, 0.0]),  # ATOM #1948's golden length
])
def test_a_length_becomes_the_minimum_variance_schedule(k, length, rates):
    got = ref.resolve_synthetic_rates(num_speculative_tokens=k, synthetic_acceptance_length=length)
    assert got == rates and all(type(p) is float for p in got)


def test_the_schedule_of_2_6_is_1_0_6_0_in_float32():
    rates = ref.resolve_synthetic_rates(num_speculative_tokens=3, synthetic_acceptance_length=2.6)
    assert_tensor("rates", torch.tensor(rates, dtype=torch.float32), torch.tensor([1.0, 0.6, 0.0]))


def test_rates_come_back_as_given():
    assert ref.resolve_synthetic_rates(num_speculative_tokens=3, synthetic_acceptance_rates=(0.9, 0.9, 0)) == [
        0.9, 0.9, 0.0]


BAD_SETTINGS = [  # id, kwargs, error, match
    ("neither", dict(num_speculative_tokens=2), ValueError, "exactly one"),
    ("both", dict(num_speculative_tokens=2, synthetic_acceptance_rates=[1, 1], synthetic_acceptance_length=2),
     ValueError, "exactly one"),
    ("too few rates", dict(num_speculative_tokens=3, synthetic_acceptance_rates=[1, 1]), ValueError, "length"),
    ("too many rates", dict(num_speculative_tokens=1, synthetic_acceptance_rates=[1, 1]), ValueError, "length"),
    ("rate above 1", dict(num_speculative_tokens=2, synthetic_acceptance_rates=[1.5, 1]), ValueError, r"\[0, 1\]"),
    ("rate below 0", dict(num_speculative_tokens=2, synthetic_acceptance_rates=[0.5, -0.1]), ValueError,
     r"\[0, 1\]"),
    ("NaN rate", dict(num_speculative_tokens=2, synthetic_acceptance_rates=[math.nan, 0]), ValueError, r"\[0, 1\]"),
    ("increasing", dict(num_speculative_tokens=3, synthetic_acceptance_rates=[0.5, 0.6, 0.1]), ValueError,
     "non-increasing"),
    ("length below 1", dict(num_speculative_tokens=2, synthetic_acceptance_length=0.99), ValueError, r"\[1, 3\]"),
    ("length above K + 1", dict(num_speculative_tokens=2, synthetic_acceptance_length=3.01), ValueError,
     r"\[1, 3\]"),
    ("NaN length", dict(num_speculative_tokens=2, synthetic_acceptance_length=math.nan), ValueError, r"\[1, 3\]"),
    ("infinite length", dict(num_speculative_tokens=2, synthetic_acceptance_length=math.inf), ValueError,
     r"\[1, 3\]"),
    ("K = 0", dict(num_speculative_tokens=0, synthetic_acceptance_length=1), ValueError, "num_speculative_tokens"),
    ("a string length", dict(num_speculative_tokens=2, synthetic_acceptance_length="2"), TypeError, "real"),
]


@pytest.mark.parametrize("kwargs, error, match", [c[1:] for c in BAD_SETTINGS], ids=[c[0] for c in BAD_SETTINGS])
def test_a_bad_setting_is_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        ref.resolve_synthetic_rates(**kwargs)


@QUICK
@given(setting=sv.synthetic_settings())
def test_resolved_rates_are_valid_and_keep_the_mean_length(setting):
    rates = ref.resolve_synthetic_rates(**setting.args("cpu"))
    assert len(rates) == setting.num_speculative_tokens
    assert all(0 <= p <= 1 for p in rates) and rates == sorted(rates, reverse=True)
    if setting.synthetic_acceptance_length is not None:  # mean acceptance length = 1 + sum p_i (§18.1)
        assert 1 + sum(rates) == pytest.approx(setting.synthetic_acceptance_length, abs=1e-12)


# -- §14: the conversion ------------------------------------------------------------------------------


CONVERSIONS = [  # unconditional -> conditional, each quotient in float64, then float32
    ([1.0, 1.0], [1.0, 1.0]),
    ([0.0, 0.0], [0.0, 0.0]),
    ([0.5], [0.5]),
    ([0.8, 0.4], [0.8, 0.5]),
    ([1.0, 0.5, 0.25], [1.0, 0.5, 0.5]),
    ([0.5, 0.0, 0.0], [0.5, 0.0, 0.0]),  # c = 0 where p_{i-1} = 0, not 0/0
    ([1.0, 0.6, 0.0], [1.0, 0.6, 0.0]),
    ([0.9, 0.9, 0.9], [0.9, 1.0, 1.0]),
    ([0.6, 0.3, 0.3, 0.0], [0.6, 0.3 / 0.6, 1.0, 0.0]),
]


@pytest.mark.parametrize("rates, expected", CONVERSIONS, ids=[str(c[0]) for c in CONVERSIONS])
def test_conditional_rates_are_quotients_of_the_unconditional_ones(rates, expected):
    got = ref.conditional_rates(unconditional_rates=rates)
    assert_tensor("conditional rates", got, torch.tensor(expected, dtype=torch.float64).to(torch.float32))


def test_conditional_rates_land_on_the_device_asked_for():
    assert ref.conditional_rates(unconditional_rates=[0.5], device="meta").device.type == "meta"


# -- §15, §16.1: the decision given the uniforms -------------------------------------------------------


def decide(counts, drafts, uniforms, rates, *, greedy=True, bonus=None, argmax=None, recovered=None):
    """``synthetic_accept`` on literal lists: the target's argmax is ``70 + t`` and the
    recovered token ``80 + t`` at flat position ``t``, the bonus ``50, 40, 30, ...``."""
    tokens, rows = len(drafts), len(counts)
    return ref.synthetic_accept(
        draft_token_ids=i32(drafts), num_draft_tokens=counts,
        uniform_probs=torch.tensor(uniforms, dtype=torch.float64).reshape(tokens),
        synthetic_conditional_rates=ref.conditional_rates(unconditional_rates=rates),
        target_argmax=i64(argmax or [70 + t for t in range(tokens)]).reshape(tokens),
        recovered_token_ids=i32(recovered or [80 + t for t in range(tokens)]).reshape(tokens),
        bonus_token_ids=i64(bonus or [50 - 10 * r for r in range(rows)]).reshape(rows, 1),
        is_greedy=torch.tensor([greedy] * rows if isinstance(greedy, bool) else greedy, dtype=torch.bool),
    )


def test_rates_of_one_accept_everything_then_the_bonus():
    """vLLM's own case: drafts [[1, 2], [3]], bonus [50, 40], rates [1, 1]."""
    out = decide([2, 1], [1, 2, 3], [0.999, 0.5, 0.0], [1, 1])
    assert_tensor("out", out, i32([[1, 2, 50], [3, 40, -1]]))


@pytest.mark.parametrize("greedy, first", [(True, [70, 72]), (False, [80, 82])])
def test_rates_of_zero_emit_one_token_per_row(greedy, first):
    """vLLM's own case with rates [0, 0]; its value is the target's argmax for a greedy row,
    the recovered token for a random one."""
    out = decide([2, 1], [1, 2, 3], [0.0, 0.0, 0.0], [0, 0], greedy=greedy)
    assert_tensor("out", out, i32([[first[0], -1, -1], [first[1], -1, -1]]))


PLACEHOLDER_CASES = [  # id, drafts, expected (rates 1: every real draft is accepted)
    ("first", [-1, 5, 6], [[70, -1, -1, -1]]),
    ("middle", [4, -1, 6], [[4, 71, -1, -1]]),
    ("last", [4, 5, -1], [[4, 5, 72, -1]]),
    ("every", [-1, -1, -1], [[70, -1, -1, -1]]),
    ("none", [4, 5, 6], [[4, 5, 6, 50]]),
]


@pytest.mark.parametrize("drafts, expected", [c[1:] for c in PLACEHOLDER_CASES], ids=[c[0] for c in PLACEHOLDER_CASES])
def test_a_placeholder_is_never_accepted_and_ends_the_walk(drafts, expected):
    out = decide([3], drafts, [0.0, 0.0, 0.0], [1, 1, 1])
    assert_tensor("out", out, i32(expected))


def refused_batch(greedy):
    """One request, drafts [2, 5] at rates 1, draft 5 refused (-inf) by the logit that
    verifies it, whose argmax is 3; the bonus logit allows everything (vLLM 0.34's rows after a
    refused draft are permissive)."""
    logits = torch.full((3, 8), -1.0)
    logits[0, 2] = logits[1, 3] = logits[2, 5] = 4.0
    logits[1, 5] = -torch.inf
    return dict(target_logits=logits, draft_sampled=i64([0, 2, 5]), cu_num_logits=i32([0, 3]), pos=i64([9, 10, 11]),
                temperature=torch.tensor([0.0 if greedy else 1.0]), seed=i64([4]), num_speculative_steps=2,
                synthetic_conditional_rates=torch.ones(2))


@pytest.mark.parametrize("greedy", [True, False])
def test_a_draft_the_target_refuses_is_never_accepted_and_its_place_emits_an_allowed_token(greedy):
    """§15.4 in both samplers' references: rates 1 accept draft 2, then draft 5 is rejected;
    a greedy request emits the argmax there (3), a random one a token its logit allows."""
    sampled, num_sampled = ref2.synthetic_rejection_sample_v2(**refused_batch(greedy))
    tokens = sampled[0, : int(num_sampled[0])].tolist()
    assert tokens[0] == 2 and len(tokens) == 2 and (tokens[1] == 3 if greedy else tokens[1] not in (5,))
    v2 = refused_batch(greedy)
    out = ref.synthetic_rejection_sample(
        draft_token_ids=i32([2, 5]), num_draft_tokens=[2], target_logits=v2["target_logits"][:2],
        bonus_token_ids=i64([[6]]), is_greedy=torch.tensor([greedy]), generators={},
        synthetic_conditional_rates=torch.ones(2))
    assert out[0, 0] == 2 and out[0, 2] == -1 and (out[0, 1] == 3 if greedy else out[0, 1] != 5)


def test_a_placeholder_of_a_random_row_emits_the_recovered_token():
    assert_tensor("out", decide([2], [7, -1], [0.0, 0.0], [1, 1], greedy=False), i32([[7, 81, -1]]))


def test_the_walk_stops_at_the_first_rejection():
    """Draft 1's uniform is at its rate (rejected: u < c is strict), draft 2's below (never reached)."""
    out = decide([3], [4, 5, 6], [0.1, 0.5, 0.0], [0.9, 0.45, 0.45])  # c = [0.9, 0.5, 1.0]
    assert_tensor("out", out, i32([[4, 71, -1, -1]]))


def test_the_uniform_is_compared_in_float64_with_the_float32_rate():
    c = float(torch.tensor(0.3, dtype=torch.float32))  # 0.30000001192...
    below, at = math.nextafter(c, 0), c
    assert_tensor("out", decide([1, 1], [4, 5], [below, at], [0.3]), i32([[4, 50], [71, -1]]))


def test_a_request_without_drafts_emits_its_bonus():
    assert_tensor("out", decide([0, 2, 0], [4, 5], [0.0, 0.9], [1, 0.5]), i32([[50, -1, -1], [4, 71, -1], [30, -1, -1]]))


def test_an_empty_batch_and_a_batch_without_drafts():
    assert_tensor("empty", decide([], [], [], [1]), torch.empty((0, 1), dtype=torch.int32))
    assert_tensor("no drafts", decide([0, 0], [], [], [1, 1]), i32([[50], [40]]))


def test_greedy_and_random_rows_take_their_own_rejection_token():
    out = decide([1, 1], [4, 5], [0.5, 0.5], [0.1], greedy=[True, False])
    assert_tensor("out", out, i32([[70, -1], [81, -1]]))


def test_an_accepted_draft_is_emitted_even_where_the_target_disagrees():
    """The target's tokens play no part in the decision (§15.1)."""
    assert_tensor("out", decide([1], [4], [0.0], [1], argmax=[9]), i32([[4, 50]]))


BAD_DECISIONS = [  # id, edit of decide()'s keyword arguments, error, match
    ("more drafts than rates", dict(num_draft_tokens=[3]), ValueError, r"\[0, K = 2\]"),
    ("counts not summing to the drafts", dict(num_draft_tokens=[1]), ValueError, "draft_token_ids"),
    ("a count tensor", dict(num_draft_tokens=torch.tensor([2])), TypeError, "num_draft_tokens"),
    ("float drafts", dict(draft_token_ids=torch.tensor([1.0, 2.0])), TypeError, "draft_token_ids"),
    ("bonus of shape (B,)", dict(bonus_token_ids=i64([50])), ValueError, "bonus_token_ids"),
    ("is_greedy as ints", dict(is_greedy=i32([1])), TypeError, "is_greedy"),
    ("2-D rates", dict(synthetic_conditional_rates=torch.ones(1, 2)), ValueError, "synthetic_conditional_rates"),
    ("two devices", dict(uniform_probs=torch.zeros(2, dtype=torch.float64, device="meta")), ValueError, "device"),
]


@pytest.mark.parametrize("edit, error, match", [c[1:] for c in BAD_DECISIONS], ids=[c[0] for c in BAD_DECISIONS])
def test_a_bad_decision_call_is_rejected(edit, error, match):
    kwargs = dict(draft_token_ids=i32([1, 2]), num_draft_tokens=[2], uniform_probs=torch.zeros(2, dtype=torch.float64),
                  synthetic_conditional_rates=torch.ones(2), target_argmax=i64([7, 8]),
                  recovered_token_ids=i32([7, 8]), bonus_token_ids=i64([[50]]), is_greedy=torch.tensor([True]))
    with pytest.raises(error, match=match):
        ref.synthetic_accept(**{**kwargs, **edit})


@QUICK
@given(batch=sv.decision_cases(max_bs=300))
def test_the_decision_equals_a_loop_over_requests(batch):
    """The contract's prose, one draft at a time (the zoo's correct per-request loop)."""
    kwargs = batch.args("cpu")
    assert_tensor("out", ref.synthetic_accept(**kwargs), zoo.per_request_loop(**kwargs))


@QUICK
@given(batch=sv.decision_cases(max_bs=300))
def test_each_row_is_accepted_drafts_then_one_token_then_minus_one(batch):
    out = ref.synthetic_accept(**batch.args("cpu"))
    counts = torch.tensor(batch.counts, dtype=torch.int64)
    emitted = (out != -1).sum(1)
    assert bool(((emitted >= 1) & (emitted <= counts + 1)).all())
    cols = torch.arange(out.shape[1])
    assert bool((out[cols >= emitted[:, None]] == -1).all())  # nothing after the last token
    flat, real = ref.grid(batch.counts, "cpu")
    drafts = torch.where(real, batch.draft_token_ids.values[flat], -2)
    accepted = emitted - 1
    head = cols[: drafts.shape[1]] < accepted[:, None]
    assert bool((out[:, : drafts.shape[1]][head] == drafts[head]).all()) and bool((drafts[head] >= 0).all())


def test_the_correct_alternatives_agree_and_the_decision_mutants_differ():
    """The zoo's entries are what their docstrings say (phase 2 registers them)."""
    base = dict(num_draft_tokens=[3, 2, 0], draft_token_ids=i32([4, -1, 6, 7, 8]),
                uniform_probs=torch.tensor([0.0, 0.0, 0.0, 0.0, 0.9], dtype=torch.float64),
                synthetic_conditional_rates=ref.conditional_rates(unconditional_rates=[1, 0.5, 0.5]),
                target_argmax=i64([70, 71, 72, 73, 74]), recovered_token_ids=i32([80, 81, 82, 83, 84]),
                bonus_token_ids=i64([[50], [40], [30]]), is_greedy=torch.tensor([True, False, True]))
    expected = ref.synthetic_accept(**base)
    assert_tensor("expected", expected, i32([[4, 71, -1, -1], [7, 84, -1, -1], [30, -1, -1, -1]]))
    for correct in (zoo.per_request_loop, zoo.first_failure_by_argmax):
        assert_tensor(correct.__name__, correct(**base), expected)
    for mutant in (zoo.accepts_placeholders, zoo.emits_the_rejected_draft, zoo.bonus_after_a_rejection):
        assert not torch.equal(mutant(**base), expected), mutant.__name__


def test_the_schedule_mutants_keep_valid_rates_but_not_the_schedule():
    for mutant in (zoo.geometric_decay_schedule, zoo.constant_conditional_schedule, zoo.schedule_fraction_rounded):
        got = mutant(num_speculative_tokens=3, synthetic_acceptance_length=2.6)
        assert got != [1.0, (2.6 - 1.0) - 1.0, 0.0], mutant.__name__
        assert all(0 <= p <= 1 for p in got) and got == sorted(got, reverse=True), mutant.__name__
    for same_mean in (zoo.geometric_decay_schedule, zoo.constant_conditional_schedule):
        assert 1 + sum(same_mean(num_speculative_tokens=3, synthetic_acceptance_length=2.6)) == pytest.approx(2.6)
    assert not torch.equal(zoo.unconditional_used_as_conditional(unconditional_rates=[0.8, 0.4]),
                           ref.conditional_rates(unconditional_rates=[0.8, 0.4]))


# -- §16.2: V1's sampler with V1's generator calls ---------------------------------------------------


def v1_args(counts, vocab=6, greedy=None, seeds=(), rates=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    tokens, rows = sum(counts), len(counts)
    return dict(num_draft_tokens=list(counts), draft_token_ids=torch.randint(0, vocab, (tokens,), generator=gen).int(),
                target_logits=torch.randn((tokens, vocab), generator=gen),
                bonus_token_ids=torch.randint(0, vocab, (rows, 1), generator=gen),
                is_greedy=torch.tensor(greedy if greedy is not None else [True] * rows, dtype=torch.bool),
                generators={r: torch.Generator().manual_seed(100 + r) for r in seeds},
                synthetic_conditional_rates=ref.conditional_rates(unconditional_rates=rates or [0.7] * max(counts)))


def test_v1_draws_its_uniforms_then_its_exponentials_as_v1_does():
    """The same outputs and generator states as the calls §16.2 names, made by hand."""
    args = v1_args([2, 0, 3], greedy=[True, False, False], seeds=[1, 2])
    torch.manual_seed(7)
    got = ref.synthetic_rejection_sample(**args)
    after = torch.get_rng_state()

    torch.manual_seed(7)
    gens = {r: torch.Generator().manual_seed(100 + r) for r in (1, 2)}
    u = torch.rand(5, dtype=torch.float64)
    u[2:5].uniform_(generator=gens[2])  # request 1 has no drafts: its generator is left alone
    q = torch.empty((3, 6)).exponential_()
    q[2].exponential_(generator=gens[2])
    args = v1_args([2, 0, 3], greedy=[True, False, False], seeds=[1, 2])
    recovered = ref.v1_recovered([2, 0, 3], args["draft_token_ids"], args["target_logits"], q)
    expected = ref.synthetic_accept(
        draft_token_ids=args["draft_token_ids"], num_draft_tokens=[2, 0, 3], uniform_probs=u,
        synthetic_conditional_rates=args["synthetic_conditional_rates"], target_argmax=args["target_logits"].argmax(1),
        recovered_token_ids=recovered, bonus_token_ids=args["bonus_token_ids"], is_greedy=args["is_greedy"])
    assert_tensor("out", got, expected)
    assert torch.equal(after, torch.get_rng_state())
    for r in (1, 2):
        assert torch.equal(args["generators"][r].get_state(), torch.Generator().manual_seed(100 + r).get_state())


def test_an_all_greedy_batch_draws_only_its_uniforms():
    torch.manual_seed(3)
    ref.synthetic_rejection_sample(**v1_args([2, 3]))
    torch.manual_seed(3)
    torch.rand(5, dtype=torch.float64)
    assert torch.equal(torch.get_rng_state(), torch.default_generator.get_state())
    state = torch.get_rng_state()
    torch.manual_seed(3)
    ref.synthetic_rejection_sample(**v1_args([2, 3]))
    assert torch.equal(torch.get_rng_state(), state)


def test_a_seeded_request_reproduces_whatever_else_is_in_the_batch():
    """A random request with a generator of its own (seed 100), its drafts and logits fixed,
    first alone, then after two other requests under another default seed: the same tokens."""
    gen = torch.Generator().manual_seed(4)
    drafts, logits = torch.randint(0, 6, (3,), generator=gen).int(), torch.randn((3, 6), generator=gen)
    rates = ref.conditional_rates(unconditional_rates=[0.9, 0.6, 0.3])

    def row(others, default_seed):
        counts = [n for n, _ in others] + [3]
        tokens = sum(counts)
        torch.manual_seed(default_seed)
        out = ref.synthetic_rejection_sample(
            num_draft_tokens=counts,
            draft_token_ids=torch.cat([torch.zeros(tokens - 3, dtype=torch.int32), drafts]),
            target_logits=torch.cat([torch.randn((tokens - 3, 6), generator=gen), logits]),
            bonus_token_ids=torch.full((len(counts), 1), 9),
            is_greedy=torch.tensor([g for _, g in others] + [False]),
            generators={len(others): torch.Generator().manual_seed(100)}, synthetic_conditional_rates=rates)
        return out[-1, :4]

    alone = row([], 0)
    assert torch.equal(row([(2, True), (3, False)], 1), alone)


def test_the_mutant_drawing_without_drafts_moves_that_request_s_generator():
    args = v1_args([2, 0], greedy=[False, False], seeds=[1])
    zoo.draws_without_drafts(**args)
    assert not torch.equal(args["generators"][1].get_state(), torch.Generator().manual_seed(101).get_state())
    args = v1_args([2, 0], greedy=[False, False], seeds=[1])
    ref.synthetic_rejection_sample(**args)
    assert torch.equal(args["generators"][1].get_state(), torch.Generator().manual_seed(101).get_state())


# -- §18: the law, for both samplers -----------------------------------------------------------------------


RATES = [0.9, 0.6, 0.6, 0.2]  # conditional [0.9, 2/3, 1, 1/3]: a 1 and a fall in the middle
RUNS = 6_000


def accepted_law(rates):
    """P(accepted = j), j = 0..K, for a request with K real drafts (§18.1)."""
    p = [1.0, *rates, 0.0]
    return [p[j] - p[j + 1] for j in range(len(rates) + 1)]


def v1_accepted(rates, runs, greedy, sampler=ref.synthetic_rejection_sample):
    """The accepted count of ``runs`` requests of ``len(rates)`` real drafts, one call."""
    torch.manual_seed(2024)
    args = v1_args([len(rates)] * runs, vocab=4, greedy=[greedy] * runs, rates=rates, seed=1)
    args["draft_token_ids"] = torch.zeros_like(args["draft_token_ids"])  # real drafts only
    return (sampler(**args) != -1).sum(1) - 1


def v2_accepted(rates, runs, greedy, sampler=ref2.synthetic_rejection_sample_v2):
    """As :func:`v1_accepted` for V2, every request at positions 0..K with its own seed."""
    gen = torch.Generator().manual_seed(2025)
    k = len(rates)
    _, num_sampled = sampler(
        target_logits=torch.randn((runs * (k + 1), 4), generator=gen),
        draft_sampled=torch.zeros(runs * (k + 1), dtype=torch.int64),
        cu_num_logits=torch.arange(runs + 1, dtype=torch.int32) * (k + 1), pos=torch.arange(k + 1).repeat(runs),
        temperature=torch.full((runs,), 0.0 if greedy else 1.0),
        seed=torch.randint(-(2**62), 2**62, (runs,), generator=gen), num_speculative_steps=k,
        synthetic_conditional_rates=ref.conditional_rates(unconditional_rates=rates))
    return num_sampled.long() - 1


@pytest.mark.parametrize("sampler", ["v1", "v2"])
def test_the_accepted_count_follows_the_per_position_rates(sampler):
    """P(accepted >= i + 1) = p_i (§18.1), over 6,000 requests of one call, all at the same
    positions for V2 (the seeds differ), at 1e-6."""
    accepted = v1_accepted(RATES, RUNS, False) if sampler == "v1" else v2_accepted(RATES, RUNS, False)
    assert follows(accepted, accepted_law(RATES))


def first_draft_pairs(accepted):
    """0..3: whether requests 2j and 2j + 1 each accepted their one draft."""
    return accepted[0::2] * 2 + accepted[1::2]


@pytest.mark.parametrize("sampler, shared", [
    ("v1", zoo.one_uniform_for_the_batch), ("v2", zoo.v2_one_uniform_per_position)])
def test_neighbouring_requests_draw_independently(sampler, shared):
    """Whether requests 2j and 2j + 1 accept their one draft (rate 1/2): the four outcomes of
    the 3,000 pairs against the product law, 1/4 each, at 1e-6. The zoo's mutant that
    shares its uniforms across the batch gives two outcomes only, and fails the same test."""
    accepted = v1_accepted if sampler == "v1" else v2_accepted
    assert follows(first_draft_pairs(accepted([0.5], RUNS, True)), [0.25] * 4)
    assert not follows(first_draft_pairs(accepted([0.5], RUNS, True, shared)), [0.25] * 4)


def test_a_recovered_token_follows_the_target_without_the_rejected_draft():
    """Rates 0, random rows, one draft of token 0 over a 4-token vocabulary with logits
    log [0.4, 0.3, 0.2, 0.1]: the emitted token is 1, 2 or 3 with probabilities 1/2, 1/3,
    1/6 (V1 and V2), at 1e-6 each."""
    logits = torch.tensor([0.4, 0.3, 0.2, 0.1]).log()
    law = [0.0, 0.5, 1 / 3, 1 / 6]
    torch.manual_seed(5)
    v1 = ref.synthetic_rejection_sample(
        num_draft_tokens=[1] * RUNS, draft_token_ids=torch.zeros(RUNS, dtype=torch.int32),
        target_logits=logits.repeat(RUNS, 1), bonus_token_ids=torch.zeros((RUNS, 1), dtype=torch.int64),
        is_greedy=torch.zeros(RUNS, dtype=torch.bool), generators={},
        synthetic_conditional_rates=torch.zeros(1))
    assert follows(v1[:, 0].long(), law)
    sampled, _ = ref2.synthetic_rejection_sample_v2(
        target_logits=logits.repeat(2 * RUNS, 1), draft_sampled=torch.zeros(2 * RUNS, dtype=torch.int64),
        cu_num_logits=torch.arange(RUNS + 1, dtype=torch.int32) * 2, pos=torch.arange(2).repeat(RUNS),
        temperature=torch.ones(RUNS), seed=torch.arange(RUNS, dtype=torch.int64) * 7919,
        num_speculative_steps=1, synthetic_conditional_rates=torch.zeros(1))
    assert follows(sampled[:, 0], law)


# -- §17: V2's exact rules ----------------------------------------------------------------------------------


@QUICK
@given(batch=sv.v2_cases(max_bs=300))
def test_v2_follows_the_exact_rules(batch):
    """Whatever the draws: accepted drafts verbatim, no placeholder accepted, one more token
    (the argmax for a greedy row, never the rejected draft for a random one), rates 1 and 0."""
    kwargs = batch.args("cpu")
    sampled, num_sampled = ref2.synthetic_rejection_sample_v2(**kwargs)
    check_v2_rules(batch, sampled, num_sampled)


@settings(QUICK, max_examples=10)
@given(batch=sv.v2_cases(max_bs=8, max_k=4))
def test_the_zoo_s_v2_with_its_own_generators_follows_the_exact_rules(batch):
    check_v2_rules(batch, *zoo.v2_with_a_generator_per_position(**batch.args("cpu")))


def check_v2_rules(batch, sampled, num_sampled):
    k = batch.k
    assert sampled.dtype == torch.int64 and tuple(sampled.shape) == (len(batch.counts), k + 1)
    assert num_sampled.dtype == torch.int32
    rates = batch.synthetic_conditional_rates.values
    for r, n in enumerate(batch.counts):
        start, count = int(batch.cu_num_logits.values[r]), int(num_sampled[r])
        drafts = batch.draft_sampled.values[start + 1 : start + 1 + n].tolist()
        accepted = count - 1
        assert 0 <= accepted <= n
        assert sampled[r, :accepted].tolist() == drafts[:accepted] and all(d >= 0 for d in drafts[:accepted])
        real_prefix = next((i for i, d in enumerate(drafts) if d < 0), n)
        assert accepted <= real_prefix, f"request {r}: a placeholder accepted"
        assert not (accepted < real_prefix and float(rates[accepted]) == 1.0), f"request {r}: a rate of 1 rejected"
        assert not (accepted > 0 and float(rates[accepted - 1]) == 0.0), f"request {r}: a rate of 0 accepted"
        token, row = int(sampled[r, accepted]), batch.target_logits.values[start + accepted]
        if float(batch.temperature.values[r]) == 0:
            assert token == int(row.argmax())
        elif accepted < n and drafts[accepted] >= 0:
            assert token != drafts[accepted]


def test_v2_reproduces_from_seed_and_position_alone():
    """The same request, at the same positions with the same seed, inside two different
    batches: the same row (§17.3)."""
    gen = torch.Generator().manual_seed(9)
    logits, drafts = torch.randn(4, 5, generator=gen), torch.tensor([0, 1, 2, 3])
    alone = ref2.synthetic_rejection_sample_v2(
        target_logits=logits, draft_sampled=drafts, cu_num_logits=torch.tensor([0, 4]), pos=torch.tensor([7, 8, 9, 10]),
        temperature=torch.ones(1), seed=torch.tensor([123]), num_speculative_steps=3,
        synthetic_conditional_rates=torch.full((3,), 0.7))
    other = torch.randn(2, 5, generator=gen)
    mixed = ref2.synthetic_rejection_sample_v2(
        target_logits=torch.cat([other, logits]), draft_sampled=torch.cat([torch.tensor([0, 4]), drafts]),
        cu_num_logits=torch.tensor([0, 2, 6]), pos=torch.tensor([7, 8, 7, 8, 9, 10]), temperature=torch.ones(2),
        seed=torch.tensor([5, 123]), num_speculative_steps=3, synthetic_conditional_rates=torch.full((3,), 0.7))
    assert torch.equal(mixed[0][1, : int(alone[1][0])], alone[0][0, : int(alone[1][0])])
    assert int(mixed[1][1]) == int(alone[1][0])


def test_keyed_uniforms_lie_strictly_inside_0_1_and_are_uniform():
    u = ref2.keyed_uniforms(torch.arange(-100, 100)[:, None], torch.arange(100), 0).flatten()
    assert u.dtype == torch.float32 and float(u.min()) >= 2.0**-24 and float(u.max()) <= 1 - 2.0**-24
    bins = (u * 10).long().clamp(max=9)
    assert follows(bins, [0.1] * 10)


# -- vLLM's own code (marked vllm; skipped where vLLM is not importable) ----------------------------------------


@pytest.fixture(scope="module")
def glue():
    why = vllm_glue.unavailable()
    if why:
        pytest.skip(why)
    from vllm.triton_utils import HAS_TRITON

    if not HAS_TRITON:
        pytest.skip("vLLM found no Triton (on a CPU, CUDA_VISIBLE_DEVICES must be empty and the dist-info present)")
    return vllm_glue


VLLM_EXAMPLES = settings(QUICK, max_examples=25)


@pytest.mark.vllm
@VLLM_EXAMPLES
@given(setting=sv.synthetic_settings())
def test_vllm_resolves_the_settings_and_converts_the_rates_as_the_references_do(glue, setting):
    ours = ref.resolve_synthetic_rates(**setting.args("cpu"))
    assert glue.resolve_synthetic_rates(**setting.args("cpu")) == ours
    assert_tensor("conditional rates", glue.conditional_rates(unconditional_rates=ours),
                  ref.conditional_rates(unconditional_rates=ours))


@pytest.mark.vllm
@pytest.mark.parametrize("kwargs", [c[1] for c in BAD_SETTINGS if c[2] is ValueError and c[0] != "K = 0"],
                         ids=[c[0] for c in BAD_SETTINGS if c[2] is ValueError and c[0] != "K = 0"])
def test_vllm_rejects_the_bad_settings(glue, kwargs):
    """K = 0 is rejected by another check of vLLM's config, before this one runs."""
    with pytest.raises(ValueError):
        glue.resolve_synthetic_rates(**kwargs)


@pytest.mark.parametrize("rates, expected", CONVERSIONS, ids=[str(c[0]) for c in CONVERSIONS])
@pytest.mark.vllm
def test_vllm_converts_the_hand_computed_rates(glue, rates, expected):
    assert_tensor("conditional rates", glue.conditional_rates(unconditional_rates=rates),
                  torch.tensor(expected, dtype=torch.float64).to(torch.float32))


@pytest.fixture(scope="module")
def v1_glue(glue):
    """The glue where the version on the path has V1's sampler (0.33 and earlier)."""
    try:
        glue.find("v1_synthetic_rejection_sample", "rejection_sample")
    except glue.NotInThisVersion as gone:
        pytest.skip(str(gone))
    return glue


@pytest.mark.vllm
@VLLM_EXAMPLES
@given(batch=sv.decision_cases(max_bs=300))
def test_vllm_v1_kernels_equal_the_decision_given_the_same_uniforms(v1_glue, batch):
    kwargs = batch.args("cpu")
    assert_tensor("out", v1_glue.v1_synthetic_accept(**kwargs), ref.synthetic_accept(**kwargs))


def same_draws(glue, batch):
    """V1's sampler and the reference from the same default-generator seed and per-request
    generators: the same bytes, the same generator states after (§16.2)."""
    torch.manual_seed(batch.seed)
    theirs_kwargs = batch.args("cpu")
    theirs = glue.v1_synthetic_rejection_sample(**theirs_kwargs)
    theirs_state = torch.get_rng_state()
    torch.manual_seed(batch.seed)
    ours_kwargs = batch.args("cpu")
    ours = ref.synthetic_rejection_sample(**ours_kwargs)
    assert_tensor("out", theirs, ours)
    assert torch.equal(theirs_state, torch.get_rng_state())
    for r, gen in ours_kwargs["generators"].items():
        assert torch.equal(theirs_kwargs["generators"][r].get_state(), gen.get_state())


@pytest.mark.vllm
@VLLM_EXAMPLES
@given(batch=sv.v1_cases(min_bs=1, max_bs=300))
def test_vllm_v1_sampler_equals_the_reference_draw_for_draw(v1_glue, batch):
    """vLLM never samples an empty batch, and V1's ``rejection_sample`` fails an assertion on
    one (both ``all_greedy`` and ``all_random``)."""
    same_draws(v1_glue, batch)


@pytest.mark.vllm
@VLLM_EXAMPLES
@given(batch=sv.v1_cases(min_bs=1, max_bs=300, masked=True, cut=True))
def test_vllm_v1_sampler_given_the_drafts_its_scheduler_cut_equals_the_reference(v1_glue, batch):
    """Logits that refuse tokens (§15.4), the drafts as 0.33's scheduler passes them on (from the
    first refused one on -1): vLLM and the reference's walk agree draw for draw."""
    same_draws(v1_glue, batch)


PLACEHOLDERS_AT_RATES_OF_ONE = pytest.mark.parametrize(
    "drafts, expected", [c[1:] for c in PLACEHOLDER_CASES], ids=[c[0] for c in PLACEHOLDER_CASES])


@pytest.mark.vllm
@PLACEHOLDERS_AT_RATES_OF_ONE
@pytest.mark.parametrize("greedy", [True, False])
def test_vllm_v1_never_accepts_a_placeholder(v1_glue, drafts, expected, greedy):
    """vLLM #46533: rates 1, a -1 first, in the middle, last or everywhere."""
    kwargs = dict(draft_token_ids=i32(drafts), num_draft_tokens=[3], uniform_probs=torch.zeros(3, dtype=torch.float64),
                  synthetic_conditional_rates=torch.ones(3), target_argmax=i64([70, 71, 72]),
                  recovered_token_ids=i32([70, 71, 72]), bonus_token_ids=i64([[50]]), is_greedy=torch.tensor([greedy]))
    assert_tensor("V1", v1_glue.v1_synthetic_accept(**kwargs), i32(expected))


@pytest.mark.vllm
@PLACEHOLDERS_AT_RATES_OF_ONE
@pytest.mark.parametrize("greedy", [True, False])
def test_vllm_v2_never_accepts_a_placeholder(glue, drafts, expected, greedy):
    """V1's cases in V2's layout. V2 samples a random request's token from the logits, which
    put all but 2e-7 of the mass on the token V1 is given (its seed is fixed, so the outcome
    is too)."""
    logits = torch.full((4, 80), -10.0)
    logits[torch.arange(3), torch.tensor([70, 71, 72])] = 10.0  # the argmax, and nearly all of the mass
    logits[3, 50] = 10.0
    sampled, num_sampled = glue.v2_synthetic_rejection_sample(
        target_logits=logits, draft_sampled=i64([0, *drafts]), cu_num_logits=i32([0, 4]), pos=i64([5, 6, 7, 8]),
        temperature=torch.tensor([0.0 if greedy else 1.0]), seed=i64([3]), num_speculative_steps=3,
        synthetic_conditional_rates=torch.ones(3))
    tokens = [t for t in expected[0] if t != -1]
    assert int(num_sampled[0]) == len(tokens) and sampled[0, : len(tokens)].tolist() == tokens


@pytest.mark.vllm
@pytest.mark.parametrize("greedy", [True, False])
def test_vllms_synthetic_mode_accepts_a_draft_its_logit_forbids(glue, greedy):
    """The forbidden draft at rates 1, given to V2's sampler as it is: 0.33 and 0.34 alike accept
    and emit it (their synthetic branch reads no logit). In 0.33 only a draft cut by top-k,
    top-p, min-p or bad words reaches it so; in 0.34 a grammar's refusal does too
    (docs/findings/vllm-0.34.0-refused-drafts.md). Fails when a version changes it."""
    sampled, num_sampled = glue.v2_synthetic_rejection_sample(**refused_batch(greedy))
    assert sampled[0, : int(num_sampled[0])].tolist() == [2, 5, 5]  # the bonus from the permissive last logit


@pytest.mark.vllm
@pytest.mark.parametrize("greedy", [True, False])
def test_vllm_rejects_a_refused_draft_its_runner_cut(glue, greedy):
    """The same request as 0.33's runner passes it on when its grammar refuses draft 5 (-1 from
    it on): rejected in either version, its place emitting a token its logit allows."""
    batch = refused_batch(greedy) | {"draft_sampled": i64([0, 2, -1])}
    sampled, num_sampled = glue.v2_synthetic_rejection_sample(**batch)
    tokens = sampled[0, : int(num_sampled[0])].tolist()
    assert tokens[0] == 2 and len(tokens) == 2 and (tokens[1] == 3 if greedy else tokens[1] != 5), tokens


@pytest.mark.vllm
@settings(VLLM_EXAMPLES, max_examples=15)
@given(batch=sv.v2_cases(max_bs=16, max_k=4))
def test_vllm_v2_follows_the_exact_rules(glue, batch):
    sampled, num_sampled = glue.v2_synthetic_rejection_sample(**batch.args("cpu"))
    check_v2_rules(batch, sampled, num_sampled)


@pytest.mark.vllm
def test_vllm_v2_accepted_count_follows_the_per_position_rates(glue):
    """As the reference's test, over 300 requests of one call (the interpreter takes about
    75 ms a request), at 1e-6. Rates [0.5, 0.5, 0.5] (conditional [0.5, 1, 1]) put the
    accepted count on 0 and 3; taken as conditional rates they would move the CDF by 0.375."""
    rates = [0.5, 0.5, 0.5]
    accepted = v2_accepted(rates, 300, True, glue.v2_synthetic_rejection_sample)
    assert follows(accepted, accepted_law(rates))
