"""The suite can fail: every property rejects at least one mutant of the zoo, and the correct
alternative implementations are accepted.

The zoo runs in this process through :mod:`simacc.harness.sessions.inprocess`: one pytest
process for the whole zoo instead of one per entry. Each mutant goes through only the
properties that should kill it, in the derandomized ``ci`` settings without shrinking (a
kill needs no minimal case), so every kill is the same in every run of the suite (Hypothesis
also draws from constants of the modules loaded in its process: a run of only some of the
test files may draw other examples); the correct implementations go
through the whole catalogue with fewer examples, on ``cpu:0`` (a device spelling tensors do
not report).
"""

import os
import signal
import subprocess
import sys
import time

from tests import offered
import pytest
from hypothesis import Phase, settings

from simacc import properties, zoo
from simacc import strategies as sx
from simacc.commands.checking import zoo_runs
from simacc.harness.call import impl
from simacc.harness.config import profiles
from simacc.harness.config.status import FAILED, Status
from simacc.harness.sessions import inprocess

# Properties no mutant can fail, and why.
NOT_MUTANT_KILLABLE = {
    "regression": "replays the promoted corpus through the other properties; its content changes",
    "fixed_token_id_decodes_to_visible_text": "judges the fixed id against the model's tokenizer, never the code "
                                              "(tests/harness/test_tokenizer.py fails it with 100 on a byte-level BPE)",
}
CORRECT_EXAMPLES = 10  # per property: ~500 calls an entry over the whole catalogue (simacc mutants runs more)
KILLING = settings(profiles.for_session("ci"), database=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
ACCEPTING = settings(KILLING, max_examples=CORRECT_EXAMPLES)


def catalogue_ids():
    return {prop.id for prop in properties.every_property()}


def chosen(ids):
    return [prop for prop in properties.every_property() if prop.id in ids]


def test_every_property_is_expected_to_kill_some_mutant():
    expected = {pid for e in zoo.MUTANTS.values() for pid in e.killers}
    missing = catalogue_ids() - expected - set(NOT_MUTANT_KILLABLE)
    assert not missing, f"properties no mutant is registered for: {sorted(missing)}"


def test_expected_killers_name_real_properties():
    unknown = {e.name: sorted(set(e.killers) - catalogue_ids()) for e in zoo.MUTANTS.values()}
    assert not {k: v for k, v in unknown.items() if v}


def test_every_entry_names_its_bug_in_one_line():
    for e in zoo.ENTRIES.values():
        assert e.bug and e.bug.endswith(".") and (e.correct or e.killers), e.name


def _needs(entry):
    missing = entry.unavailable()
    return pytest.mark.skip(reason=missing) if missing else ()


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name, marks=_needs(e)) for e in zoo.MUTANTS.values()])
def test_mutant_is_killed_by_each_expected_property(entry):
    device = "cuda" if entry.needs_cuda else "cpu"
    results = inprocess.run(impl.load(entry.spec, sx.CONTRACTS, level=entry.level), device, chosen(entry.killers),
                            settings=KILLING, one_failure=True)
    failed = {r.id.split("[")[0] for r in results if r.status in FAILED}
    assert failed >= set(entry.killers), f"{entry.name}: {sorted(set(entry.killers) - failed)} did not fail"


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name, marks=_needs(e)) for e in zoo.CORRECT.values()])
def test_correct_implementation_is_accepted(entry):
    loaded = impl.load(entry.spec, sx.CONTRACTS, level=entry.level)
    results = inprocess.run(loaded, "cpu:0", properties.every_property(), settings=ACCEPTING)
    failed = [f"{r.id}: {r.message} [{r.case}]" for r in results if r.status in FAILED]
    assert not failed, failed
    assert any(r.status == Status.PASS for r in results)


# the level's own L oracle differs by layout: EAGLE (legacy shares it) and DFLASH; the kernel is
# given L, and the functional contract is always semantic; DSpark's length and bonus have theirs
@pytest.mark.parametrize("contract", [sx.EAGLE, sx.DFLASH, sx.DSPARK_LENGTH, sx.DSPARK_BONUS], ids=lambda c: c.name)
def test_each_reference_is_accepted_at_the_semantic_level(contract):
    results = inprocess.run(impl.reference(contract, "semantic"), "cpu", properties.every_property(),
                            settings=ACCEPTING)
    failed = [f"{r.id}: {r.message} [{r.case}]" for r in results if r.status in FAILED]
    assert not failed, failed


