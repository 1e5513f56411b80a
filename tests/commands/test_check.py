"""``simacc check``: verdicts, exit codes, JSON, JUnit, xfails, progress, device spellings
and robustness against hanging, crashing or interrupted runs.

Each check starts a pytest session in a child process, so these tests keep each check small:
a few properties (``--property``), a few examples, no xdist workers (``-n 0``) unless the
test is about them, and a fixed seed. They run in ``tmp_path``, outside the repository: the
example database and repro files land there, and every check shows that ``simacc check``
works from any folder. The verdict's own logic is tested on made-up results, without a run.
"""

import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from hypothesis import settings

from simacc import properties
from simacc import strategies as sx
from simacc.commands import cli
from simacc.commands.checking import check, verdict
from simacc.harness.call import process_state
from simacc.harness.config import settings as opts

EAGLE = ", ".join(sx.EAGLE.params)
INDEX = "index_rows_are_root_plus_range_then_minus_one"
COUNT = "num_correct_drafts_is_length_minus_one"
FIXED = "fixed_mode_fills_predict_with_the_fixed_id"
REAL = "real_mode_writes_drafts_then_bonus_at_accepted_slots"
DFLASH = "dflash_counts_are_length_minus_one_and_length"
REFERENCE = "simacc:generate_simulated_accept_index"
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


