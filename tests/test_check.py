"""``simacc check``: verdicts, exit codes, JSON, xfails and robustness against hanging or
crashing implementations (issue #4).

Each check that runs the suite starts a child pytest, so these tests keep it small: a few
properties (``--property``), a few examples, one process (``-n 0``) unless the test is
about xdist, and a fixed seed. They run in ``tmp_path``, outside the repository: the
example database and repro files land there, and every check shows that ``simacc check``
works from any folder.
"""

import json
import sys
import textwrap
import time

import pytest
import torch

from simacc import check, cli, impl, verdict

EAGLE = ", ".join(impl.EAGLE_PARAMS)
INDEX = "index_rows_are_root_plus_range_then_minus_one"
COUNT = "num_correct_drafts_is_length_minus_one"
FIXED = "fixed_mode_fills_predict_with_the_fixed_id"
REAL = "real_mode_writes_drafts_then_bonus_at_accepted_slots"
DFLASH = "dflash_counts_are_length_minus_one_and_length"


@pytest.fixture
def workdir(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading an IMPL appends folders
    return tmp_path


def impl_file(folder, body, name="candidate.py"):
    """A throwaway implementation ``generate`` of the eagle signature, outside any package."""
    source = f"import os, time\nimport simacc\n\ndef generate({EAGLE}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    (folder / name).write_text(source)
    return f"{name}:generate"


REFERENCE_CALL = f"out = simacc.generate_simulated_accept_index({EAGLE})\n"
OFF_BY_ONE = REFERENCE_CALL + "num_correct_drafts += 1  # counts the bonus as a draft\nreturn out\n"


def run(capsys, *argv, properties=(), small=True):
    """``simacc check ARGV`` in this process (the suite itself runs in a child)."""
    args = ["check"]
    if small:
        args += ["--device", "cpu", "--max-examples", "5", "--seed", "0", "-n", "0"]
    args += list(argv)
    for pid in properties:
        args += ["--property", pid]
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def rows(out):
    """``{property: status}`` from the printed table (columns are two spaces apart)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("property "))
    table = {}
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("note:"):
            break
        name, status = [part.strip() for part in line.split("  ") if part.strip()][:2]
        table[name] = status
    return table


def test_the_reference_is_conformant_and_exits_0_with_progress_on_stderr(workdir, capsys):
    code, out, err = run(capsys, "simacc:generate_simulated_accept_index", properties=(INDEX, REAL))
    assert code == 0
    assert rows(out) == {INDEX: "pass", REAL: "pass"}
    assert "contract:  eagle (inferred from the signature)" in out and "CONFORMANT" in out
    assert "[1/2]" in err and "[2/2]" in err


def test_the_legacy_reference_passes_with_the_real_mode_properties_not_applicable(workdir, capsys):
    code, out, _ = run(capsys, "simacc:legacy_generate_simulated_accept_index", "--contract", "legacy",
                       properties=(FIXED, REAL))
    assert code == 0
    assert rows(out) == {FIXED: "pass", REAL: "not applicable"}
    assert "contract 'legacy' (applies to eagle)" in out


def test_the_dflash_reference_passes_with_the_eagle_properties_not_applicable(workdir, capsys):
    code, out, _ = run(capsys, "simacc:apply_dflash_simulated_acceptance", "--contract", "dflash",
                       properties=(DFLASH, INDEX))
    assert code == 0
    assert rows(out) == {DFLASH: "pass", INDEX: "not applicable"}


def test_a_buggy_file_fails_the_right_property_and_the_json_says_so(workdir, capsys):
    spec = impl_file(workdir, OFF_BY_ONE)
    (workdir / "out").mkdir()
    code, out, _ = run(capsys, spec, "--json", "out/verdict.json", properties=(INDEX, COUNT))
    assert code == 1
    assert rows(out) == {INDEX: "pass", COUNT: "FAIL"}
    assert "num_correct_drafts[0]=" in out and "NOT CONFORMANT" in out
    assert [p.name for p in (workdir / "out").iterdir()] == ["verdict.json"]  # no temporary file left
    data = json.loads((workdir / "out" / "verdict.json").read_text())
    assert (data["schema"], data["verdict"], data["exit_code"]) == ("simacc.check/1", "not conformant", 1)
    assert data["header"]["impl"] == spec and data["header"]["file"] == str(workdir / "candidate.py")
    by_id = {r["id"]: r for r in data["results"]}
    assert by_id[INDEX]["status"] == "pass" and by_id[INDEX]["examples"] == 5
    failed = by_id[COUNT]
    assert failed["status"] == "FAIL" and "but should be" in failed["message"]
    assert failed["replay"] in out
    if failed["repro"]:  # the repro hooks (issue #5) wrote a file: the replay command names it
        assert (workdir / failed["repro"]).is_file() and failed["replay"] == f"simacc repro {failed['repro']}"


def test_xfails_turn_a_listed_failure_into_an_expected_one_and_report_the_rest(workdir, capsys):
    spec = impl_file(workdir, OFF_BY_ONE)
    (workdir / "known.txt").write_text(f"# known deviations\n{COUNT}  # off by one\n{INDEX}\nno_such_property\n")
    code, out, err = run(capsys, spec, "--xfails", "known.txt", properties=(INDEX, COUNT))
    assert rows(out) == {COUNT: "expected failure", INDEX: "unexpected pass"}
    assert code == 1  # an unexpected pass is a change to look at
    assert "'no_such_property' matches no property" in out and "no_such_property" in err


def test_a_hanging_implementation_fails_within_the_time_limit(workdir, capsys):
    spec = impl_file(workdir, "time.sleep(600)\n")
    start = time.monotonic()
    code, out, _ = run(capsys, spec, "--timeout", "1", properties=(INDEX,))
    assert code == 1 and rows(out) == {INDEX: "FAIL"}
    assert "did not return within 1 s on cpu" in out
    assert time.monotonic() - start < 60


def test_a_crashing_worker_fails_its_property_and_the_others_still_run(workdir, capsys):
    spec = impl_file(workdir, "if simulate_acc_token_mode == 'real-draft-token':\n    os._exit(7)\n" + REFERENCE_CALL + "return out\n")
    code, out, _ = run(capsys, spec, "-n", "1", properties=(FIXED, REAL))  # a worker, so a crash is isolated
    assert code == 1
    assert rows(out) == {FIXED: "pass", REAL: "FAIL"}
    assert "crashed while running" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_checking_on_cuda_without_cuda_checks_nothing_and_says_so(workdir, capsys):
    code, out, _ = run(capsys, "simacc:generate_simulated_accept_index", "--json", "v.json", "--device", "cuda",
                       properties=(INDEX,))
    assert code == 0
    assert "NOTHING CHECKED" in out and "no CUDA" in out
    assert json.loads((workdir / "v.json").read_text())["verdict"] == "nothing checked"


def test_a_property_id_that_matches_nothing_is_a_usage_error(workdir, capsys):
    code, _, err = run(capsys, "simacc:generate_simulated_accept_index", properties=("no_such_property",))
    assert code == 2 and "no property was selected" in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["simacc_no_such_module:fn"], "module 'simacc_no_such_module' not found"),
        (["simacc:no_such_function"], "has no attribute 'no_such_function'"),
        (["simacc:__version__"], "not callable"),
        (["simacc:sample_simulated_acc_len"], "fits no contract"),
        (["simacc:generate_simulated_accept_index", "--contract", "dflash"], "does not fit contract 'dflash'"),
        (["simacc:generate_simulated_accept_index", "--xfails", "missing.txt"], "--xfails missing.txt"),
        (["simacc:generate_simulated_accept_index", "--json", "no/such/folder/v.json"], "--json no/such/folder/v.json"),
        (["simacc:generate_simulated_accept_index", "--hypothesis-profile", "nightly"], "unknown Hypothesis profile 'nightly'"),
    ],
)
def test_a_bad_argument_exits_2_with_one_line_before_any_test_runs(workdir, capsys, monkeypatch, argv, fragment):
    def no_child(*args, **kwargs):
        raise AssertionError("the suite must not start")

    monkeypatch.setattr(check.subprocess, "Popen", no_child)
    code, out, err = run(capsys, *argv, small=False)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("simacc check: error: ") and fragment in err


def test_a_file_that_raises_on_import_exits_2_with_one_line(workdir, capsys):
    (workdir / "broken.py").write_text("raise ImportError('triton is not installed')\n")
    code, _, err = run(capsys, "broken.py:generate", small=False)
    assert code == 2 and err.count("\n") == 1
    assert "importing broken.py raised ImportError: triton is not installed" in err


@pytest.mark.parametrize("argv", [["--device", "tpu"], ["--contract", "medusa"], ["--timeout", "0"], ["-n", "-1"]])
def test_a_bad_option_value_is_an_argparse_usage_error(capsys, argv):
    with pytest.raises(SystemExit) as info:
        cli.main(["check", *argv])
    assert info.value.code == 2


def report(nodeid, when, outcome, **extra):
    return {"event": "report", "nodeid": nodeid, "when": when, "outcome": outcome, "duration": 0.5,
            "user_properties": extra.pop("user_properties", []), **extra}


def finished(nodeid, outcome="passed", examples=None, **extra):
    props = [["simacc_examples", examples]] if examples is not None else []
    return [report(nodeid, "setup", "passed"), report(nodeid, "call", outcome, user_properties=props, **extra),
            report(nodeid, "teardown", "passed", user_properties=props)]


def skipped(nodeid, reason):
    return [report(nodeid, "setup", "skipped", reason=reason), report(nodeid, "teardown", "passed")]


def test_devices_that_agree_share_a_row_and_a_device_skipped_everywhere_is_one_note():
    records = [*finished("p/t.py::test_a[cpu]", examples=5), *skipped("p/t.py::test_a[cuda]", "no CUDA"),
               *finished("p/t.py::test_b[cpu]", examples=5), *skipped("p/t.py::test_b[cuda]", "no CUDA")]
    result = verdict.build({}, [], records)
    assert [(r.id, r.status, r.examples, r.devices) for r in result.results] == [
        ("a", "pass", 5, ("cpu",)), ("b", "pass", 5, ("cpu",))]
    assert result.notes == ["cuda: every property skipped (no CUDA)"] and result.exit_code == 0


def test_each_failing_device_gets_its_own_row():
    records = [*finished("p/t.py::test_a[cpu]", examples=5),
               *finished("p/t.py::test_a[cuda]", "failed", examples=2, crash="AssertionError: x=1, but should be 2")]
    result = verdict.build({}, [], records)
    assert [(r.id, r.status) for r in result.results] == [("a[cpu]", "pass"), ("a[cuda]", "FAIL")]
    assert result.results[1].message == "AssertionError: x=1, but should be 2" and result.exit_code == 1


def test_expected_failures_pass_and_unexpected_passes_fail():
    xfailed = finished("p/t.py::test_a[cpu]", "skipped", wasxfail="listed", crash="AssertionError: no")
    xpassed = finished("p/t.py::test_b[cpu]", "failed", crash="[XPASS(strict)] listed")
    assert verdict.build({}, [], xfailed).exit_code == 0
    result = verdict.build({}, [], xfailed + xpassed)
    assert [r.status for r in result.results] == ["expected failure", "unexpected pass"] and result.exit_code == 1


def test_a_test_that_never_finished_is_a_failure_that_says_why():
    records = [report("p/t.py::test_a[cpu]", "setup", "passed")]
    result = verdict.build({}, ["p/t.py::test_a[cpu]", "p/t.py::test_b[cpu]"], records, "pytest stopped with exit code -11")
    assert [r.status for r in result.results] == ["FAIL", "FAIL"]
    assert "died while running it (pytest stopped with exit code -11)" in result.results[0].message
    assert result.results[1].message == "not run: pytest stopped with exit code -11"


def test_nothing_checked_when_every_property_was_skipped():
    result = verdict.build({}, [], skipped("p/t.py::test_a[cuda]", "no CUDA"))
    assert (result.exit_code, result.outcome) == (0, "nothing checked")
    assert result.to_json()["verdict"] == "nothing checked"
