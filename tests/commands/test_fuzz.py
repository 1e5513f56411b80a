"""Self-tests of ``simacc fuzz``: passes over every property with growing examples, one
worker process each, a summary that says what ran and each failure with its replay command,
exit codes as ``simacc check``'s. One test fuzzes for real (a process of its own, stopped by
a real Ctrl-C); the others replace each pass with a scripted one (:class:`Scripted`), so
what the session does with a pass's events is shown in milliseconds. The example database
shared between processes: ``tests/harness/test_database.py``."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

from tests import offered
import pytest

from simacc import strategies as sx
from simacc.commands import cli
from simacc.commands.checking import fuzz
from simacc.harness.processes import forkserver, interrupts
from simacc.harness.sessions import session

MUTANT = "simacc.zoo.eagle:fixed_id_only_at_accepted_slots"  # fixed mode writes only the accepted slots
MODULE = "simacc/properties/test_fixed.py"


def test_a_session_reaches_the_fixed_mode_properties_in_its_first_pass_and_stops_cleanly_on_ctrl_c(tmp_path, ctrl_c):
    """The bug of a short session that never reached the fixed-mode properties: here the
    first pass (100 examples per property) finds it, and a Ctrl-C then ends the session with
    its summary, not a traceback. Seed 15 shuffles the pass so that ten of the modules that
    apply to the mutant, two that fail among them, come before the fixed-mode one, and the
    serving loop's, whose failure takes seconds to shrink, after it (a random order made this
    test take from 5 to 20 s)."""
    env = offered.without_settings()
    env["PYTHONFAULTHANDLER"] = "1"  # a SIGABRT then prints where each thread of the session was
    proc = subprocess.Popen([sys.executable, "-m", "simacc", "fuzz", MUTANT, "--device", "cpu", "-n", "1",
                             "--minutes", "1", "--seed", "15", "--repro-dir", "found"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # the failure's line, as a user sees it (its repro file is written a moment before its result is sent)
    start, seen = time.monotonic(), []
    for line in proc.stdout:
        seen.append(line)
        if "new failure: fixed_mode_fills_predict_with_the_fixed_id" in line:
            break
    else:
        proc.wait()
        pytest.fail(f"the session ended (exit {proc.returncode}) without finding the failure:\n" + "".join(seen))
    found_after = time.monotonic() - start
    proc.send_signal(signal.SIGINT)
    try:
        rest, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            rest, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
        pytest.fail("the session had not ended 60 s after its Ctrl-C; where it was:\n" + "".join(seen) + rest)
    out = "".join(seen) + rest
    assert proc.returncode == 130, out
    assert found_after < 60, out
    assert "interrupted after" in out and "INTERRUPTED: " in out and "(exit 130)" in out
    assert "  database:  .hypothesis/examples (profile thorough's)" in out
    (repro,) = (tmp_path / "found").glob("fixed_mode_fills_predict_with_the_fixed_id-*.json")
    assert f"  fixed_mode_fills_predict_with_the_fixed_id[cpu]: simacc repro found{os.sep}{repro.name} --impl " in out
    assert "KeyboardInterrupt" not in out and "Traceback" not in out and "!!!" not in out, out


def test_a_ctrl_c_while_a_pass_starts_is_taken_once_the_pass_can_be_stopped(ctrl_c):
    """Interrupted half-way through its start, a pass would run on with nobody to stop it:
    the Ctrl-C is held back until its handle is kept."""
    kept = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            kept.append(subprocess.Popen([sys.executable, "-c", "pass"]))
    (child,) = kept
    assert child.wait(60) == 0


# a Ctrl-C at a chance moment may land in a gc callback (Hypothesis keeps one), where Python can
# only report it as unraisable: that one is lost, and the loop waits for the next alarm
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_while_a_session_looks_at_its_child_never_makes_the_child_unwaitable(ctrl_c):
    """A ``KeyboardInterrupt`` raised inside ``Popen.poll`` can leave its lock held, and every
    later wait for the child then blocks forever: a session that never ends after its Ctrl-C
    (CI saw one). Hundreds of Ctrl-Cs at chance moments (a timer's, as a terminal's come:
    whenever the kernel delivers them) while the session looks at its child again and again
    (:func:`session.ended`, what its supervisors poll with): the child can still be waited
    for."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    moments = random.Random(0)
    before = signal.signal(signal.SIGALRM, lambda signum, frame: signal.raise_signal(signal.SIGINT))
    try:
        for _ in range(300):
            try:
                signal.setitimer(signal.ITIMER_REAL, moments.uniform(1e-5, 3e-4))
                give_up = time.monotonic() + 1.0  # an alarm another part of the process cancelled: the next one
                while session.ended(child) is None and time.monotonic() < give_up:
                    pass
            except KeyboardInterrupt:
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    child.kill()
    waiter = threading.Thread(target=child.wait, daemon=True)
    waiter.start()
    waiter.join(30)
    assert not waiter.is_alive(), "the child could no longer be waited for: Popen's lock was left held"