@pytest.fixture
def workdir(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading an IMPL appends folders
    return tmp_path


def impl_file(folder, body, name="candidate.py", preamble=""):
    """A throwaway implementation ``generate`` of the eagle signature, outside any package."""
    source = f"import os, signal, time\nimport simacc\n{preamble}\ndef generate({EAGLE}):\n"
    (folder / name).write_text(source + textwrap.indent(textwrap.dedent(body), "    "))
    return f"{name}:generate"


REFERENCE_CALL = f"out = simacc.generate_simulated_accept_index({EAGLE})\n"
OFF_BY_ONE = REFERENCE_CALL + "num_correct_drafts += 1  # counts the bonus as a draft\nreturn out\n"


def run(capsys, *argv, properties=(), small=True, verbose=True):
    """``simacc check ARGV`` in this process (``-v``: the whole table, which :func:`rows`
    reads, unless ``verbose`` is False); ``(exit code, stdout, stderr)``."""
    args = ["check"] + (["-v"] if verbose else [])
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


def summary(out):
    """The verdict's last line, without the check's wall time (`` in 1.2 s``)."""
    return re.sub(r" in \d+\.\d s \(exit", " (exit", out.rstrip().splitlines()[-1])


def test_the_reference_is_conformant_and_exits_0_with_a_progress_line_per_test_on_a_log(workdir, capsys):
    code, out, err = run(capsys, REFERENCE, "--json", "v.json", properties=(INDEX, REAL))
    assert code == 0
    # properties of the first grad mode only: no session of the second is started
    command = json.loads((workdir / "v.json").read_text())["header"]["pytest_command"]
    assert '"run_context": "inference"' in command and "; " not in command and '"run_context": "no_grad"' not in command
    assert rows(out) == {INDEX: "pass", REAL: "pass"}
    assert "contract:  eagle (inferred from the signature)" in out and summary(out) == "CONFORMANT: 2 pass (exit 0)"
    first, second = err.splitlines()
    assert re.fullmatch(rf"\[1/2\] {INDEX}\[cpu\]: pass \(\d+\.\d s, 5 examples\)", first)
    assert second.startswith(f"[2/2] {REAL}[cpu]: pass (") and "\r" not in err


def test_a_property_checked_in_every_grad_mode_has_one_progress_line_once_each_mode_ran_it(workdir, capsys):
    """Its tests in the later grad mode run in a session of their own that starts later: its
    one line waits for them, and the count never passes its total."""
    code, out, err = run(capsys, REFERENCE, "--json", "v.json", properties=(INDEX, "result_aliases_no_input"),
                         verbose=False)
    assert code == 0, out
    # some properties: the later session starts once the first has said it runs some of them
    first, later = json.loads((workdir / "v.json").read_text())["header"]["pytest_command"].split("; ")
    assert '"run_context": "inference"' in first and '"run_context": "no_grad"' in later, later
    lines = sorted(err.splitlines())
    assert [line.split(" ", 1)[0] for line in lines] == ["[1/2]", "[2/2]"], err
    (aliasing,) = [line for line in lines if " result_aliases_no_input: " in line]
    assert aliasing.endswith(", 10 examples)"), err  # 5 in each grad mode


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_progress_is_one_line_rewritten_in_place(workdir, capsys, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")  # the status line is cut to the terminal's width
    code, out, _ = run(capsys, REFERENCE, properties=(INDEX, COUNT))
    shown = terminal.getvalue()
    assert code == 0 and shown.endswith("\n") and shown.count("\n") == 1  # one line, ended before the table
    states = [state.rstrip() for state in shown.rstrip("\n").split("\r")[1:]]
    assert f"[0/2] - {INDEX}[cpu]" in states and f"[1/2] 1 pass - {COUNT}[cpu]" in states, states
    assert states[-1] == "[2/2] 2 pass"
    assert rows(out) == {INDEX: "pass", COUNT: "pass"}


def test_quiet_prints_the_summary_alone_when_nothing_fails(workdir, capsys, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = run(capsys, REFERENCE, "-q", properties=(INDEX,), verbose=False)
    assert code == 0 and terminal.getvalue() == ""
    assert out.count("\n") == 1 and summary(out) == "CONFORMANT: 1 pass (exit 0)"


def test_the_legacy_reference_passes_with_the_real_mode_properties_not_applicable(workdir, capsys):
    code, out, _ = run(capsys, "simacc:legacy_generate_simulated_accept_index", "--contract", "legacy", "--json",
                       "v.json", properties=(FIXED, REAL))
    assert code == 0
    assert rows(out) == {FIXED: "pass"} and summary(out) == "CONFORMANT: 1 pass, 1 not applicable (exit 0)"
    reasons = json.loads((workdir / "v.json").read_text())["not_applicable"]
    assert list(reasons.values()) == ["contract 'legacy' (it applies to eagle)"]


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
    assert (workdir / failed["repro"]).is_file()
    assert failed["replay"] == f"simacc repro {failed['repro']} --impl {spec}"
    assert cli.main(shlex.split(failed["replay"])[1:]) == 1  # the printed command, as a user pastes it
    assert "num_correct_drafts[0]=" in capsys.readouterr().out


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
    assert code == 1 and rows(out) == {INDEX: "hung"}
    assert "did not return within 1 s on cpu" in out
    assert time.monotonic() - start < 60


def test_a_crashing_worker_fails_its_property_and_the_others_still_run(workdir, capsys):
    # FIXED runs first and crashes its worker; xdist starts another one for REAL
    spec = impl_file(workdir, "if simulate_acc_token_mode == 'fixed':\n    os._exit(7)\n" + REFERENCE_CALL + "return out\n")
    code, out, _ = run(capsys, spec, "-n", "1", properties=(FIXED, REAL))
    assert code == 1
    assert rows(out) == {FIXED: "crashed", REAL: "pass"}
    assert "the worker process died while running it" in out


def _own_thread_count():
    with process_state.own_threads():  # this suite's workers run on their share of the cores
        return torch.get_num_threads()


@pytest.mark.skipif(_own_thread_count() < 2, reason="torch's own count is one thread here: setting one is no change")
def test_a_call_that_sets_one_thread_fails_where_each_worker_was_given_one(workdir, capsys):
    """As many workers as cores run torch on one thread each; a serving process runs on torch's
    own count, and a call that sets one thread changes that: judged from it, not the share."""
    cores = len(os.sched_getaffinity(0))
    spec = impl_file(workdir, "torch.set_num_threads(1)\n" + REFERENCE_CALL + "return out\n", preamble="import torch")
    code, out, _ = run(capsys, spec, "-n", str(cores), properties=("leaves_the_process_as_it_found_it", INDEX))
    assert code == 1 and rows(out) == {"leaves_the_process_as_it_found_it": "FAIL", INDEX: "pass"}, out
    assert f"thread count {_own_thread_count()} -> 1" in out, out


def test_an_implementation_that_ends_its_process_in_a_call_is_not_conformant(workdir, capsys):
    # with -n 0 the one process of the session ends, with exit code 0: no result is a success
    spec = impl_file(workdir, "os._exit(0)\n")
    code, out, _ = run(capsys, spec, properties=(INDEX, COUNT))
    assert code == 1 and rows(out) == {INDEX: "crashed", COUNT: "not run"}, out
    assert "the process running it died: it ended with exit code 0" in out


@pytest.mark.parametrize("stop", ["ctrl_c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_the_check_with_exit_130_the_verdict_so_far_and_nothing_left(workdir, ctrl_c, stop):
    """A real Ctrl-C reaches the command and its session (one process group, as a shell starts
    a job: in the terminal's session, where the command shares the suite's fork server); a
    SIGTERM (a CI's time limit, ``kill``) may reach the command alone, which passes it on.
    Either way the check's folders go with it (it would leave them, dying of the signal)."""
    spec = impl_file(workdir, "time.sleep(0.5)\n" + REFERENCE_CALL + "return out\n")
    command = [sys.executable, "-m", "simacc", "check", spec, "--device", "cpu", "--max-examples", "50", "--seed", "0",
               "-n", "0", "--property", INDEX]
    (workdir / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(workdir / "tmp")}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, process_group=0,
                            env=env)
    header = proc.stdout.readline()  # printed once the session has loaded the implementation
    assert header.startswith("simacc check"), header
    time.sleep(1.0)  # some examples into the property
    if stop == "ctrl_c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.terminate()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.endswith("simacc check: interrupted\n"), err
    assert summary(out).startswith("INTERRUPTED: ") and summary(out).endswith("(exit 130)"), out
    assert os.listdir(workdir / "tmp") == []


def test_a_check_leaves_this_process_as_it_found_it(workdir, capsys):
    cli.build_parser()  # the command's own modules: imported by any command, the first as well
    before = (settings.get_current_profile_name(), list(sys.path), dict(os.environ), signal.getsignal(signal.SIGINT),
              signal.getsignal(signal.SIGALRM), sorted(sys.modules))
    rng = torch.get_rng_state()
    spec = impl_file(workdir, REFERENCE_CALL + "return out\n")
    code, _, _ = run(capsys, spec, "--profile", "thorough", properties=(INDEX,))
    assert code == 0
    after = (settings.get_current_profile_name(), list(sys.path), dict(os.environ), signal.getsignal(signal.SIGINT),
             signal.getsignal(signal.SIGALRM), sorted(sys.modules))
    assert after == before and torch.equal(torch.get_rng_state(), rng)  # the implementation was never imported here


def test_a_thread_the_implementation_leaves_running_does_not_keep_the_command_alive(workdir):
    # a real process: only a process's exit waits for non-daemon threads
    leave = "threading.Thread(target=time.sleep, args=(600,), name='left-behind').start()\n"
    spec = impl_file(workdir, leave + REFERENCE_CALL + "return out\n", preamble="import threading\n")
    command = [sys.executable, "-m", "simacc", "check", spec, "--device", "cpu", "--max-examples", "2",
               "--seed", "0", "-n", "0", "-q", "--property", INDEX]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert summary(done.stdout) == "CONFORMANT: 1 pass (exit 0)"


# The reference through the command; tests/meta/test_zoo.py runs every correct entry of the zoo on
# cpu:0 in-process, through the same properties.
def test_an_indexed_cpu_spelling_is_conformant(workdir, capsys, spec=REFERENCE, level="exact"):
    # --device once accepted only cpu, cuda and all, and the index was compared with the spelling
    code, out, _ = run(capsys, spec, "--device", "cpu:0", "--level", level, "--max-examples", "1", "--seed", "0",
                       "-n", "0", properties=["regression", *on_a_device()], small=False)
    assert code == 0, out
    assert "devices:   cpu:0 (CUDA" in out and "CONFORMANT" in summary(out)


def test_simacc_device_takes_an_indexed_spelling_too():
    # the variable goes through the option's own parser: the check above then holds for it
    chosen = opts.resolve({"impl": REFERENCE}, environ={"SIMACC_DEVICE": "cpu:0"})
    assert chosen.devices == ("cpu:0",)


def on_a_device():
    """Every property that a case replays on a device: all but the statistical ones (a
    second each, whatever --max-examples says)."""
    return [prop.id for prop in properties.every_property() if prop.replayable]


@no_cuda
def test_checking_on_cuda_without_cuda_checks_nothing_and_exits_5(workdir, capsys):
    code, out, _ = run(capsys, REFERENCE, "--json", "v.json", "--device", "cuda", properties=(INDEX, COUNT))
    assert code == 5 and rows(out) == {INDEX: "skipped", COUNT: "skipped"}
    assert summary(out) == "NOTHING CHECKED: every property was skipped: no CUDA: torch.cuda.is_available() is False (exit 5)"
    data = json.loads((workdir / "v.json").read_text())
    assert (data["verdict"], data["exit_code"]) == ("nothing checked", 5)
    assert data["reason"] == "every property was skipped: no CUDA: torch.cuda.is_available() is False"


@no_cuda
def test_checking_all_devices_without_cuda_checks_the_cpu_and_exits_0_with_a_note(workdir, capsys):
    code, out, _ = run(capsys, REFERENCE, "--device", "all", properties=(INDEX,))
    assert code == 0 and rows(out) == {INDEX: "pass"}
    assert "note: cuda: every property skipped (no CUDA" in out and summary(out) == "CONFORMANT: 1 pass (exit 0)"


def test_a_contract_with_no_applicable_property_exits_5_and_says_why(workdir, capsys):
    code, out, _ = run(capsys, "simacc:apply_dflash_simulated_acceptance", properties=(INDEX, COUNT))
    assert code == 5 and "property" not in out.splitlines()[-3:][0]  # no rows
    assert summary(out).startswith("NOTHING CHECKED: every property was not applicable: contract 'dflash'"), out


def test_a_property_filter_that_matches_nothing_exits_5_and_says_why(workdir, capsys):
    code, out, err = run(capsys, REFERENCE, properties=("no_such_property",))
    assert code == 5 and err == ""
    assert summary(out) == "NOTHING CHECKED: --property no_such_property matches no property (exit 5)"


def test_the_help_lists_every_exit_code(capsys):
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    codes = capsys.readouterr().out.split("exit codes:")[1]
    assert [line.split()[0] for line in codes.splitlines() if line[:3].strip().isdigit()] == ["0", "1", "2", "5", "130"]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        ([REFERENCE, "--xfails", "missing.txt"], "xfails file"),
        ([REFERENCE, "--json", "no/such/folder/v.json"], "no/such/folder/v.json: no such folder"),
        ([], "no implementation selected"),
    ],
)
def test_a_bad_argument_exits_2_with_one_line_before_any_session_starts(workdir, capsys, monkeypatch, argv, fragment):
    def no_session(*args, **kwargs):
        raise AssertionError("the session must not start")

    monkeypatch.setattr(check.session, "run", no_session)
    monkeypatch.delenv("SIMACC_IMPL", raising=False)
    code, out, err = run(capsys, *argv, small=False)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("simacc check: error: ") and fragment in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        # one of the ways loading fails (tests/harness/test_impl.py has each): the session's one-line error
        ([REFERENCE, "--contract", "dflash"], "does not fit contract 'dflash'"),
    ],
)
def test_an_implementation_that_does_not_load_exits_2_with_one_line_before_any_property_runs(workdir, capsys, argv,
                                                                                             fragment):
    code, out, err = run(capsys, *argv, "-q", small=False, verbose=False)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("simacc check: error: ") and fragment in err, err


