"""The fixed id is a setting of every contract (CONTRACT.md §5.2): ``--fixed-token-id N``, then
``SIMACC_FIXED_TOKEN_ID``, then the implementation's own ``SGLANG_SIMULATE_ACC_TOKEN_ID`` (read
as sglang reads it), then 100. An implementation that writes 64 is conformant when the check
expects 64, in the eagle, legacy, DFLASH and kernel contracts alike, and the references write
the configured default."""

import os
import subprocess
import sys
import types

import pytest
import torch
from tests.commands.test_check import (
    EAGLE,
    FIXED,
    impl_file,
    rows,
    run,
    summary,
    workdir,  # noqa: F401 - a fixture
)

from simacc import properties
from simacc.commands.checking import conformance, verdict
from simacc.harness.call import impl
from simacc.harness.config import settings as opts
from simacc.harness.config.status import Status
from simacc.harness.model import recording
from simacc.harness.model.cases import EagleCase, TensorArg
from simacc.harness.sessions import inprocess

WRITES_64 = f"return simacc.generate_simulated_accept_index({EAGLE}, fixed_token_id=64)\n"
BYTE_IDENTICAL = "fixed_mode_is_byte_identical_to_legacy"


@pytest.mark.parametrize("given, environ, expected, origin", [
    ({}, {}, None, "default"),
    ({}, {"SGLANG_SIMULATE_ACC_TOKEN_ID": "64"}, 64, "SGLANG_SIMULATE_ACC_TOKEN_ID"),
    ({}, {"SGLANG_SIMULATE_ACC_TOKEN_ID": "64", "SIMACC_FIXED_TOKEN_ID": "7"}, 7, "SIMACC_FIXED_TOKEN_ID"),
    ({"fixed_token_id": 32}, {"SGLANG_SIMULATE_ACC_TOKEN_ID": "64"}, 32, "--fixed-token-id"),
])
def test_the_fixed_id_is_the_option_then_simacc_s_variable_then_the_implementation_s(given, environ, expected,
                                                                                      origin):
    assert opts.resolve(given, environ=environ).fixed_token_id == expected
    assert opts.origin("fixed_token_id", given, environ) == origin


def test_a_bad_sglang_simulate_acc_token_id_is_a_one_line_settings_error():
    with pytest.raises(opts.SettingsError, match=r"^SGLANG_SIMULATE_ACC_TOKEN_ID: must be a whole number, got 'x'$"):
        opts.resolve({}, environ={"SGLANG_SIMULATE_ACC_TOKEN_ID": "x"})


def test_an_eagle_implementation_writing_64_is_conformant_when_its_build_says_64(workdir, capsys, monkeypatch):
    monkeypatch.setenv("SGLANG_SIMULATE_ACC_TOKEN_ID", "64")  # the child session, and its references, see it too
    code, out, _ = run(capsys, impl_file(workdir, WRITES_64), properties=(FIXED, BYTE_IDENTICAL))
    assert code == 0 and rows(out) == {FIXED: "pass", BYTE_IDENTICAL: "pass"}
    assert "fixed token id 64 (SGLANG_SIMULATE_ACC_TOKEN_ID)" in out and summary(out) == "CONFORMANT: 2 pass (exit 0)"


def test_a_failure_under_another_fixed_id_replays_with_it_and_the_header_says_where_it_came_from():
    failed = verdict.PropertyResult(FIXED, Status.FAIL, 1, 0.1, repro="f.json", nodeid=f"p/t.py::test_{FIXED}[cpu]")
    chosen = opts.Settings(impl="m.py:f", fixed_token_id=65)
    assert conformance.replay(failed, chosen) == "simacc repro f.json --impl m.py:f --fixed-token-id 65"
    failed.repro = None
    assert conformance.replay(failed, chosen) == f"simacc check m.py:f --property '{FIXED}[cpu]' -n 0 --fixed-token-id 65"
    header = conformance.header_of(chosen, {"fixed_token_id": 65}, {"fixed_token_id": 65})
    assert "; fixed token id 65 (--fixed-token-id)" in verdict.format_header(header)


