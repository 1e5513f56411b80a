"""The gate holds when the implementation misbehaves (docs/trust.md): each implementation of
the hostile zoo in ``tests/harness/hostile/`` is pinned to the verdict and exit code it must get.

Most run in this process through the runner or :mod:`simacc.harness.sessions.inprocess` (what is
defended there is the runner's business: the process state, the harness's own objects, plain
tensors, the output, ``KeyboardInterrupt``); the ones about processes (an exit, a hang, a
broken pytest) run ``simacc check`` on one property with ``-n 0`` and a short time limit
(the one under a worker of pytest-xdist too is ``slow``: ``--simacc-run-slow``).
``benchmarks/hostile.py`` runs the whole zoo through ``simacc check`` in every ``-n`` mode
with the default limit and reports the times.
"""

import dataclasses
import functools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from tests.commands.test_check import rows

from simacc import properties
from simacc import strategies as sx
from simacc.commands import cli, supervised
from simacc.commands.checking import conformance, verdict
from simacc.harness.call import impl, tamper
from simacc.harness.call.capture import LIMIT
from simacc.harness.call.runner import HarnessModified, Runner
from simacc.harness.config import profiles
from simacc.harness.config import settings as opts
from simacc.harness.config.status import Status
from simacc.harness.model import repro_files as reprofile
from simacc.harness.model.cases import TensorArg
from simacc.harness.processes import watch
from simacc.harness.sessions import inprocess, session
from simacc.strategies import EagleCase

HOSTILE = Path(__file__).resolve().parent / "hostile"
INDEX = "index_rows_are_root_plus_range_then_minus_one"
COUNT = "num_correct_drafts_is_length_minus_one"
FIXED = "fixed_mode_fills_predict_with_the_fixed_id"
PROCESS = "leaves_the_process_as_it_found_it"
QUICK = settings(profiles.for_session("ci"), database=None, max_examples=5, phases=[Phase.explicit, Phase.generate])


def spec(name):
    return f"{HOSTILE / name}.py:generate"