def test_a_file_that_raises_on_import_exits_2_with_one_line(workdir, capsys):
    (workdir / "broken.py").write_text("raise ImportError('triton is not installed')\n")
    code, _, err = run(capsys, "broken.py:generate", small=False)
    assert code == 2 and err.count("\n") == 1
    assert "importing broken.py raised ImportError: triton is not installed" in err


@pytest.mark.parametrize("argv", [["--device", "tpu"], ["--device", "cpu:x"], ["--contract", "medusa"],
                                  ["--timeout", "0"], ["-n", "-1"], ["--profile", "nightly"]])
def test_a_bad_option_value_is_an_argparse_usage_error(capsys, argv):
    with pytest.raises(SystemExit) as info:
        cli.main(["check", *argv])
    assert info.value.code == 2


def result(nodeid, status="pass", examples=None, message=""):
    """A result event of the stream, as the session's controller writes it."""
    device = nodeid.rstrip("]").rpartition("[")[2]
    return verdict.result_of({"nodeid": nodeid, "property": nodeid.split("::test_")[1].split("[")[0],
                              "device": device, "status": status, "examples": examples, "message": message,
                              "seconds": 0.5})


def test_devices_that_agree_share_a_row_and_a_device_skipped_everywhere_is_one_note():
    results = [result("p/t.py::test_a[cpu]", examples=5), result("p/t.py::test_a[cuda]", "skipped", message="no CUDA"),
               result("p/t.py::test_b[cpu]", examples=5), result("p/t.py::test_b[cuda]", "skipped", message="no CUDA")]
    got = verdict.build({}, [], results)
    assert [(r.id, r.status, r.examples, r.devices) for r in got.results] == [
        ("a", "pass", 5, ("cpu",)), ("b", "pass", 5, ("cpu",))]
    assert got.notes == ["cuda: every property skipped (no CUDA)"] and got.exit_code == 0