# -- scripted passes -----------------------------------------------------------------------------


def implementation():
    return {"event": "implementation", "spec": MUTANT, "contract": "eagle", "contract_from": "inferred",
            "level": "exact", "source": "eagle.py", "version": "", "fixed_token_id": 100}


def result(name, status="pass", examples=100, repro=None, message="", unfinished=False):
    return {"event": "result", "nodeid": f"{MODULE}::test_{name}[cpu]", "property": name, "device": "cpu",
            "status": status, "message": message, "examples": examples, "seconds": 0.1, "repro": repro,
            "unfinished": unfinished}


FINISHED = {"event": "finished", "exitstatus": 0}
FOREVER = "forever"  # a pass that runs until it is interrupted


class Scripted:
    """Stands in for :class:`simacc.harness.sessions.session.Running`: pass ``k`` says the events of
    ``scripts[k]`` (the last one again after that) and ends, or runs until interrupted when
    its events end with :data:`FOREVER`; an interrupted pass says ``on_interrupt``."""

    def __init__(self, scripts, on_interrupt=(FINISHED,), overdue=None):
        self.scripts, self.on_interrupt, self.overdue = scripts, list(on_interrupt), overdue
        self.started, self.interrupted = [], 0

    def __call__(self, chosen, workers, targets=()):
        script = self.scripts[min(len(self.started), len(self.scripts) - 1)]
        self.started.append(chosen)
        return _Pass(self, [e for e in script if e != FOREVER], FOREVER in script)


class _Pass:
    def __init__(self, owner, events, forever):
        self.owner, self.pending, self.events, self.forever = owner, list(events), [], forever

    def hear(self):
        new, self.pending = self.pending, []
        self.events += new
        return new

    @property
    def done(self):
        return not self.forever and not self.pending

    def interrupt(self):
        if self.forever:
            self.owner.interrupted += 1
            self.pending += self.owner.on_interrupt
            self.forever = False

    def stop(self, grace):
        self.interrupt()

    def overdue(self):
        return self.owner.overdue if self.forever else None

    def close(self):
        self.hear()
        return session.Heard(self.events, 0, "", "python -m pytest ...")


@pytest.fixture
def scripted(tmp_path, monkeypatch):
    """``scripted(*scripts)``: every pass of this test's sessions is scripted; run from
    ``tmp_path`` without this session's ``SIMACC_*``."""
    for name in [k for k in os.environ if k.startswith("SIMACC_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fuzz, "POLL_S", 0.01)

    def install(*scripts, **kwargs):
        passes = Scripted(scripts, **kwargs)
        monkeypatch.setattr(session, "Running", passes)
        return passes

    return install


def test_each_pass_gives_every_property_more_examples_and_hypothesis_its_own_seeds(scripted, capsys):
    passes = scripted([implementation(), result("a"), FINISHED], [result("a"), FOREVER])
    assert cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "1"]) == 0
    assert [chosen.max_examples for chosen in passes.started][:2] == [100, 400] and passes.interrupted == 1
    assert all(chosen.profile == "thorough" and chosen.seed is None for chosen in passes.started)
    out = capsys.readouterr().out
    assert "time is up after" in out and "NO FAILURES FOUND: no failures (exit 0)" in out