def run(seed, failed, examples=None, size=""):
    return zoo_runs.Run(seed, failed, examples, None, 0.0, size)


def test_a_mutant_that_survives_one_seed_fails_the_zoo():
    entry = zoo.MUTANTS["fixed_id_101"]
    row = zoo_runs.judge(entry, "eagle", [run(1, ["fixed_mode_fills_predict_with_the_fixed_id"], 3), run(2, [])])
    assert row.verdict == zoo_runs.SURVIVED
    assert zoo_runs.Zoo({}, [row]).exit_code == 1


def test_a_correct_implementation_that_fails_anything_is_rejected():
    row = zoo_runs.judge(zoo.CORRECT["scatter_based"], "eagle", [run(1, []), run(2, ["inputs_are_never_written"])])
    assert row.verdict == zoo_runs.REJECTED and zoo_runs.Zoo({}, [row]).exit_code == 1


def test_the_row_gives_the_median_examples_and_the_shrunk_size():
    row = zoo_runs.judge(zoo.MUTANTS["pads_with_zero"], "eagle",
                        [run(s, ["index_rows_are_root_plus_range_then_minus_one"], n, "bs=2 W=3") for s, n in ((1, 4), (2, 9), (3, 1))])
    assert (row.verdict, row.median_examples, row.shrunk) == (zoo_runs.KILLED, 4, "bs=2 W=3")


def test_a_failing_case_is_sized_by_its_batch_and_width_or_block():
    result = inprocess.run(impl.load(zoo.MUTANTS["dflash_counts_swapped"].spec, sx.CONTRACTS), "cpu",
                           chosen({"dflash_counts_are_length_minus_one_and_length"}), settings=KILLING)
    assert [r.size for r in result] == ["bs=1 B=1"]


def test_a_property_a_mutant_fails_in_the_first_grad_mode_is_not_run_in_the_next():
    """one_failure's second half: a kill in the first mode is enough, so no process of the
    next mode is started for it; without one_failure both modes run."""
    loaded = impl.load(zoo.MUTANTS["empty_batch_returns_the_input"].spec, sx.CONTRACTS)
    aliases = chosen({"result_aliases_no_input"})
    once = inprocess.run(loaded, "cpu", aliases, settings=KILLING, one_failure=True)
    both = inprocess.run(loaded, "cpu", aliases, settings=KILLING)
    assert [(r.id, r.status) for r in once] == [("result_aliases_no_input[cpu-inference]", Status.FAIL)]
    assert [r.id for r in both] == ["result_aliases_no_input[cpu-inference]", "result_aliases_no_input[cpu-no_grad]"]


def test_an_unknown_entry_is_a_usage_error(capsys):
    from simacc.commands import cli

    assert cli.main(["mutants", "--only", "no_such_mutant", "--only", "fixed_id_10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no zoo entry named 'fixed_id_10', 'no_such_mutant'" in err
    assert "did you mean fixed_id_101?" in err and "the entries are " in err and ", per_row_loop, " in err


def test_a_sigterm_ends_the_command_and_its_workers_at_once(tmp_path):
    """Stopped while its workers check (a SIGTERM, to the command alone, as a CI's time limit
    may send it; a Ctrl-C takes the same path), the command ends them (each would have gone
    on to its next job, and the command waited for every job left: minutes) and waits for
    them: exit 130, no process and no folder left."""
    (tmp_path / "tmp").mkdir()
    command = [sys.executable, "-m", "simacc", "mutants", "--only", "per_row_loop", "--seeds", "2", "-n", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            start_new_session=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    deadline = time.monotonic() + 120
    while len([p for p in offered.group(proc.pid) if b"spawn_main" in p[2]]) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # into their jobs (the whole catalogue, twice: seconds)
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.endswith("simacc mutants: interrupted\n"), err
    # a worker's fork servers end once it has (their standard input closes): the last may still
    # be waiting for its reaper (init) as the command exits, for a moment (seen: 1 run in 15)
    deadline = time.monotonic() + 5
    while offered.group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert offered.group(proc.pid) == [] and os.listdir(tmp_path / "tmp") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_ends_with_the_command_even_when_the_command_is_killed():
    # a worker of a command that died of a SIGKILL waited on its queue for ever (seen: an hour)
    code = ("import ctypes; from simacc.commands.checking import zoo_runs; zoo_runs._worker(); sig = ctypes.c_int(); "
            "ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0); print(sig.value)")  # PR_GET_PDEATHSIG
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == str(int(signal.SIGTERM)), done.stderr