def test_the_replay_line_of_a_pytest_failure_carries_the_fixed_id_an_option_set(tmp_path):
    case = EagleCase(accept_index=TensorArg(torch.zeros(1, 1, dtype=torch.int32)),
                     predict=TensorArg(torch.zeros(1, dtype=torch.int32)),
                     num_correct_drafts=TensorArg(torch.zeros(1, dtype=torch.int32)), candidates=None,
                     target_predict=None, bs=1, spec_steps=0, simulate_acc_len=1.0,
                     simulate_acc_method="match-expected", simulate_acc_token_mode="fixed", seed=0)
    report = types.SimpleNamespace(longrepr=None, sections=[], user_properties=[])
    runner = types.SimpleNamespace(last=(case,), impl=impl.reference("eagle", fixed_token_id=65), device="cpu",
                                   context="inference")
    recording.record(report, None, runner, FIXED, "simacc.properties.test_fixed", tmp_path, tmp_path)
    ((title, text),) = report.sections
    assert title == recording.SECTION and text.splitlines()[-1].endswith(
        "--impl simacc:generate_simulated_accept_index --fixed-token-id 65"), text


FIXED_PROPERTIES = {"eagle": FIXED, "legacy": FIXED, "kernel": "kernel_fixed_mode_fills_every_predict_element",
                    "dflash": "dflash_fixed_mode_fills_bonus_and_tokens_with_the_fixed_id"}


def writing_64(contract):
    """A callable of ``contract`` that writes 64 where its reference writes the default (the
    legacy and kernel references take no fixed id: the default is overwritten)."""
    import functools

    import simacc

    if contract == "eagle":
        return functools.partial(simacc.generate_simulated_accept_index, fixed_token_id=64)
    if contract == "dflash":
        return functools.partial(simacc.apply_dflash_simulated_acceptance, fixed_token_id=64)
    if contract == "legacy":
        def legacy(accept_index, predict, num_correct_drafts, bs, spec_steps, simulate_acc_len, simulate_acc_method):
            out = simacc.legacy_generate_simulated_accept_index(accept_index, predict, num_correct_drafts, bs,
                                                                spec_steps, simulate_acc_len, simulate_acc_method)
            predict.fill_(64)
            return out

        return legacy

    def kernel(**kwargs):
        out = simacc.simulated_accept(**kwargs)
        if not kwargs["real_tokens"]:
            kwargs["predict_tokens"].fill_(64)
        return out

    return kernel


@pytest.mark.parametrize("contract", sorted(FIXED_PROPERTIES))
def test_every_in_place_contract_holds_its_fixed_mode_to_the_configured_id(contract, monkeypatch):
    module = type(sys)("writes_64")
    module.generate = writing_64(contract)
    monkeypatch.setitem(sys.modules, "writes_64", module)
    prop = properties.find(FIXED_PROPERTIES[contract])
    for fixed, status in ((64, Status.PASS), (None, Status.FAIL)):
        loaded = impl.load("writes_64:generate", contract, fixed_token_id=fixed)
        assert loaded.contract == contract
        (result,) = inprocess.run(loaded, "cpu", [prop], seed=0)
        assert result.status == status, (fixed, result.message)


def test_the_references_write_sglang_simulate_acc_token_id():
    code = ("import torch, simacc\n"
            "p = torch.zeros(3, dtype=torch.int32)\n"
            "simacc.legacy_generate_simulated_accept_index(torch.tensor([[0]], dtype=torch.int32), p, "
            "torch.zeros(1, dtype=torch.int32), 1, 0, 1.0, 'match-expected')\n"
            "print(p.tolist(), simacc.FIXED_TOKEN_ID)\n")
    env = {**os.environ, "SGLANG_SIMULATE_ACC_TOKEN_ID": "64"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.split() == ["[64,", "64,", "64]", "64"], done.stderr
