"""Self-tests of ``simacc fuzz``: it explores until the time is up, reports each
distinct failure once (a failure found again rewrites its own repro file), and stops
cleanly on Ctrl-C with what it found. Only the Ctrl-C test starts ``simacc fuzz`` as a process
of its own (a real signal); the others call it here, and only its rounds are processes."""

import os
import signal
import subprocess
import sys
import time

import pytest

from simacc.commands import cli, fuzz
from simacc.harness import repro_files as reprofile

REFERENCE = "simacc:generate_simulated_accept_index"
BUGGY = '''
import simacc as sa

def counts_the_bonus(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                     spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                     simulate_acc_token_mode="fixed"):
    """Writes L instead of L - 1 into num_correct_drafts."""
    out = sa.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
        simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    num_correct_drafts.add_(1)
    return out
'''


def _fuzz(*args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMACC_")}
    return subprocess.Popen([sys.executable, "-m", "simacc", "fuzz", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_fuzz_writes_a_repro_file_for_a_planted_bug_and_keeps_it_on_ctrl_c(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    proc = _fuzz(f"{tmp_path / 'buggy.py'}:counts_the_bonus", "--minutes", "5", "--device", "cpu",
                 "-k", "num_correct_drafts_is_length_minus_one", "--repro-dir", "found", cwd=tmp_path)
    deadline = time.monotonic() + 90
    while not list((tmp_path / "found").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, out
    assert "interrupted after" in out and f"new failure: found{os.sep}num_correct_drafts_is_length_minus_one-cpu-" in out
    assert "simacc/commands/fuzz.py" not in out  # no traceback of our own
    (found,) = (tmp_path / "found").glob("*.json")
    assert reprofile.load(found).property == "num_correct_drafts_is_length_minus_one"
    assert f"replay one with: simacc repro found{os.sep}{found.name}" in out


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run ``simacc fuzz`` in this process from ``tmp_path``, without this session's ``SIMACC_*``."""
    for name in [k for k in os.environ if k.startswith("SIMACC_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # the rounds' Hypothesis database lands there too
    return tmp_path


def rounds_that(monkeypatch, code):
    """Make every round the Python program ``code`` instead of a pytest run (the real round is
    the Ctrl-C test's): what fuzz does with a round's outcome, without a round's start-up."""
    monkeypatch.setattr(fuzz, "_round_command", lambda *args: [sys.executable, "-c", code])


def test_fuzz_stops_when_the_time_is_up(here, capsys, monkeypatch):
    rounds_that(monkeypatch, "import time; time.sleep(60)")
    start = time.monotonic()
    assert cli.main(["fuzz", REFERENCE, "--minutes", "0.01", "--device", "cpu", "--repro-dir", "found"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("round 1: seed") and "time is up after" in out and "0 distinct new failure(s)" in out, out
    assert time.monotonic() - start < 30  # the running round was stopped at the deadline


def test_fuzz_exits_2_when_a_round_cannot_run(here, capsys, monkeypatch):
    rounds_that(monkeypatch, "raise SystemExit(5)")  # pytest's "no tests collected"
    assert cli.main(["fuzz", REFERENCE, "--minutes", "1", "--repro-dir", "found"]) == 2
    out = capsys.readouterr().out
    assert "pytest exited with code 5" in out and "round 2" not in out, out


def test_fuzz_exits_2_for_a_bad_implementation_before_any_round(capsys):
    assert cli.main(["fuzz", "no_such_module:fn", "--minutes", "1"]) == 2
    out, err = capsys.readouterr()
    assert "module 'no_such_module' not found" in err and "round" not in out


@pytest.mark.parametrize("minutes", ["0", "-1", "soon", "nan"])
def test_fuzz_wants_a_positive_number_of_minutes(minutes, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.build_parser().parse_args(["fuzz", "--minutes", minutes])
    assert stop.value.code == 2
    assert "--minutes" in capsys.readouterr().err


def test_fuzz_reports_each_new_repro_file_once_and_earlier_ones_never(tmp_path, capsys):
    earlier = tmp_path / "p-cpu-aaaaaaaaaaaa.json"  # from before this session
    earlier.write_text("{}")
    seen, found = set(tmp_path.glob("*.json")), []
    new = tmp_path / "p-cpu-bbbbbbbbbbbb.json"
    new.write_text("{}")
    (tmp_path / ".p-cpu-cccccccccccc.json.0123abcd.tmp").write_text("{")  # a write in progress
    fuzz._report_new(tmp_path, seen, found)
    for path in (earlier, new):
        path.write_text("{ }")  # both found again: the same files, rewritten
    fuzz._report_new(tmp_path, seen, found)
    assert found == [new]
    assert capsys.readouterr().out == f"new failure: {new}\n"
    assert sorted(tmp_path.glob("*.json")) == [earlier, new]  # nothing deleted