@pytest.fixture
def workdir(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading an IMPL appends folders
    return tmp_path


def checked(name, *ids, device="cpu"):
    """``{property: (status, message)}`` of the hostile ``name`` run in this process."""
    loaded = impl.load(spec(name), sx.CONTRACTS)
    results = inprocess.run(loaded, device, [p for p in properties.every_property() if p.id in ids], settings=QUICK)
    return {r.id.split("[")[0]: (r.status, r.message) for r in results}


def check_command(capsys, name, *props, timeout="1", workers="0"):
    """``simacc check`` of the hostile ``name`` on ``props``: ``(exit code, stdout, stderr)``."""
    argv = ["check", spec(name), "--device", "cpu", "--max-examples", "3", "--seed", "0", "-n", workers, "-v",
            "--timeout", timeout, *[f"--property={p}" for p in props]]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def small_case():
    """One request, width 1, fixed mode."""
    return EagleCase(accept_index=TensorArg(torch.zeros((1, 1), dtype=torch.int32)),
                     predict=TensorArg(torch.zeros(1, dtype=torch.int32)),
                     num_correct_drafts=TensorArg(torch.zeros(1, dtype=torch.int32)), candidates=None,
                     target_predict=None, bs=1, spec_steps=0, simulate_acc_len=1.0,
                     simulate_acc_method="match-expected", simulate_acc_token_mode="fixed", seed=0)


# -- the harness judges with its own tools --------------------------------------------------


@pytest.mark.parametrize("name, changed", [
    ("patches_torch_equal", "torch.equal"),
    ("rebinds_the_fixed_id", "simacc.contract.reference.FIXED_TOKEN_ID"),
    ("silences_the_assertions", "simacc.harness.judging.assertions.check"),
    ("calls_the_reference_instead", "simacc.harness.call.impl.Implementation.call"),
    ("silences_the_distribution_check", "simacc.properties.support.check_distribution"),
])
def test_an_implementation_that_modifies_the_harness_at_import_fails_every_property_and_is_put_back(workdir, name,
                                                                                                   changed):
    before = (torch.equal, impl.Implementation.call)
    got = checked(name, FIXED, COUNT)
    assert {s for s, _ in got.values()} == {Status.FAIL}, got
    assert all("modified the harness when" in m and changed in m for _, m in got.values()), got
    assert (torch.equal, impl.Implementation.call) == before and not tamper.modified()


def test_an_implementation_is_never_the_first_to_import_what_the_catalogue_judges_with(workdir):
    """In a process that has imported the catalogue's package and none of its oracles (as a fresh
    grad mode's process has), an implementation that imports them to patch them is caught: the
    catalogue named them (``judges.judged_with``), so the harness imported and recorded them first."""
    code = ("import sys; from simacc import properties; from simacc.harness.call import impl; "
            "assert 'simacc.properties.support' not in sys.modules; "
            f"print(impl.load({spec('silences_the_distribution_check')!r}, properties.CONTRACTS).modified_at_import)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "simacc.properties.support.check_distribution" in done.stdout, done.stdout + done.stderr


def test_patching_torch_equal_during_a_call_fails_that_property_and_is_put_back(workdir):
    code = textwrap.dedent("""
        import torch
        from simacc.contract import reference

        def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                     simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
            torch.equal = lambda *args: True
            return reference.generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates,
                target_predict, bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    """)
    (workdir / "later.py").write_text(code)
    equal = torch.equal
    with Runner(impl.load("later.py:generate", sx.CONTRACTS)) as runner, \
            pytest.raises(HarnessModified, match="torch.equal"):
        properties.find(INDEX).run(runner)
    assert torch.equal is equal


def test_a_tensor_subclass_that_agrees_with_everything_is_compared_as_a_plain_tensor(workdir):
    status, message = checked("returns_a_lying_subclass", INDEX)[INDEX]
    assert status == Status.FAIL and "index[0, 0]=1, but should be 0" in message, message


# -- the process is left as it was found --------------------------------------------------


def test_a_default_device_left_on_meta_fails_every_property_and_never_reaches_the_next_call(workdir):
    got = checked("leaves_meta_default_device", PROCESS, INDEX, COUNT)
    assert got[PROCESS][0] == Status.FAIL and "default device cpu -> meta" in got[PROCESS][1]
    for pid in (INDEX, COUNT):  # each call ran on the CPU (restored); the change itself fails them
        assert got[pid][0] == Status.FAIL and "changed the process (restored after the call): default device cpu -> " \
            "meta" in got[pid][1], got[pid]
    assert torch.get_default_device() == torch.device("cpu")


@pytest.mark.skipif(not hasattr(torch.backends.mkldnn, "matmul"), reason="torch has no per-backend precision here")
def test_a_matmul_precision_set_per_backend_is_named_and_put_back_never_breaking_the_harness(workdir):
    # torch's getter raises on such a state: read naively, every later call of the run would fail with it
    got = checked("sets_matmul_precision_per_backend", PROCESS, INDEX)
    for pid in (PROCESS, INDEX):
        assert got[pid][0] == Status.FAIL and "float32 matmul precision highest -> set per backend" in got[pid][1], got
    assert torch.get_float32_matmul_precision() == "highest"


@pytest.mark.skipif(not hasattr(torch.backends.mkldnn, "matmul"), reason="torch has no per-backend precision here")
def test_a_host_whose_precision_is_set_per_backend_sees_a_change_named_and_no_warning():
    # the plugin lives in the host's process: its own state is one no one name can put back
    from simacc.harness.call import process_state

    backends = (torch.backends.cuda.matmul, torch.backends.mkldnn.matmul)
    kept, name = [b.fp32_precision for b in backends], torch.get_float32_matmul_precision()
    try:
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        before = process_state.snapshot()
        torch.set_float32_matmul_precision("high")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            changes = process_state.restore(before)
        assert changes == ("float32 matmul precision set per backend (torch.backends.*.fp32_precision) -> high",)
    finally:
        torch.set_float32_matmul_precision(name)
        for b, value in zip(backends, kept):
            b.fp32_precision = value
    assert torch.get_float32_matmul_precision() == name


def _later_thread():
    return next(t for t in threading.enumerate() if t.name == "later")


def test_a_thread_that_changes_the_process_between_two_calls_fails_the_next_call_and_is_put_back(workdir):
    with Runner(impl.load(spec("sets_precision_on_a_thread_later"), sx.CONTRACTS), "cpu") as runner:
        runner.run(small_case())
        _later_thread().join()
        changed = runner.run(small_case()).changed
        assert torch.get_float32_matmul_precision() == "highest"
        with pytest.raises(AssertionError, match=r"highest -> high \(between two calls\)"):
            runner.check_process()
    assert changed == ("float32 matmul precision highest -> high (between two calls)",)


def test_a_sessions_end_waits_for_the_threads_started_during_it_and_fails_on_what_they_changed():
    from simacc.harness.call import process_state
    from simacc.harness.call.runner import ProcessChanged, check_the_end

    start = process_state.started()
    thread = threading.Thread(target=lambda: (time.sleep(0.3), torch.set_float32_matmul_precision("high")))
    thread.start()
    with pytest.raises(ProcessChanged, match="found at the session's end .*: float32 matmul precision highest -> high"):
        check_the_end(impl.reference(sx.EAGLE), start)
    assert not thread.is_alive() and torch.get_float32_matmul_precision() == "highest"
    check_the_end(impl.reference(sx.EAGLE), start)  # nothing changed since: nothing raised


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_thread_that_changes_the_process_after_the_last_call_fails_the_session(workdir, capsys, workers):
    # in the session's one process, or its one worker: the verdict does not depend on when the thread acts
    code, out, _ = check_command(capsys, "sets_precision_on_a_thread_later", COUNT, workers=workers)
    assert code == 1 and "float32 matmul precision highest -> high" in out, out


def test_a_change_found_at_the_sessions_end_is_added_to_the_last_propertys_own_failure(workdir):
    status, message = checked("miscounts_and_sets_precision_later", COUNT)[COUNT]
    assert status == Status.FAIL and message.index("num_correct_drafts[") < message.index("and then"), message
    assert "float32 matmul precision highest -> high" in message and torch.get_float32_matmul_precision() == "highest"


def test_a_change_of_directory_is_put_back_after_each_call(workdir):
    got = checked("changes_directory", PROCESS, FIXED)
    assert got[PROCESS][0] == Status.FAIL and f"working directory {workdir} -> " in got[PROCESS][1]
    assert got[FIXED][0] == Status.FAIL and Path.cwd() == workdir


def test_a_stretch_of_seeded_calls_gives_what_as_many_calls_give_and_is_protected_as_they_are(workdir):
    from simacc.properties import support

    case = support.small_case(2.5, "multinomial", 0)
    read = lambda index: int((index != -1).sum())  # noqa: E731
    with Runner(impl.reference(sx.EAGLE, "semantic"), "cpu") as runner:
        one_by_one = [read(runner.run(dataclasses.replace(case, seed=seed)).returned) for seed in range(40)]
        assert runner.sample(case, range(40), read) == one_by_one and not runner.changes
    with Runner(impl.load(spec("changes_directory"), sx.CONTRACTS), "cpu") as runner:
        runner.sample(small_case(), range(3), read)
        assert Path.cwd() == workdir and len(runner.changes) == 1  # put back after the stretch, and recorded
        with pytest.raises(AssertionError, match="changed the process"):
            runner.check_process()
    with Runner(impl.load(spec("raises_keyboard_interrupt"), sx.CONTRACTS), "cpu") as runner:
        with pytest.raises(AssertionError, match="raised KeyboardInterrupt on cpu"):
            runner.sample(small_case(), range(3), read)


def test_a_keyboard_interrupt_the_code_raises_is_its_failure(workdir):
    status, message = checked("raises_keyboard_interrupt", INDEX)[INDEX]
    assert status == Status.FAIL and "raised KeyboardInterrupt on cpu" in message


def test_a_real_ctrl_c_during_a_call_still_interrupts(workdir, ctrl_c):
    code = textwrap.dedent("""
        import os, signal

        def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                     simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
            os.kill(os.getpid(), signal.SIGINT)
    """)
    (workdir / "pressed.py").write_text(code)
    with Runner(impl.load("pressed.py:generate", sx.CONTRACTS)) as runner, pytest.raises(KeyboardInterrupt):
        properties.find(INDEX).run(runner)


# -- output and messages are bounded ------------------------------------------------------


def test_a_flood_of_output_is_kept_up_to_a_bound_and_counted(workdir, capfd):
    with Runner(impl.load(spec("floods_its_output"), sx.CONTRACTS)) as runner:
        for _ in range(5):
            runner.run(small_case())
        output = runner.output
    assert len(output) < LIMIT + 200 and output.startswith("x" * 1000)
    assert f"{10 * (1 << 20) + 5 - LIMIT} more were left out" in output
    assert capfd.readouterr() == ("", "")  # nothing reached the process's own output


def test_a_huge_exception_message_is_cut_and_not_kept(workdir):
    status, message = checked("raises_a_huge_message", INDEX)[INDEX]
    assert status == Status.FAIL and len(message) < 5000 and "more characters]" in message



def test_a_later_grad_modes_process_that_dies_makes_each_of_its_tests_a_crash_named_as_pytest_names_it(workdir):
    fresh_results = "result_is_fresh_across_calls"  # run in every grad mode, each later one in a fresh process
    loaded = impl.load(spec("ends_its_process_under_no_grad"), sx.CONTRACTS)
    results = inprocess.run(loaded, "cpu", [properties.find(fresh_results)], settings=QUICK)
    assert [(r.id, r.status) for r in results] == [(f"{fresh_results}[cpu-inference]", Status.PASS),
                                                   (f"{fresh_results}[cpu-no_grad]", Status.CRASHED)], results
    assert results[1].message.startswith("the process running grad mode no_grad died: "), results[1].message


# -- the processes of a session, and their supervisor ----------------------------------------


@pytest.mark.parametrize("workers", ["0", pytest.param("1", marks=pytest.mark.slow)])
def test_an_implementation_that_ends_its_process_at_import_exits_2_with_one_line(workdir, capsys, workers):
    # with xdist, the first worker that dies importing it stops the session: no worker after worker
    code, out, err = check_command(capsys, "exits_at_import", INDEX, workers=workers)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "the process importing it died before it said what it loaded: " in err
    assert ("it ended with exit code 0" if workers == "0" else "Not properly terminated") in err


def test_an_implementation_that_hangs_in_c_is_not_run_after_the_hang_budget(workdir, capsys):
    start = time.monotonic()
    code, out, _ = check_command(capsys, "sleeps_in_c", INDEX, COUNT, FIXED, timeout="0.5")
    assert code == 1 and sorted(rows(out).values()) == ["hung", "hung", "not run"], out
    assert "not run: the implementation hangs (2 calls outlasted the 0.5 s time limit)" in out
    assert time.monotonic() - start < 60


def test_a_call_that_swallows_the_interrupt_is_ended_by_the_watchdog_and_named(workdir, capsys):
    code, out, _ = check_command(capsys, "swallows_the_interrupt", INDEX, COUNT, timeout="0.5")
    assert code == 1 and rows(out) == {INDEX: "hung", COUNT: "not run"}, out
    assert "the process running it died: the watchdog ended it" in out and "swallows_the_interrupt.py:" in out


def test_an_internal_error_in_a_worker_is_that_workers_death_not_the_runs(workdir):
    chosen = opts.resolve({"impl": spec("breaks_pytest"), "device": "cpu", "max_examples": 2, "seed": 0,
                           "properties": (INDEX, COUNT)})
    heard = session.run(chosen, 1, extra=["--max-worker-restart=0"])  # one death is enough to see
    result = conformance._verdict(chosen, heard, {"contract": "eagle"})
    statuses = sorted(r.status for r in result.results)
    assert statuses == [Status.ERROR, Status.NOT_RUN] and result.exit_code == 1, statuses
    died = next(r for r in result.results if r.status == Status.ERROR)
    assert "pytest failed in it with an internal error" in died.message and "INTERNALERROR" not in heard.output


def test_the_supervisor_kills_a_call_that_outlives_its_deadline_whatever_its_signals(tmp_path):
    prefix = str(tmp_path / "session")
    code = (f"import signal, time; from simacc.harness.processes import watch; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            f"watch.configure({prefix!r}); watch.beat(0.1); print('beating', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "beating\n"
    deadline = session.Deadline(prefix, margin=0.2)
    start = time.monotonic()
    while child.poll() is None and time.monotonic() - start < 30:
        deadline.check()
        time.sleep(0.1)
    assert child.wait() < 0 and list(deadline.killed) == [child.pid]
    assert watch.last_words(prefix, child.pid)[0] == "killed"


def test_a_dead_writers_heartbeat_is_never_taken_for_a_live_one(tmp_path):
    prefix = str(tmp_path / "session")
    code = f"from simacc.harness.processes import watch; watch.configure({prefix!r}); watch.beat(0.1)"
    subprocess.run([sys.executable, "-c", code], check=True)
    (path,) = watch.beats(prefix)
    assert watch.read_beat(path) is None and not os.path.exists(path)  # its lock went with it


def test_a_supervised_command_exits_with_what_its_child_reported_or_1_when_it_died(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert supervised.supervised(["repro", "--keep", "1", "--repro-dir", str(tmp_path)], "repro") == 0
    monkeypatch.setattr(supervised, "SUPERVISED_BY", "--no-such-option")  # the child dies of a usage error, unreported
    assert supervised.supervised(["repro", "--keep", "1"], "repro") == 1
    err = capsys.readouterr().err
    assert err.count("\n") > 0 and err.splitlines()[-1] == (
        "simacc repro: the process doing the work died, it ended with exit code 2 before its work was done (the code "
        "under test ended it: os._exit, or sys.exit in a thread?); so it is a failure (exit 1)")


# -- repro files are data, never code ------------------------------------------------------


def _document(impl_spec, case_fields=None):
    """A valid repro document of :func:`small_case` naming ``impl_spec``, ``case_fields`` changed."""
    record = reprofile.Repro(INDEX, "simacc.properties.test_index", "eagle", impl_spec, "cpu", "m", small_case())
    doc = json.loads(reprofile.dumps(record))
    doc["case"]["fields"].update(case_fields or {})
    return doc


def test_replaying_imports_nothing_the_file_names_unless_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    marker = tmp_path / "ran"
    payload = f"{tmp_path / 'payload.py'}:generate"
    (tmp_path / "payload.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef generate(**kwargs): pass\n")
    path = tmp_path / "case.json"
    path.write_text(json.dumps(_document(payload)))
    assert cli.main(["repro", str(path)]) == 2
    assert f"pass --impl {payload} if you trust it" in capsys.readouterr().err
    assert cli.main(["repro", "--prune", "--repro-dir", str(tmp_path)]) == 2
    assert f"kept       {path}: not replayed: the file was recorded with {payload}" in capsys.readouterr().out
    assert not marker.exists() and path.exists()
    assert cli.main(["repro", str(path), "--trust-recorded-impl"]) == 1  # asked: it runs (and returns nothing)
    assert marker.exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_only_regular_files_are_read_and_a_prune_goes_on(tmp_path, capsys, kind):
    hostile = tmp_path / "x.json"
    if kind == "fifo":
        os.mkfifo(hostile)
    elif kind == "device":
        hostile.symlink_to("/dev/zero")
    else:
        hostile.mkdir()
    with pytest.raises(reprofile.ReproError, match="not a regular file"):
        reprofile.load(hostile, sx.CONTRACTS)
    reference = "simacc:generate_simulated_accept_index"
    assert cli.main(["repro", "--prune", "--repro-dir", str(tmp_path), "--impl", reference]) == 2
    assert f"unreadable {hostile}: not a regular file" in capsys.readouterr().out


def test_an_integer_of_thousands_of_digits_is_refused_in_one_line():
    with pytest.raises(reprofile.ReproError, match="an integer of 5000 digits"):
        reprofile.parse('{"schema": "simacc-repro/1", "seed": ' + "9" * 5000 + "}", sx.CONTRACTS)


@pytest.mark.parametrize("fields, problem", [
    ({"bs": 2**62}, "accept_index has shape"),
    ({"spec_steps": 2**40}, "accept_index has shape"),
    ({"bs": 0}, "accept_index has shape"),
    ({"accept_index": {"dtype": "float32", "shape": [1, 1], "layout": "contiguous", "values": [0.0]}},
     "accept_index is float32"),
    ({"accept_index": {"dtype": "int32", "shape": [1, 1], "layout": "contiguous", "values": [10**6]}},
     "a root's range"),
    ({"simulate_acc_token_mode": "real-draft-token"}, "candidates is missing"),
])
def test_a_case_no_reference_could_run_is_unusable(fields, problem):
    assert reprofile.parse(json.dumps(_document("simacc:generate_simulated_accept_index")), sx.CONTRACTS).case.bs == 1
    doc = _document("simacc:generate_simulated_accept_index", fields)
    with pytest.raises(reprofile.ReproError, match=f"unusable case: {problem}"):
        reprofile.parse(json.dumps(doc), sx.CONTRACTS)


@functools.cache
def _replayable_strategies():
    """``(property id, contract, strategy)`` of every replayable property, for each contract's reference."""
    from simacc.contract import jaxbridge

    found = []
    for prop in properties.every_property():
        for contract in prop.contracts:
            if not prop.replayable or prop.machine or (contract == sx.FUNCTIONAL and jaxbridge.missing()):
                continue
            found.append((prop.id, contract, prop.strategies(impl.reference(contract))["case"]))
    return found


@settings(max_examples=150, database=None, derandomize=True, deadline=None)
@given(data=st.data())
def test_every_case_a_property_draws_is_usable(data):
    # the checks of what a reference can run must never refuse a case the suite itself writes
    pid, contract, cases = data.draw(st.sampled_from(_replayable_strategies()), label="property")
    case = data.draw(cases, label="case")
    again = reprofile.decode_case(json.loads(json.dumps(reprofile.encode_case(case))), sx.CONTRACTS)
    assert again.summary() == case.summary()


# -- the verdict of a session that did not finish ------------------------------------------


def test_a_row_not_run_fails_the_check_and_is_never_a_pass_in_junit():
    got = verdict.build({}, ["p/t.py::test_a[cpu]"], [], stopped="the implementation hangs")
    assert got.exit_code == 1 and [(r.status, r.message) for r in got.results] == [
        (Status.NOT_RUN, "not run: the implementation hangs")]
    assert "<skipped message=" in verdict.junit(got)


def test_a_session_that_never_said_it_finished_is_incomplete_even_if_every_row_passed():
    node = "simacc/properties/test_index.py::test_index_rows_are_root_plus_range_then_minus_one[cpu]"
    events = [{"event": "collected", "nodeids": [node]}, {"event": "started", "nodeid": node},
              {"event": "result", "nodeid": node, "status": "pass", "device": "cpu"}]
    heard = session.Heard(events, 0, "", "python -m pytest", (Status.CRASHED, "it ended with exit code 0"))
    chosen = opts.resolve({"impl": "m:f"})
    got = conformance._verdict(chosen, heard, {"contract": "eagle"})
    assert (got.exit_code, got.outcome) == (1, "incomplete")
    assert verdict.render(got).endswith("INCOMPLETE: the pytest process died: it ended with exit code 0; 1 pass (exit 1)")