def test_a_device_that_was_not_selected_keeps_its_rows_that_say_why():
    results = [result("p/t.py::test_a[cpu]", examples=5),
               result("p/t.py::test_parity[cuda]", "skipped", message="the devices selected (--device) include no CUDA device")]
    got = verdict.build({"devices": ["cpu"]}, [], results)
    assert [(r.id, r.status) for r in got.results] == [("a", "pass"), ("parity", "skipped")] and not got.notes


def test_each_failing_device_gets_its_own_row():
    results = [result("p/t.py::test_a[cpu]", examples=5),
               result("p/t.py::test_a[cuda:1]", "FAIL", examples=2, message="AssertionError: x=1, but should be 2")]
    got = verdict.build({}, [], results)
    assert [(r.id, r.status) for r in got.results] == [("a[cpu]", "pass"), ("a[cuda:1]", "FAIL")]
    assert got.results[1].message == "x=1, but should be 2" and got.exit_code == 1  # the assertion's type is noise


def test_expected_failures_pass_and_unexpected_passes_fail():
    xfailed = [result("p/t.py::test_a[cpu]", "expected failure", message="AssertionError: no")]
    xpassed = [result("p/t.py::test_b[cpu]", "unexpected pass", message="[XPASS(strict)] listed")]
    assert verdict.build({}, [], xfailed).exit_code == 0
    got = verdict.build({}, [], xfailed + xpassed)
    assert [r.status for r in got.results] == ["expected failure", "unexpected pass"] and got.exit_code == 1
    assert got.results[1].message == "listed in the xfails file, but passed"