def test_a_seed_gives_each_worker_a_stream_of_seeds_and_the_same_one_again(scripted):
    runs = []
    for _ in range(2):
        passes = scripted([implementation(), result("a"), FINISHED])
        cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "2", "--seed", "7", "-q"])
        runs.append([chosen.seed for chosen in passes.started[:4]])
    assert runs[0] == runs[1] and len(set(runs[0])) == 4


def test_the_schedule_grows_to_its_last_length_and_max_examples_fixes_it():
    assert [fuzz.examples_in_pass(k) for k in range(1, 7)] == [100, 400, 1600, 6400, 6400, 6400]
    assert [fuzz.examples_in_pass(k, 30) for k in (1, 5)] == [30, 30]


def test_the_summary_counts_examples_per_property_and_lists_each_failure_once_with_its_replay_command(
        scripted, tmp_path, capsys):
    found = tmp_path / ".simacc" / "failures"
    found.mkdir(parents=True)
    known = found / "b-cpu-000000000000.json"
    known.write_text("{}")
    new = found / "c-cpu-111111111111.json"
    first = [implementation(), result("a", examples=100), result("b", "FAIL", 3, str(known), "b is wrong"),
             result("c", "FAIL", 5, str(new), "c is wrong"), result("d", examples=None), FINISHED]
    later = [result("a", examples=400), result("c", "FAIL", 1, str(new), "c is wrong"), FOREVER]
    scripted(first, later, on_interrupt=[result("a", "FAIL", None, unfinished=True), FINISHED])
    assert cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "1", "--json", "fuzz.json"]) == 1
    out, err = capsys.readouterr()
    assert f"new failure: c[cpu]: simacc repro .simacc/failures/c-cpu-111111111111.json --impl {MUTANT}" in err
    assert "known failure: b[cpu]" in err
    lines = out.splitlines()
    assert any(line.split() == ["a", "500", "2", "pass"] for line in lines), out  # the cut-short run not counted
    assert any(line.split() == ["d", "-", "1", "pass"] for line in lines), out  # not a Hypothesis test
    assert "new failures (1), each with its replay command:" in out
    assert f"  c[cpu]: simacc repro .simacc{os.sep}failures{os.sep}c-cpu-111111111111.json --impl {MUTANT}" in out
    assert "failures found again (their repro files were there) (1)" in out
    assert out.count("simacc repro") == 2
    assert lines[-1] == "FAILURES FOUND: 2 failure(s), 1 new (exit 1)"
    report = json.loads((tmp_path / "fuzz.json").read_text())
    assert report["schema"] == "simacc.fuzz/1" and report["exit_code"] == 1
    assert report["properties"]["a"] == {"examples": 500, "runs": 2, "status": "pass"}
    assert [(f["test"], f["new"]) for f in report["failures"]] == [("b[cpu]", False), ("c[cpu]", True)]
    assert report["passes"] >= 1 and report["passes_cut_short"] == 1


def test_exitfirst_stops_the_session_at_the_first_failure(scripted, capsys):
    scripted([implementation(), result("a", "FAIL", 2, None, "a is wrong"), FOREVER])
    assert cli.main(["fuzz", MUTANT, "--minutes", "5", "-x", "-n", "2"]) == 1
    out = capsys.readouterr().out
    assert "stopped at the first failure after" in out
    # no repro file: a check of that test, which replays the example database first
    assert f"  a[cpu]: simacc check {MUTANT} --property 'a[cpu]' -n 0\n" in out


