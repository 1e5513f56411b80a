"""DSpark's strategies reach the cases its properties need (CONTRACT.md §19-§21): a simulated
count other than the real one (where §21.3's rule shows), partial maxima that tie or differ by
less than a bfloat16 ulp, a supplied bonus without the target, static ``seq_lens``, rows padded
past their length, vocabularies the kernels split, batches mixing greedy and sampling requests
with rows of their own, temperatures below the kernel's floor, lengths outside
``[1, gamma + 1]``; the built server batches are what their properties say; and the strategies
reject bad sizes by name."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from tests.contract.test_strategies import minimal, reaches

from simacc import strategies as sx
from simacc.properties import dspark
from simacc.strategies.dspark import dspark_accept_server_batches, dspark_bonus_server_batches


def real_differs(case):
    return case.simulated is not None and any(row.real != row.correct for row in dspark.rows(case))


def parts_tie(case):
    values = case.part_val.values[: case.bs] if case.part_val is not None else torch.zeros(0, 1)
    return bool((values == values.amax(dim=1, keepdim=True)).sum(dim=1).gt(1).any())


def parts_tie_in_bfloat16_only(case):
    """The largest split maximum is unique, yet ties another once both are rounded to bfloat16."""
    if case.part_val is None:
        return False
    values = case.part_val.values[: case.bs]
    rounded = values.bfloat16()
    unique = (values == values.amax(dim=1, keepdim=True)).sum(dim=1) == 1
    return bool((unique & (rounded == rounded.amax(dim=1, keepdim=True)).sum(dim=1).gt(1)).any())


def padded(case, name):
    arg = getattr(case, name)
    return arg is not None and arg.layout == "padded" and arg.on("cpu").stride(0) > arg.values.shape[1]


@pytest.mark.parametrize("wanted", [
    real_differs,
    parts_tie,
    lambda case: case.target_predict is None,
    lambda case: case.simulated is None and case.mode == "bonus_in",
    lambda case: case.gated_commit_lens_out is not None and int(case.gate.values[0]) == 0,
    lambda case: case.out_tokens_out.values.shape[0] > case.bs,
    parts_tie_in_bfloat16_only,
    lambda case: case.seq_lens.values.shape[0] > case.bs and case.verify_lens.values.shape[0] > case.bs,
    lambda case: padded(case, "candidates") and padded(case, "out_tokens_out") and case.seq_lens.layout == "contiguous",
], ids=["real count != simulated", "splits tie", "no target_predict", "bonus_in without simulation", "gate 0",
        "spare rows", "splits tie in bfloat16 only", "static seq_lens", "padded rows"])
def test_accept_cases_reach(wanted):
    assert reaches(sx.dspark_accept_cases(), wanted)


@pytest.mark.parametrize("wanted", [
    lambda case: case.vocab > 4096,
    lambda case: case.mode == "mixed",
    lambda case: len(set(case.correct_len.values.tolist())) > 1,
    lambda case: bool((case.temperatures.values < 0).any()),
    lambda case: bool(((case.temperatures.values > 0) & (case.temperatures.values < 1e-5)).any()),
    lambda case: padded(case, "target_logits") and case.temperatures.layout == "contiguous",
], ids=["split vocabulary", "mixed requests", "a row a request", "negative temperature", "below the floor of 1e-5",
        "padded rows"])
def test_bonus_cases_reach(wanted):
    assert reaches(sx.dspark_bonus_cases(), wanted)


def test_a_split_vocabulary_is_common():
    """About a quarter of the cases asked for (a run of 50 examples misses them with chance about 1e-7), so that
    a mistake per vocabulary block shows in one."""
    found = []
    strategy = sx.dspark_bonus_cases(split_vocabularies=True)

    @settings(max_examples=100, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(case):
        found.append(case.vocab > 4096)

    draw()
    assert sum(found) >= len(found) / 5


def test_the_server_batches_are_past_every_block():
    bonus = minimal(dspark_bonus_server_batches())
    assert (bonus.bs, bonus.vocab, bonus.mode, bonus.problem()) == (1025, 4097, "mixed", None)
    for case in (minimal(dspark_accept_server_batches(), lambda case: case.simulated == simulated)
                 for simulated in (4, None)):
        assert (case.bs, case.max_len, case.seq_lens.values.shape[0], case.problem()) == (1025, 9, 1032, None)


@pytest.mark.parametrize("wanted", [
    lambda case: case.simulate_acc_len <= 0,
    lambda case: math.isnan(case.simulate_acc_len),
    lambda case: case.simulate_acc_len > case.gamma + 1,
], ids=["x <= 0", "NaN", "x past gamma + 1"])
def test_length_cases_reach(wanted):
    assert reaches(sx.dspark_length_cases(), wanted)


@pytest.mark.parametrize("strategy, kwargs, match", [
    (sx.dspark_accept_cases, dict(bonuses=("fixed",)), "bonuses="),
    (sx.dspark_accept_cases, dict(max_bs=0), "max_bs=0 < min_bs=1"),
    (sx.dspark_bonus_cases, dict(modes=()), r"modes=\(\)"),
    (sx.dspark_bonus_cases, dict(max_rows=0), "max_rows=0 < min_rows=1"),
    (sx.dspark_length_cases, dict(max_gamma=-1), "max_gamma=-1 < min_gamma=0"),
])
def test_bad_sizes_are_named(strategy, kwargs, match):
    with pytest.raises(ValueError, match=match):
        strategy(**kwargs)
