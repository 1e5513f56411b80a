"""Correct code as it lives in a real serving process is accepted (CONTRACT.md §11.5-§11.7):
compiled with ``torch.compile`` (torch's own wrapper of ``torch.manual_seed`` is not
tampering), keeping state in one grad mode per process; and ranks that would draw different
lengths are caught, with a message that says what ranks would see. The zoo's entries of
:mod:`simacc.zoo.realprocess` go through the whole catalogue in ``tests/meta/test_zoo.py``; here
they go through the commands, as a user runs them.
"""

import functools
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import Phase, settings

from simacc import properties, zoo
from simacc import strategies as sx
from simacc.commands import cli
from simacc.harness.call import impl, tamper
from simacc.harness.call.runner import ImplementationHung
from simacc.harness.config import profiles
from simacc.harness.config.status import Status
from simacc.harness.judging import catalogue
from simacc.harness.model import repro_files as reprofile
from simacc.harness.model.cases import TensorArg
from simacc.harness.processes import forkserver, fresh
from simacc.harness.sessions import inprocess, ranks
from simacc.strategies import EagleCase

COUNT = "num_correct_drafts_is_length_minus_one"
RANKS = "ranks_agree_given_the_same_inputs_and_seed"
ALIASES = "result_aliases_no_input"
KILLING = settings(profiles.for_session("ci"), database=None, phases=[Phase.explicit, Phase.generate])