def test_nothing_to_fuzz_is_exit_5_with_the_reason(scripted, capsys):
    scripted([{"event": "collected", "nodeids": []}, FINISHED])
    assert cli.main(["fuzz", MUTANT, "--minutes", "1", "--property", "nope", "-n", "1"]) == 5
    assert capsys.readouterr().out.strip() == "NOTHING TO FUZZ: --property nope matches no property (exit 5)"


def test_an_implementation_that_does_not_load_is_a_one_line_usage_error(scripted, capsys):
    scripted([{"event": "impl_error", "message": "IMPL 'nope:f': module 'nope' not found"}, FINISHED])
    assert cli.main(["fuzz", "nope:f", "--minutes", "1"]) == 2
    out, err = capsys.readouterr()
    assert err == "simacc fuzz: error: IMPL 'nope:f': module 'nope' not found\n" and out == ""


def test_a_pass_that_ends_before_saying_what_it_loaded_is_a_usage_error(scripted, capsys):
    scripted([])
    assert cli.main(["fuzz", MUTANT, "--minutes", "1", "-n", "1"]) == 2
    assert "the process that imported it ended" in capsys.readouterr().err


@pytest.mark.parametrize("minutes", ["0", "-1", "soon", "nan"])
def test_fuzz_wants_a_positive_number_of_minutes(minutes, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.build_parser().parse_args(["fuzz", "--minutes", minutes])
    assert stop.value.code == 2
    assert "--minutes" in capsys.readouterr().err


def test_fuzz_takes_checks_options_and_defaults_to_a_worker_per_core(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["fuzz", "--help"])
    text = capsys.readouterr().out
    for flag in ("--property", "--max-examples", "--seed", "--timeout", "--xfails", "--fixed-token-id", "--level",
                 "--contract", "--database", "--database-readonly", "--json", "-x, --exitfirst"):
        assert flag in text, flag
    assert "--profile" not in text  # a fuzz session is the thorough profile
    assert f"this machine's cores, {fuzz.cores()}" in " ".join(text.split())


def test_a_grad_mode_whose_pass_runs_nothing_is_left_out_and_the_session_goes_on(scripted, capsys):
    """``--property`` of a property that runs in the first grad mode only: a pass of the
    second mode collects nothing, and later passes run the first mode alone."""
    ran = [implementation(), result("a"), FINISHED]
    passes = scripted(ran, [{"event": "collected", "nodeids": []}, FINISHED], ran)
    assert cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "1", "--property", "a"]) == 0
    modes = [chosen.run_context for chosen in passes.started]
    assert modes[:2] == ["inference", "no_grad"] and set(modes[2:]) == {"inference"}, modes
    assert "NO FAILURES FOUND: no failures (exit 0)" in capsys.readouterr().out


@pytest.mark.parametrize("status", ["hung", "crashed", "internal error", "not run", "unexpected pass"])
def test_every_status_a_pass_reports_is_counted_and_a_failure_of_any_kind_is_exit_1(scripted, capsys, status):
    scripted([implementation(), result("a", status, None, message=f"a {status}"), result("b"), FINISHED])
    code = cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "1"])
    out = capsys.readouterr().out
    assert "Traceback" not in out
    failed = status not in ("not run",)
    assert code == (1 if failed else 0), out
    assert any(line.split()[:1] == ["a"] and line.endswith(status) for line in out.splitlines()), out


def test_a_call_past_its_time_limit_when_the_session_stops_is_a_hang(scripted, capsys):
    scripted([implementation(), {"event": "started", "nodeid": f"{MODULE}::test_a[cpu]"}, FOREVER],
             overdue=(f"{MODULE}::test_a[cpu]", 41.0, 30.0))
    assert cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "1"]) == 1
    out = capsys.readouterr().out
    assert f"  a[cpu]: simacc check {MUTANT} --property 'a[cpu]' -n 0" in out
    assert "FAILURES FOUND: 1 failure(s), 1 new (exit 1)" in out
    assert any(line.split()[:1] == ["a"] and line.endswith("hung") for line in out.splitlines()), out


