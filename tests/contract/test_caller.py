"""What the caller does around the simulation (CONTRACT.md §5.3): reading the settings,
validating the token mode, and finding ``target_predict``."""

import dataclasses
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import simacc as sa
from simacc import strategies as sx
from simacc.contract import validation


def test_settings_default_to_off_match_expected_and_fixed():
    settings = sa.SimulationSettings.from_env({})
    assert settings == sa.SimulationSettings(-1.0, "match-expected", "fixed")
    assert not settings.enabled


@pytest.mark.parametrize(
    "raw, acc_len, enabled",
    [("2.5", 2.5, True), ("3", 3.0, True), (" 4 ", 4.0, True), ("1e-3", 0.001, True),
     ("inf", math.inf, True), ("0", 0.0, False), ("-1", -1.0, False), ("-inf", -math.inf, False)],
)
def test_settings_parse_the_length_with_float(raw, acc_len, enabled):
    settings = sa.SimulationSettings.from_env({"SGLANG_SIMULATE_ACC_LEN": raw})
    assert settings.acc_len == acc_len and type(settings.acc_len) is float
    assert settings.enabled is enabled


@pytest.mark.parametrize("raw", ["abc", "", "2,5", "nan", "NaN"])
def test_settings_reject_an_unparsable_length_instead_of_turning_simulation_off(raw):
    with pytest.raises(ValueError, match=r"SGLANG_SIMULATE_ACC_LEN must be a number"):
        sa.SimulationSettings.from_env({"SGLANG_SIMULATE_ACC_LEN": raw})


def test_settings_take_method_and_mode_verbatim_without_validating_them():
    env = {"SGLANG_SIMULATE_ACC_METHOD": "bogus", "SGLANG_SIMULATE_ACC_TOKEN_MODE": "odd"}
    settings = sa.SimulationSettings.from_env(env)
    assert (settings.method, settings.token_mode) == ("bogus", "odd")


def test_settings_read_os_environ_when_no_mapping_is_given(monkeypatch):
    monkeypatch.setenv("SGLANG_SIMULATE_ACC_LEN", "3.5")
    monkeypatch.setenv("SGLANG_SIMULATE_ACC_METHOD", "multinomial")
    monkeypatch.setenv("SGLANG_SIMULATE_ACC_TOKEN_MODE", "real-draft-token")
    expected = sa.SimulationSettings(3.5, "multinomial", "real-draft-token")
    assert sa.SimulationSettings.from_env() == expected


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        sa.SimulationSettings().acc_len = 2.0


@pytest.mark.parametrize(
    "mode, topk", [("fixed", 1), ("fixed", 4), ("real-draft-token", 1)]
)
def test_check_token_mode_accepts_the_two_modes(mode, topk):
    assert sa.check_token_mode(mode, topk) is None
    assert sa.TOKEN_MODES == ("fixed", "real-draft-token")


@pytest.mark.parametrize(
    "mode, topk, match",
    [
        ("real-draft-token", 2, r"topk == 1.*topk=2"),
        ("real-draft-token", 8, r"'real-draft-token' requires a single-chain draft"),
        ("bogus", 1, r"'bogus'.*\('fixed', 'real-draft-token'\)"),
        ("Fixed", 1, r"simulate_acc_token_mode 'Fixed'"),
        ("", 4, r"simulate_acc_token_mode ''"),
    ],
)
def test_check_token_mode_names_the_bad_value_and_the_allowed_ones(mode, topk, match):
    with pytest.raises(ValueError, match=match):
        sa.check_token_mode(mode, topk)


LOGITS = torch.tensor(  # argmax per row: 2, 0, 1, 3, 0, 3
    [[0.1, 0.2, 0.9, 0.0], [5.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.5, 0.2],
     [-3.0, -2.0, -4.0, -1.0], [9.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5]]
)


@pytest.mark.parametrize(
    "bs, drafts, expected",
    [(2, 3, [[2, 0, 1], [3, 0, 3]]), (3, 2, [[2, 0], [1, 3], [0, 3]]),
     (1, 6, [[2, 0, 1, 3, 0, 3]])],
)
def test_real_mode_takes_the_logits_argmax_as_target_predict(bs, drafts, expected):
    got = sa.target_predict_for("real-draft-token", None, LOGITS, bs, drafts)
    want = torch.tensor(expected, dtype=torch.int64)
    assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)


def test_real_mode_keeps_a_given_target_predict():
    target = torch.tensor([[4, 5]])
    assert sa.target_predict_for("real-draft-token", target, LOGITS, 1, 2) is target


@pytest.mark.parametrize("target", [None, torch.tensor([[4, 5]])])
def test_fixed_mode_passes_target_predict_through_untouched(target):
    assert sa.target_predict_for("fixed", target, LOGITS, 3, 2) is target
    assert sa.target_predict_for("fixed", target, None, 3, 2) is target


@pytest.mark.parametrize(
    "logits, bs, drafts, match",
    [
        (None, 2, 3, r"needs target_predict or next_token_logits"),
        (LOGITS.tolist(), 2, 3, r"needs target_predict or next_token_logits"),
        (LOGITS, 2, 2, r"next_token_logits must be 2-D with bs \* draft_token_num = 4 rows"),
        (LOGITS.reshape(-1), 2, 3, r"next_token_logits .*got shape \(24,\)"),
        (LOGITS.reshape(2, 3, 4), 2, 3, r"next_token_logits .*got shape \(2, 3, 4\)"),
    ],
)
def test_real_mode_without_target_predict_needs_matching_logits(logits, bs, drafts, match):
    with pytest.raises(ValueError, match=match):
        sa.target_predict_for("real-draft-token", None, logits, bs, drafts)


# The caller's checks are simacc's own code, so they are self-tests here, not properties of an
# implementation under test; the planted bugs below show that they can fail.


@given(mode=sx.bad_token_modes(), topk=st.integers(1, 8))
def test_caller_rejects_unknown_token_mode(mode, topk):
    with pytest.raises(ValueError) as raised:
        sa.check_token_mode(mode, topk)
    message = str(raised.value)
    assert repr(mode) in message and all(repr(m) in message for m in sa.TOKEN_MODES), message


@given(topk=st.integers(2, 64) | st.integers(-4, 0))
def test_caller_rejects_real_mode_on_trees(topk):
    with pytest.raises(ValueError) as raised:
        sa.check_token_mode("real-draft-token", topk)
    assert f"topk={topk}" in str(raised.value), str(raised.value)


def _accepts_trees(mode, topk):
    validation.check_mode(mode)


def _vague(mode, topk):
    if mode not in sa.TOKEN_MODES or topk != 1:
        raise ValueError("bad simulation settings")


@pytest.mark.parametrize(
    "planted, test, error",
    [
        (_accepts_trees, test_caller_rejects_real_mode_on_trees, pytest.fail.Exception),
        (_vague, test_caller_rejects_real_mode_on_trees, AssertionError),
        (_vague, test_caller_rejects_unknown_token_mode, AssertionError),
    ],
)
def test_the_caller_checks_reject_a_planted_bug(monkeypatch, planted, test, error):
    monkeypatch.setattr(sa, "check_token_mode", planted)
    with pytest.raises(error):
        test()
