"""DSpark's strategies reach the cases its properties need (CONTRACT.md §19-§21): a simulated
count other than the real one (where §21.3's rule shows), partial maxima that tie, a supplied
bonus without the target, vocabularies the kernels split, batches mixing greedy and sampling
requests with rows of their own, lengths outside ``[1, gamma + 1]``; and they reject bad sizes
by name."""

import math

import pytest
import torch
from test_strategies import reaches

from simacc import strategies as sx
from simacc.properties import dspark


def real_differs(case):
    return case.simulated is not None and any(row.real != row.correct for row in dspark.rows(case))


def parts_tie(case):
    values = case.part_val.values[: case.bs] if case.part_val is not None else torch.zeros(0, 1)
    return bool((values == values.amax(dim=1, keepdim=True)).sum(dim=1).gt(1).any())


@pytest.mark.parametrize("wanted", [
    real_differs,
    parts_tie,
    lambda case: case.target_predict is None,
    lambda case: case.simulated is None and case.mode == "bonus_in",
    lambda case: case.gated_commit_lens_out is not None and int(case.gate.values[0]) == 0,
    lambda case: case.out_tokens_out.values.shape[0] > case.bs,
], ids=["real count != simulated", "splits tie", "no target_predict", "bonus_in without simulation", "gate 0",
        "spare rows"])
def test_accept_cases_reach(wanted):
    assert reaches(sx.dspark_accept_cases(), wanted)


@pytest.mark.parametrize("wanted", [
    lambda case: case.vocab > 4096,
    lambda case: case.mode == "mixed",
    lambda case: len(set(case.correct_len.values.tolist())) > 1,
    lambda case: bool((case.temperatures.values < 0).any()),
], ids=["split vocabulary", "mixed requests", "a row a request", "negative temperature"])
def test_bonus_cases_reach(wanted):
    assert reaches(sx.dspark_bonus_cases(), wanted)


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