@pytest.fixture
def workdir(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading an IMPL appends folders
    return tmp_path


def check(capsys, *argv):
    code = cli.main(["check", "-v", "--device", "cpu", "--max-examples", "5", "--seed", "0", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def recorded():
    """``torch.manual_seed`` as the harness recorded it, put back after the test."""
    tamper.baseline()
    before = torch.manual_seed
    yield before
    torch.manual_seed = before
    tamper.modified()


def test_torchs_own_wrapper_of_a_recorded_function_is_adopted_not_reported(recorded):
    torch.manual_seed = torch._disable_dynamo(recorded)  # what importing torch._dynamo does
    assert tamper.modified() == [] and torch.manual_seed.__wrapped__ is recorded
    torch.equal = torch._disable_dynamo(lambda a, b: True)  # torch's wrapper, of something else
    assert tamper.modified() == ["torch.equal"] and torch.equal(torch.zeros(1), torch.ones(1)) is False


def test_a_wrapper_written_outside_torch_is_still_a_modification(recorded):
    @functools.wraps(recorded)
    def seeded(*args, **kwargs):
        return recorded(*args, **kwargs)

    torch.manual_seed = seeded
    assert tamper.modified() == ["torch.manual_seed"] and torch.manual_seed is recorded


# what a serving process's shape can upset: the protections around every call and import, grad
# modes in processes of their own, state across calls, ranks (tests/meta/test_zoo.py runs these entries
# through the whole catalogue)
SERVING = (ALIASES, "serving_loop_conforms_at_every_step", RANKS, COUNT, "index_rows_are_root_plus_range_then_minus_one",
           "fixed_mode_is_byte_identical_to_legacy", "leaves_the_process_as_it_found_it", "regression")


@pytest.mark.parametrize(("entry", "workers"), [("compiled_at_import", "0"), ("per_shape_work_buffer", "2")])
def test_correct_code_of_a_serving_process_is_conformant(workdir, capsys, entry, workers):
    code, out, err = check(capsys, zoo.CORRECT[entry].spec, "-n", workers, *(f"--property={p}" for p in SERVING))
    assert code == 0, out + err
    assert "CONFORMANT" in out and "modified the harness" not in out
    assert f"{ALIASES}[cpu-no_grad]" in err and f"{ALIASES}[cpu-inference]" in err  # each mode in its own session


def test_a_replay_of_a_compiled_implementation_is_not_taken_for_tampering(workdir, capsys):
    path = reprofile.save(reprofile.Repro(COUNT, "simacc.properties.test_index", "eagle", "somewhere:else", "cpu",
                                          "found elsewhere", _case()), workdir)
    code = cli.main(["repro", str(path), "--impl", zoo.CORRECT["compiled_at_import"].spec])
    out = capsys.readouterr().out
    assert code == 0 and f"pass: {COUNT} holds" in out, out


def _case():
    return EagleCase(accept_index=TensorArg(torch.tensor([[0, -1]], dtype=torch.int32)),
                     predict=TensorArg(torch.arange(2, dtype=torch.int32)),
                     num_correct_drafts=TensorArg(torch.tensor([5], dtype=torch.int32)), candidates=None,
                     target_predict=None, bs=1, spec_steps=1, simulate_acc_len=1.5,
                     simulate_acc_method="match-expected", simulate_acc_token_mode="fixed", seed=3)


@pytest.mark.parametrize("entry", ["draws_from_os_entropy", "draws_from_an_unseeded_numpy_generator"])
def test_ranks_that_draw_different_lengths_say_so(entry):
    mutant = zoo.MUTANTS[entry]
    (result,) = inprocess.run(impl.load(mutant.spec, sx.CONTRACTS, level="semantic"), "cpu", [properties.find(RANKS)],
                              settings=KILLING)
    assert result.status == Status.FAIL
    assert result.message.startswith("AssertionError: rank 0 drew L=") and ", rank 1 drew L=" in result.message
    assert "for the same inputs and seed" in result.message


def test_each_rank_is_launched_with_its_identity_and_a_clock_of_its_own():
    """As torchrun launches its workers: ``RANK`` and the rest in each rank's environment, and a
    process group in which ``get_rank()`` is the rank's; rank 1's clocks (wall, monotonic, the
    calendar's) :data:`ranks.CLOCK_SHIFT` ahead of rank 0's, the heartbeat's the real one; none of it in this process."""
    both = ranks.Ranks(impl.reference(sx.EAGLE), "cpu", None, 30)
    try:
        assert both._all("os:getenv", "RANK", limit=60) == ["0", "1"]
        assert both._all("os:getenv", "WORLD_SIZE", limit=60) == ["2", "2"]
        assert both._all("torch.distributed:get_rank", limit=60) == [0, 1]
        for clock in ("time:time", "time:monotonic", "time:perf_counter"):
            readings = both._all(clock, limit=60)
            assert abs(readings[1] - readings[0] - ranks.CLOCK_SHIFT) < 5, clock
        nows = both._all("builtins:eval", "__import__('datetime').datetime.now()", limit=60)
        assert abs((nows[1] - nows[0]).total_seconds() - ranks.CLOCK_SHIFT) < 5
        beats = both._all("simacc.harness.processes.watch:_MONOTONIC", limit=60)  # the heartbeat's clock: the real one
        assert abs(beats[1] - beats[0]) < 5
    finally:
        both.close()
    assert "RANK" not in os.environ and not torch.distributed.is_initialized()


def test_each_rank_imports_the_implementation_anew(workdir, capsys):
    """A generator made at import from the operating system's entropy: one per rank."""
    (workdir / "seeded_at_import.py").write_text(textwrap.dedent("""\
        import numpy as np
        import torch

        _RNG = np.random.default_rng()  # from the operating system, once, when imported


        def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                     simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
            width = spec_steps + 1
            length = 1 + int(width > 1 and _RNG.random() < 0.5)
            cols = torch.arange(width, dtype=torch.int32)
            num_correct_drafts.fill_(length - 1)
            predict.fill_(100)
            return torch.where(cols < length, accept_index[:, :1].to(torch.int32) + cols, -1).to(torch.int32)
        """))
    code, out, err = check(capsys, "seeded_at_import.py:generate", "--level", "semantic", "-n", "0",
                           "--property", RANKS, "--max-examples", "20")
    assert code == 1 and "rank 0 drew L=" in out, out + err


def test_a_failure_that_does_not_reproduce_is_printed_as_a_failure_with_one_line_more(workdir, capsys):
    """Wrong on the third call of its process only: Hypothesis's replay passes (a FlakyFailure)."""
    (workdir / "third_call.py").write_text(textwrap.dedent("""\
        import simacc

        CALLS = [0]


        def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                     simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
            CALLS[0] += 1
            out = simacc.generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates,
                                                         target_predict, bs, spec_steps, simulate_acc_len,
                                                         simulate_acc_method, simulate_acc_token_mode)
            if CALLS[0] == 3:
                num_correct_drafts.add_(1)
            return out
        """))
    code, out, err = check(capsys, "third_call.py:generate", "-n", "0", "--property", COUNT, "--max-examples", "10")
    assert code == 1, out + err
    block = out[out.index(f"FAIL {COUNT}"):]
    assert block.splitlines()[1].strip().startswith("num_correct_drafts[0]=") and "FlakyFailure" not in block
    assert catalogue.NOT_REPRODUCED in block and "replay: simacc repro " in block


def test_two_ranks_that_cannot_be_copies_hash_strings_apart_even_with_the_hash_seed_fixed(monkeypatch):
    """Where rank 0 cannot be a copy (the implementation imported already), both ranks are new
    interpreters, each forked from a rank server with a hash seed of its own: with
    ``PYTHONHASHSEED`` fixed (as tox does), rank 0's is its second successor, never rank 1's,
    so a port seeded from a string's hash still draws differently in each (one import of torch:
    rank 0's server)."""
    monkeypatch.setenv("PYTHONHASHSEED", "7")
    hashes = []
    for rank in (0, 1):
        with fresh.Process(new=True, rank=rank) as process:
            process.send("builtins:hash", "sim-acc")
            hashes.append(process.receive(120))
    assert hashes[0] != hashes[1], hashes
    nine = subprocess.run([sys.executable, "-S", "-c", "print(hash('sim-acc'))"], env={"PYTHONHASHSEED": "9"},
                          capture_output=True, text=True, check=True)
    assert hashes[0] == ("ok", int(nine.stdout)), hashes


@pytest.mark.skipif(not forkserver.available(), reason="no rank server here (Linux with fork only)")
def test_a_rank_forked_from_the_rank_server_unpickles_every_record_it_may_be_sent_without_an_import():
    """The records and case types a rank is sent live in ``simacc.strategies``, which the rank
    server imported: a rank that is a new interpreter unpickles them without importing the
    package and Hypothesis anew (0.15 s of CPU in each rank)."""
    with fresh.Process(new=True) as process:
        def imported():
            process.send("builtins:eval", "len(sys.modules)")  # in the namespace of fresh, which imported sys
            return process.receive(120)

        before = imported()
        process.send("builtins:len", sx.CONTRACTS)  # each record holds its case type, reference and strategy
        assert process.receive(120) == ("ok", len(sx.CONTRACTS))
        assert imported() == before


class _Scripted:
    """A rank that answers from a script, each answer to the call it was asked, as a rank's
    process does; an exception in the script is raised where the answer would be read."""

    pid = 0

    def __init__(self, *script):
        self.script, self.asked, self.closed = list(script), [], False

    def send(self, target, *args):
        self.asked.append(self.script.pop(0))

    def receive(self, limit):
        answer = self.asked.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self):
        self.closed = True


def _scripted_ranks(*processes):
    scripted = object.__new__(ranks.Ranks)
    scripted.processes, scripted.timeout = list(processes), 1
    return scripted


def test_ranks_stay_in_step_when_one_rank_fails_a_call():
    """Rank 0 late on the first call, rank 1 in time: rank 1's answer is read all the same, so
    the next call compares both ranks' answers to that call (left unread, rank 1's first answer
    would be taken for its second, and every later call compared with the one before)."""
    late = _Scripted(("raised", "ImplementationHung: late"), ("ok", "second"))
    both = _scripted_ranks(late, _Scripted(("ok", "first"), ("ok", "second")))
    with pytest.raises(ImplementationHung, match="in rank 0: late"):
        both.run(case=None)
    assert both.run(None) == ["second", "second"]


class _Runner:
    impl = device = context = None
    timeout = 1

    def __init__(self):
        self.closing = []

    def check_import(self):
        pass


def test_a_rank_that_died_ends_its_ranks_and_the_next_call_starts_new_ones(monkeypatch):
    made = [_scripted_ranks(_Scripted(fresh.Died("it ended before it answered")), _Scripted(("ok", "first"))),
            _scripted_ranks(_Scripted(("ok", "second")), _Scripted(("ok", "second")))]
    monkeypatch.setattr(ranks, "Ranks", lambda *args: made.pop(0))
    runner = _Runner()
    dead, kept = made[0].processes
    with pytest.raises(ranks.RankFailed, match="rank 0's process .* died: it ended before it answered"):
        ranks.of(runner, None)
    assert dead.closed and kept.closed and not kept.asked  # rank 1's answer was read, then it was closed
    assert ranks.of(runner, None) == ["second", "second"] and not made
    (close,) = runner.closing  # one closing for the runner, whichever ranks it holds then
    close()