def test_a_test_without_a_result_is_not_run_which_never_passes_and_says_why_unless_interrupted():
    collected = ["p/t.py::test_a[cpu]", "p/t.py::test_b[cpu]"]
    got = verdict.build({}, collected, [result(collected[0])], stopped="the pytest process ended early, with exit code 0")
    assert [r.status for r in got.results] == ["pass", "not run"] and got.exit_code == 1
    assert got.results[1].message == "not run: the pytest process ended early, with exit code 0"
    stopped = verdict.build({}, collected, [result(collected[0])], stopped="interrupted", interrupted=True)
    assert [r.status for r in stopped.results] == ["pass", "skipped"] and stopped.outcome == "interrupted"
    assert verdict.render(stopped).endswith("INTERRUPTED: 1 pass, 1 skipped (exit 130)")


def test_every_property_skipped_is_nothing_checked_with_exit_5_and_the_reason():
    got = verdict.build({}, [], [result("p/t.py::test_a[cuda]", "skipped", message="no CUDA"),
                                 result("p/t.py::test_b[cuda]", "skipped", message="no CUDA")])
    assert (got.exit_code, got.outcome, got.reason) == (5, "nothing checked", "every property was skipped: no CUDA")
    assert got.to_json()["verdict"] == "nothing checked"
    assert verdict.render(got).endswith("\nNOTHING CHECKED: every property was skipped: no CUDA (exit 5)")


def test_the_junit_report_names_each_test_with_its_module_and_carries_the_replay_command():
    failed = result("simacc/properties/test_index.py::test_index_rows[cpu]", "FAIL", message="AssertionError: x<1")
    failed.replay = "simacc repro failures/x.json"
    got = verdict.build({"impl": "m:f"}, [], [failed, result("simacc/properties/test_index.py::test_counts[cpu]")],
                        {"simacc/properties/test_dflash.py::test_dflash_x[cpu]": "contract 'eagle'"})
    xml = verdict.junit(got)
    assert 'classname="simacc.properties.test_index" name="index_rows"' in xml
    assert 'tests="2" failures="1"' in xml and '<property name="not_applicable" value="1"/>' in xml
    assert "x&lt;1" in xml and "replay: simacc repro failures/x.json" in xml
    assert "test_dflash" not in xml.split("</properties>")[1]


@pytest.mark.parametrize("selected, reason", [
    ("cpu", "it compares a CUDA device with the CPU, and cpu is not one"),
    ("cuda:7", "the devices selected (--device) include no CPU"),
    ("cpu,cuda:7", "no cuda:7" if torch.cuda.is_available() else "no CUDA"),
])
def test_the_parity_properties_honour_the_device_selection(workdir, capsys, selected, reason):
    # they once ran whenever CUDA existed, whatever --device said
    code, out, _ = run(capsys, REFERENCE, "--device", selected, "--max-examples", "1", "-n", "0",
                       properties=["cuda_matches_cpu_byte_for_byte"], small=False)
    assert code == 5 and reason in out, out
