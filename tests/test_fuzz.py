"""Self-tests of ``simacc fuzz`` (issue #5): it explores until the time is up, keeps one repro
file per distinct failure, and stops cleanly on Ctrl-C with what it found."""

import os
import signal
import subprocess
import sys
import time

import pytest

from simacc import cli, fuzz, reprofile

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
    return subprocess.Popen([sys.executable, "-m", "simacc.cli", "fuzz", *args], cwd=cwd, env=env,
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
    assert "interrupted after" in out and "new failure: num_correct_drafts_is_length_minus_one-cpu-" in out
    assert "simacc/fuzz.py" not in out  # no traceback of our own
    (found,) = (tmp_path / "found").glob("*.json")
    assert reprofile.load(found).property.id == "num_correct_drafts_is_length_minus_one"
    assert f"replay one with: simacc repro found{os.sep}{found.name}" in out


def test_fuzz_stops_when_the_time_is_up(tmp_path):
    proc = _fuzz("--minutes", "0.03", "--device", "cpu", "-k", "index", "--repro-dir", "found", cwd=tmp_path)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert out.startswith("round 1: seed") and "time is up after" in out and "0 distinct new failure(s)" in out


def test_fuzz_exits_2_when_a_round_cannot_run(tmp_path):
    proc = _fuzz("--minutes", "1", "-k", "no_property_is_called_this", "--repro-dir", "found", cwd=tmp_path)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    assert "pytest exited with code 5" in out and "round 2" not in out


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


def test_fuzz_keeps_one_file_per_distinct_failure(tmp_path, capsys):
    def write(name, age):
        path = tmp_path / name
        path.write_text("{}")
        os.utime(path, (time.time() - age, time.time() - age))
        return path

    earlier = write("p-cpu-aaaaaaaaaa-00000001.json", 30)  # from before this session
    seen = {"p-cpu-aaaaaaaaaa": earlier}
    found = []
    write("p-cpu-aaaaaaaaaa-00000002.json", 20)  # the same failure again
    first = write("p-cpu-bbbbbbbbbb-00000003.json", 10)  # a new case
    write("p-cpu-bbbbbbbbbb-00000004.json", 5)  # ... found again
    other_device = write("p-cuda-bbbbbbbbbb-00000005.json", 1)
    fuzz._keep_distinct(tmp_path, seen, found)
    assert found == [first, other_device]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([earlier.name, first.name, other_device.name])
    assert "new failure: p-cpu-bbbbbbbbbb" in capsys.readouterr().out
