"""Example tests of the length sampler and of how many draws each public function consumes
(CONTRACT.md §3).

Every expected length here is a literal. The literal draws behind them, for reference: with
``torch.manual_seed(s)``, ``torch.normal(mean=2.5, std=1.0, size=(1,))`` gives 4.041 (s=0),
3.161 (s=1), 0.895 (s=4), 2.013 (s=5); ``torch.multinomial(tensor([0.5, 0.5]), 1)`` picks
1 (s=0) and 0 (s=1); with weights ``[0.75, 0.25]`` it picks 0 (s=0) and 1 (s=2).

The consumption tests compare ``torch.get_rng_state()`` after a call with the state after
performing the documented draws by hand, so a call that draws once too often (or with a
different distribution call) fails even when it happens to return the right length.

The law of the sampler's lengths is tested here, with the designs of the distribution
properties (CONTRACT.md §9.4): those apply at the semantic level only, an exact-level
implementation being held to this sampler's own draws.
"""

import math

import pytest
import torch

import simacc as sa
from simacc.harness.judging import statistics
from simacc.properties import test_sampling

NAN = math.nan
INF = math.inf


def state_after(seed, *draws):
    """The CPU generator state after ``manual_seed(seed)`` and ``draws`` (callables)."""
    torch.manual_seed(seed)
    for draw in draws:
        draw()
    return torch.get_rng_state()


def normal(x):
    return lambda: torch.normal(mean=x, std=1.0, size=(1,), device="cpu")


def multinomial(weights):
    return lambda: torch.multinomial(torch.tensor(weights), 1)


def assert_state(expected, what):
    __tracebackhide__ = True
    assert torch.equal(torch.get_rng_state(), expected), (
        f"generator state after {what} differs from the documented draws"
    )


@pytest.mark.parametrize(
    "seed, x, max_len, expected",
    [
        (0, 2.5, 8, 4),  # 4.041 rounds to 4
        (0, 2.5, 3, 3),  # 4.041 clamps to 3
        (1, 2.5, 8, 3),  # 3.161
        (4, 2.5, 8, 1),  # 0.895 clamps to 1
        (5, 2.5, 8, 2),  # 2.013
    ],
)
def test_multinomial_is_one_gaussian_draw_clamped_and_rounded(seed, x, max_len, expected):
    torch.manual_seed(seed)
    got = sa.sample_simulated_acc_len(x, "multinomial", max_len)
    assert type(got) is int and got == expected
    assert_state(state_after(seed, normal(x)), f"multinomial x={x}")


@pytest.mark.parametrize(
    "x, max_len, expected", [(100.0, 4, 4), (-100.0, 4, 1), (INF, 4, 4), (3.0, 1, 1), (3, 6, 5)]
)
def test_multinomial_draws_once_even_when_the_clamp_decides(x, max_len, expected):
    torch.manual_seed(0)
    assert sa.sample_simulated_acc_len(x, "multinomial", max_len) == expected
    assert_state(state_after(0, normal(x)), f"multinomial x={x}")


def test_multinomial_draws_then_fails_on_nan():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="NaN"):
        sa.sample_simulated_acc_len(NAN, "multinomial", 4)
    assert_state(state_after(0, normal(NAN)), "multinomial x=nan")


@pytest.mark.parametrize(
    "seed, x, weights, expected",
    [
        (0, 2.5, [0.5, 0.5], 3),
        (1, 2.5, [0.5, 0.5], 2),
        (0, 2.25, [0.75, 0.25], 2),
        (2, 2.25, [0.75, 0.25], 3),
    ],
)
def test_match_expected_picks_floor_or_ceiling_with_one_draw(seed, x, weights, expected):
    torch.manual_seed(seed)
    got = sa.sample_simulated_acc_len(x, "match-expected", 4)
    assert type(got) is int and got == expected
    assert_state(state_after(seed, multinomial(weights)), f"match-expected x={x}")


@pytest.mark.parametrize("x, expected", [(1, 1), (2, 2), (3, 3), (3.0, 3), (0, 1), (-7.5, 1)])
def test_match_expected_integer_below_max_len_still_draws_once(x, expected):
    """An integer (or <= 1) x gives weights [1, 0]: the length is certain, the draw is not
    skipped. An int x used to crash here (int64 weights)."""
    torch.manual_seed(3)
    assert sa.sample_simulated_acc_len(x, "match-expected", 4) == expected
    assert_state(state_after(3, multinomial([1.0, 0.0])), f"match-expected x={x}")


def test_match_expected_weights_are_float32_of_the_fraction():
    torch.manual_seed(5)
    sa.sample_simulated_acc_len(1.1, "match-expected", 4)
    assert_state(state_after(5, multinomial([1 - (1.1 - 1), 1.1 - 1])), "match-expected x=1.1")
    assert torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize(
    "x, max_len, expected",
    [(4, 4, 4), (4.0, 4, 4), (9.5, 4, 4), (INF, 4, 4), (NAN, 4, 4), (0.5, 1, 1), (3, 1, 1),
     (NAN, 1, 1), (-2.0, 1, 1)],
)
def test_match_expected_does_not_draw_when_floor_equals_ceiling(x, max_len, expected):
    torch.manual_seed(1)
    assert sa.sample_simulated_acc_len(x, "match-expected", max_len) == expected
    assert_state(state_after(1), f"match-expected x={x} max_len={max_len}")


def test_unknown_method_is_rejected_by_name_without_a_draw():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="'gaussian'"):
        sa.sample_simulated_acc_len(2.5, "gaussian", 4)
    assert_state(state_after(0), "an unknown method")
    assert sa.METHODS == ("multinomial", "match-expected")