def test_a_session_in_which_no_property_finished_a_run_is_never_exit_0(scripted, capsys):
    scripted([implementation(), {"event": "started", "nodeid": f"{MODULE}::test_a[cpu]"}, FOREVER])
    assert cli.main(["fuzz", MUTANT, "--minutes", "0.01", "-n", "1", "--json", "fuzz.json"]) == 5
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("NOTHING FUZZED: no property finished a run in 0:00"), out
    assert out.splitlines()[-1].endswith("(exit 5)")
    report = json.loads(open("fuzz.json").read())
    assert report["exit_code"] == 5 and report["reason"].startswith("no property finished a run")


# -- misbehaving implementations, fuzzed for real ------------------------------------------------

HOSTILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness", "hostile")


@pytest.mark.parametrize(("name", "status", "said"), [
    ("exits_in_its_third_call", "crashed", "the worker process died while running it"),
    ("sleeps_in_c", "hung", "did not return within 1 s"),
])
def test_an_implementation_that_crashes_or_hangs_is_a_failure_with_a_summary_never_a_traceback(
        tmp_path, name, status, said):
    """Each pass runs its properties in an xdist worker: a worker the call ended is reported as
    a crash, a call past its time limit as a hang, and -x stops the session there."""
    env = offered.without_settings()
    done = subprocess.run([sys.executable, "-m", "simacc", "fuzz", f"{HOSTILE}/{name}.py:generate", "--device", "cpu",
                           "-n", "1", "-x", "--minutes", "2", "--timeout", "1", "--json", "fuzz.json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in out, out
    # one failure, or two where the worker that took the crashed one's place ran the next
    # property into the same end before the stop reached it (a loaded machine): the session
    # counts what its pass finished, and writes a repro file of each
    assert re.match(r"FAILURES FOUND: ([12]) failure\(s\), \1 new", done.stdout.splitlines()[-1]), out
    report = json.loads((tmp_path / "fuzz.json").read_text())
    statuses = [s["status"] for s in report["properties"].values()]
    assert 1 <= statuses.count(status) == len(report["failures"]), report["properties"]
    assert all(said in failure["message"] for failure in report["failures"]), report["failures"]


# -- Hypothesis's own tools: -m hypothesis, HypoFuzz ------------------------------------------------

FOUND_AT_ONCE = "simacc.zoo.eagle:counts_only_the_first_row"  # fails nearly every batch of two or more
ITS_KILLER = "num_correct_drafts_is_length_minus_one"


def _run(argv, cwd, timeout=180):
    return subprocess.run(argv, cwd=cwd, env=offered.without_settings(), capture_output=True, text=True,
                          timeout=timeout)


def test_every_property_that_draws_is_a_hypothesis_test_when_collected(tmp_path):
    """``-m hypothesis`` (how HypoFuzz selects the tests it fuzzes) selects each property that
    draws, stateful ones included, and only those: each item holds its Hypothesis test."""
    from simacc import properties
    from simacc.harness.call import impl as impls

    # forked from the suite's session server (tests/conftest.py), as a check's sessions are: not an import of torch
    collected = _run(forkserver.command(["-m", "pytest", "--collect-only", "-q", "-m", "hypothesis", "--pyargs",
                                         "simacc.properties", "--simacc-impl=simacc:generate_simulated_accept_index",
                                         "--simacc-device=cpu", "-p", "no:cacheprovider"]), tmp_path)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    names = {line.split("::")[1].split("[")[0].removeprefix("test_") for line in collected.stdout.splitlines()
             if "::" in line}
    shipped = impls.load("simacc:generate_simulated_accept_index", sx.CONTRACTS)
    drawing = {p.id for p in properties.every_property() if p.is_hypothesis_test and p.not_applicable(shipped, "cpu")
               is None and (p.applies_when is None or not p.parametrizations()[0][1])}
    assert "serving_loop_conforms_at_every_step" in names and ITS_KILLER in names
    assert drawing <= names and not names & {p.id for p in properties.every_property() if not p.is_hypothesis_test}


def _hypofuzz(pytest_args, cwd):
    hypothesis = os.path.join(os.path.dirname(sys.executable), "hypothesis")
    return subprocess.Popen([hypothesis, "fuzz", "-n", "1", "--no-dashboard", "--", *pytest_args], cwd=cwd,
                            env=offered.without_settings(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def test_hypofuzz_comes_back_to_a_property_it_left(tmp_path):
    """HypoFuzz tears an item down when it moves to another test and sets it up again when
    it comes back, where pytest fills only the fixtures the item's funcargs lack: the
    ``simacc`` fixture leaves none behind, so the worker gets a new runner (it died at its
    first return, with HypoFuzz 25.11.1, when the closed one stayed there)."""
    pytest.importorskip("hypofuzz", reason="needs HypoFuzz: pip install -e '.[fuzz]'")
    fuzzing = _hypofuzz(["--pyargs", "simacc.properties.test_index",
                         "--simacc-impl=simacc:generate_simulated_accept_index", "--simacc-device=cpu"], tmp_path)
    try:
        fuzzing.wait(timeout=45)  # a hundred examples of one of its three properties, then another, over and over
    except subprocess.TimeoutExpired:
        pass
    finally:
        os.killpg(fuzzing.pid, signal.SIGKILL)
        said = fuzzing.communicate()[0]
    assert "using 1 process to fuzz 3 tests" in said and "Traceback" not in said, said


def test_a_failure_hypofuzz_finds_replays_in_check_and_repro_through_the_example_database(tmp_path):
    """HypoFuzz (``hypothesis fuzz``) fuzzes a property's item against a mutant and stores its
    find under the key simacc's own runs use (the implementation's name, the kind of device):
    ``simacc repro --database`` replays it, and ``simacc check`` fails on it at one example,
    the simplest one, which passes (a check from an empty database does)."""
    pytest.importorskip("hypofuzz", reason="needs HypoFuzz: pip install -e '.[fuzz]'")
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.internal.reflection import function_digest

    from simacc import properties
    from simacc.harness.call import impl as impls
    from simacc.harness.config import profiles

    test = properties.find(ITS_KILLER).hypothesis_test(impls.load(FOUND_AT_ONCE, sx.CONTRACTS), "cpu", {},
                                                       profiles.for_session("default"))
    key = function_digest(test.hypothesis.inner_test)
    database = DirectoryBasedExampleDatabase(str(tmp_path / ".hypothesis" / "examples"))
    fuzzing = _hypofuzz(["--pyargs", "simacc.properties.test_index", f"--simacc-impl={FOUND_AT_ONCE}",
                         "--simacc-device=cpu", f"--simacc-property={ITS_KILLER}"], tmp_path)
    try:
        give_up = time.monotonic() + 150
        while not any(database.fetch(key)) and not any(database.fetch(key + b".secondary")):
            assert fuzzing.poll() is None, fuzzing.communicate()[0]
            assert time.monotonic() < give_up, "HypoFuzz found nothing in 150 s"
            time.sleep(0.5)
    finally:
        os.killpg(fuzzing.pid, signal.SIGKILL)
        said = fuzzing.communicate()[0]
    assert "using 1 process to fuzz 1 test" in said, said
    repro = _run([sys.executable, "-m", "simacc", "repro", "--database", ".hypothesis/examples", "--impl",
                  FOUND_AT_ONCE, "--device", "cpu"], tmp_path)
    assert repro.returncode == 1 and f"FAIL {ITS_KILLER}\n" in repro.stdout, repro.stdout + repro.stderr
    check = [sys.executable, "-m", "simacc", "check", FOUND_AT_ONCE, "--property", ITS_KILLER, "--device", "cpu",
             "-n", "0", "--max-examples", "1", "-q"]
    replayed = _run(check, tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    (tmp_path / "empty").mkdir()
    assert _run(check, tmp_path / "empty").returncode == 0