def index_call(mode, x, method, width):
    bs = 2
    drafts = torch.arange(bs * width, dtype=torch.int64).reshape(bs, width)
    return lambda: sa.generate_simulated_accept_index(
        accept_index=torch.arange(bs * width, dtype=torch.int32).reshape(bs, width),
        predict=torch.zeros(bs * width, dtype=torch.int32),
        num_correct_drafts=torch.zeros(bs, dtype=torch.int32),
        candidates=drafts,
        target_predict=drafts + 50,
        bs=bs,
        spec_steps=width - 1,
        simulate_acc_len=x,
        simulate_acc_method=method,
        simulate_acc_token_mode=mode,
    )


def legacy_call(x, method, width):
    return lambda: sa.legacy_generate_simulated_accept_index(
        torch.zeros(1, width, dtype=torch.int32),
        torch.zeros(width, dtype=torch.int32),
        torch.zeros(1, dtype=torch.int32),
        1,
        width - 1,
        x,
        method,
    )


def dflash_call(mode, x, method, block):
    bs = 2
    return lambda: sa.apply_dflash_simulated_acceptance(
        candidates=torch.ones(bs, block, dtype=torch.int64),
        target_predict=torch.ones(bs, block, dtype=torch.int64),
        accept_len=torch.zeros(bs, dtype=torch.int32),
        commit_lens=torch.zeros(bs, dtype=torch.int32),
        bonus=torch.zeros(bs, dtype=torch.int64),
        out_tokens=torch.zeros(bs, block, dtype=torch.int64),
        simulate_acc_len=x,
        simulate_acc_method=method,
        simulate_acc_token_mode=mode,
    )


CONSUMPTION = [
    ("fixed index, multinomial", index_call("fixed", 2.5, "multinomial", 4), [normal(2.5)]),
    ("real index, multinomial", index_call("real-draft-token", 2.5, "multinomial", 4),
     [normal(2.5)]),
    ("fixed index, width 1, multinomial", index_call("fixed", 2.5, "multinomial", 1),
     [normal(2.5)]),
    ("fixed index, fraction", index_call("fixed", 2.5, "match-expected", 4),
     [multinomial([0.5, 0.5])]),
    ("real index, integer", index_call("real-draft-token", 2, "match-expected", 4),
     [multinomial([1.0, 0.0])]),
    ("real index, x = W", index_call("real-draft-token", 4, "match-expected", 4), []),
    ("fixed index, width 1", index_call("fixed", 2.5, "match-expected", 1), []),
    ("legacy, multinomial", legacy_call(2.5, "multinomial", 3), [normal(2.5)]),
    ("legacy, fraction", legacy_call(1.5, "match-expected", 3), [multinomial([0.5, 0.5])]),
    ("legacy, x > W", legacy_call(7, "match-expected", 3), []),
    ("dflash fixed, multinomial", dflash_call("fixed", 2.5, "multinomial", 4), [normal(2.5)]),
    ("dflash real, fraction", dflash_call("real-draft-token", 2.5, "match-expected", 4),
     [multinomial([0.5, 0.5])]),
    ("dflash, x <= 0", dflash_call("fixed", -3, "match-expected", 4), [multinomial([1.0, 0.0])]),
    ("dflash, NaN", dflash_call("fixed", NAN, "match-expected", 4), []),
    ("dflash, B = 1", dflash_call("real-draft-token", 2.5, "match-expected", 1), []),
]


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize(
    "call, draws", [c[1:] for c in CONSUMPTION], ids=[c[0] for c in CONSUMPTION]
)
def test_each_function_consumes_exactly_the_documented_draws(seed, call, draws):
    torch.manual_seed(seed)
    call()
    assert_state(state_after(seed, *draws), "the call")


@pytest.mark.parametrize("design", test_sampling.designs(), ids=lambda d: f"{d.prop.split('_')[0]}-{d.where}")
def test_the_sampler_draws_the_documented_law(design):
    """The lengths of seeds ``0..n-1`` pass the distribution property's own test of the law."""
    method = "multinomial" if design.prop.startswith("multinomial") else "match-expected"
    x = float(design.where.removeprefix("x="))
    lengths = []
    for seed in range(design.runs):
        torch.default_generator.manual_seed(seed)  # torch.manual_seed costs about a millisecond a call here
        lengths.append(sa.sample_simulated_acc_len(x, method, len(design.probabilities)))
    assert statistics.cdf_test(lengths, design.probabilities, design.false_alarm).passed



def test_the_exact_levels_oracle_draws_by_hand_and_agrees_with_the_sampler_draw_for_draw(monkeypatch):
    """``support.documented_draws``, the oracle of the exact level's length claims, runs none of
    simacc's samplers (a change to the sampler, as mutation testing makes, fails those claims
    where no distribution property runs), and gives the sampler's own lengths."""
    from simacc.harness.model import cases
    from simacc.properties import support

    drawn = [support.small_case(x, method, seed) for x in (0.4, 2.0, 2.05, 2.5, 3.95, 6.5, INF)
             for method in ("match-expected", "multinomial") for seed in range(40)]
    expected = [case.expected_length() for case in drawn]

    def absent(*args):
        raise AssertionError("the oracle ran the sampler")

    monkeypatch.setattr(cases, "sample_simulated_acc_len", absent)
    monkeypatch.setattr(sa, "sample_simulated_acc_len", absent)
    assert [support.documented_draws(case)[0] for case in drawn] == expected
