"""Self-tests of repro files and ``simacc repro``: a planted bug goes from
a failing property to a repro file, a replay that points at the wrong element, a replay that
passes against the reference, a promoted regression case, and a next run that replays it
first; one file per distinct failure however often it is found; cleaning the repro folder;
and never exit 0 when nothing was replayed.

The suite runs happen in this process (a child would import torch again: seconds on a busy
CI runner); :func:`_pytest` gives back what they share with this session."""

import contextlib
import dataclasses
import errno
import io
import json
import math
import os
import re
import shlex
import threading
import time
from pathlib import Path

import pytest
import torch

from simacc import strategies as sx
from simacc.commands import cli
from simacc.harness.config import profiles
from simacc.harness.model import repro_files as reprofile
from simacc.harness.model.cases import TensorArg
from simacc.harness.processes import watch
from simacc.strategies import DecisionCase, DflashCase, EagleCase

REPO = Path(__file__).resolve().parents[2]
REFERENCE = "simacc:generate_simulated_accept_index"
PROPERTY = "index_rows_are_root_plus_range_then_minus_one"
PARITY = ("cuda_matches_cpu_byte_for_byte", "simacc.properties.test_parity")
NAME = rf"{PROPERTY}-cpu-[0-9a-f]{{12}}\.json"
NOWHERE = "cuda:99"  # a device missing on every machine here: the exit-5 paths, with or without CUDA
MISSING_IMPL = "/ci/runner/work/kernels.py:generate"
BUGGY = '''
import torch
import simacc as sa

def roots_at_i_times_width(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                           simulate_acc_token_mode="fixed"):
    """Assumes sglang's roots at i * D instead of reading accept_index[:, 0]."""
    assumed = accept_index.clone()
    assumed[:, 0] = torch.arange(bs, dtype=assumed.dtype) * (spec_steps + 1)
    return sa.generate_simulated_accept_index(
        assumed, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
        simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
'''


def _pytest(*args, corpus, cwd):
    """The suite run in this process from ``cwd`` (the ci profile: derandomized, no
    database), CPU only, with ``corpus`` as the project's corpus: ``(exit code, output)``.
    Afterwards the environment and the working folder are this session's again."""
    command = ["-p", "no:cacheprovider", "-p", "no:faulthandler", "-s", "--rootdir", str(REPO),
               "--simacc-profile=ci", "--simacc-device=cpu", f"--simacc-corpus={corpus}", *args]
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        for name in [k for k in os.environ if k.startswith("SIMACC_")]:
            mp.delenv(name)
        mp.chdir(cwd)
        code = pytest.main(command)
    return int(code), out.getvalue()


@pytest.fixture(scope="module")
def buggy(tmp_path_factory):
    """The IMPL of an implementation that assumes roots at ``i * W``."""
    path = tmp_path_factory.mktemp("buggy") / "buggy.py"
    path.write_text(BUGGY)
    return f"{path}:roots_at_i_times_width"


@pytest.fixture(scope="module")
def planted(tmp_path_factory, buggy):
    """Two suite runs (a run, then a rerun) of one of the buggy implementation's failing
    properties, and every file they left in the repro folder."""
    root = tmp_path_factory.mktemp("planted")
    runs = [_pytest(str(REPO / "properties" / "test_index.py"), "-k", "index_rows", f"--simacc-impl={buggy}",
                    f"--simacc-repro-dir={root / 'failures'}", corpus=root / "corpus", cwd=root) for _ in range(2)]
    return {"impl": buggy, "runs": runs, "files": sorted((root / "failures").iterdir())}


@pytest.fixture
def promoted(planted, tmp_path):
    """A corpus (in ``tmp_path``, never the repo's) holding the planted failure."""
    code = cli.main(["repro", str(planted["files"][0]), "--impl", REFERENCE, "--promote", "--corpus", str(tmp_path)])
    assert code == 0
    return tmp_path


def _valid_case(seed=2**64 - 1):
    return EagleCase(
        accept_index=TensorArg(torch.tensor([[0, -1], [3, -1]], dtype=torch.int32), "transposed"),
        predict=TensorArg(torch.arange(6, dtype=torch.int32), "offset"),
        num_correct_drafts=TensorArg(torch.tensor([7, -2**31], dtype=torch.int32), "strided"),
        candidates=TensorArg(torch.tensor([[1, 2], [3, 2**40]], dtype=torch.int64)),
        target_predict=TensorArg(torch.tensor([[5, 6], [7, 8]], dtype=torch.int64)),
        bs=2, spec_steps=1, simulate_acc_len=1.5, simulate_acc_method="multinomial",
        simulate_acc_token_mode="real-draft-token", seed=seed,
    )


def _record(impl=REFERENCE, device="cpu", case=None, prop=(PROPERTY, "simacc.properties.test_index"),
            message="index[1, 0]=2, but should be 3"):
    """A record of ``_valid_case()``: it passes against the reference and fails against ``buggy``."""
    return reprofile.Repro(*prop, "eagle", impl, device, message, case or _valid_case())


def _document(case=None):
    return json.loads(reprofile.dumps(_record(case=case)))


def _write(folder, record, age=0):
    """Save ``record`` in ``folder`` as if its failure was last found ``age`` seconds ago."""
    path = reprofile.save(record, folder)
    os.utime(path, (time.time() - age, time.time() - age))
    return path


def _same_case(a, b):
    assert type(a) is type(b)
    for name, value in vars(a).items():
        other = getattr(b, name)
        if isinstance(value, TensorArg):
            assert value.layout == other.layout and value.values.dtype == other.values.dtype
            assert torch.equal(value.values.nan_to_num(), other.values.nan_to_num())
            assert torch.equal(value.values.isnan(), other.values.isnan())
        elif isinstance(value, float) and math.isnan(value):
            assert math.isnan(other)
        else:
            assert value == other and type(value) is type(other), name


def test_a_session_run_in_this_process_gives_this_process_its_own_files_back(tmp_path):
    """A session run here (``pytest.main``, as these tests run theirs) removes its shared files
    and hands this process back the ones it had: what runs here next (the ranks of an in-process
    run, its hang count) writes where this process's own session removes it at its end. Before,
    each suite run left some 80 files in the temporary folder."""
    before = watch.prefix()
    code, _ = _pytest(str(REPO / "properties" / "test_fixed.py"), "-k", "byte_identical", "--simacc-max-examples=5",
                      corpus=tmp_path / "corpus", cwd=tmp_path)
    assert code == 0 and watch.prefix() == before


def test_a_failing_property_writes_one_repro_file_and_says_how_to_replay_it(planted):
    (code, out), _ = planted["runs"]
    files = planted["files"]
    assert code == 1, out
    assert len(files) == 1
    name = files[0].name
    assert re.fullmatch(NAME, name)
    assert f"simacc repro failures/{name} --impl {shlex.quote(planted['impl'])}\n" in out  # relative to where pytest ran
    assert "case: EagleCase(" in out
    doc = json.loads(files[0].read_text())
    assert (doc["schema"], doc["property"], doc["module"]) == (reprofile.SCHEMA, PROPERTY, "simacc.properties.test_index")
    assert (doc["contract"], doc["impl"], doc["device"]) == ("eagle", planted["impl"], "cpu")
    assert doc["message"].startswith("index[")


def test_a_rerun_that_finds_the_same_failure_rewrites_its_file_instead_of_adding_one(planted):
    (path,) = planted["files"]  # after both runs: no second file, no temporary one
    for code, out in planted["runs"]:
        assert code == 1 and f"repro file: failures/{path.name}\n" in out, out


def test_replaying_against_the_buggy_implementation_exits_1_and_points_at_the_wrong_element(planted, capsys):
    assert cli.main(["repro", str(planted["files"][0]), "--trust-recorded-impl"]) == 1
    out = capsys.readouterr().out
    named = re.search(r"FAIL: index\[(\d+), (\d+)\]=(-?\d+), but should be (-?\d+): row \d+, j=\d+: ", out)
    assert named, out
    row, col, got, expected = named.groups()
    assert f"returned[{row}, {col}]: expected {expected}, produced {got}" in out


def test_a_replay_prints_the_case_once_with_its_values_then_the_claim_and_the_diff(planted, capsys):
    assert cli.main(["repro", str(planted["files"][0]), "--trust-recorded-impl"]) == 1
    out = capsys.readouterr().out
    assert out.count("EagleCase(") == 1 and "\ncase=EagleCase(\n    accept_index=tensor([[" in out
    claim = next(line for line in out.splitlines() if line.startswith("FAIL: "))
    assert claim.endswith("]") and "[L=" in claim and "case" not in claim  # one line: the values are in the diff
    assert out.index("case=EagleCase(") < out.index("FAIL: ") < out.index("where ")


def test_replaying_against_the_reference_exits_0(planted, capsys):
    assert cli.main(["repro", str(planted["files"][0]), "--impl", REFERENCE]) == 0
    assert f"pass: {PROPERTY} holds" in capsys.readouterr().out


def test_promoting_copies_the_case_into_the_corpus_once(planted, promoted, capsys):
    (path,) = promoted.glob("*.json")
    assert re.fullmatch(rf"{PROPERTY}-[0-9a-f]{{10}}\.json", path.name)
    _same_case(reprofile.load(path, sx.CONTRACTS).case, reprofile.load(planted["files"][0], sx.CONTRACTS).case)
    assert cli.main(["repro", str(planted["files"][0]), "--trust-recorded-impl", "--promote", "--corpus", str(promoted)]) == 1
    assert "already in the regression corpus" in capsys.readouterr().out
    assert len(list(promoted.glob("*.json"))) == 1


def test_the_next_suite_run_replays_the_promoted_case_first(planted, promoted, tmp_path):
    code, out = _pytest(str(REPO / "properties" / "test_index.py"), str(REPO / "properties" / "test_regressions.py"),
                        "-v", "-k", "index_rows or regression", f"--simacc-impl={planted['impl']}",
                        f"--simacc-repro-dir={tmp_path / 'failures'}", corpus=promoted, cwd=tmp_path)
    results = re.findall(r"properties/(\S+)::(\S+) (PASSED|FAILED|SKIPPED)", out)
    names = [name for _, name, _ in results]
    case = names.index(f"test_regression[{next(promoted.glob('*.json')).stem}-cpu]")
    first_random = next(i for i, (module, _, _) in enumerate(results) if module != "test_regressions.py")
    assert case < first_random and results[case][2] == "FAILED", out  # before any random case
    assert {p.name.split("-")[0] for p in (tmp_path / "failures").glob("*.json")} == {PROPERTY}


def test_against_the_reference_a_promoted_case_passes_and_a_broken_corpus_file_fails_with_its_reason(promoted, tmp_path):
    (promoted / "broken.json").write_text('{"schema": "simacc-repro/1"')
    code, out = _pytest(str(REPO / "properties" / "test_regressions.py"), "-rA", corpus=promoted, cwd=tmp_path)
    assert re.search(r"PASSED \S+::test_regression\[index_rows\S+-27bed69891-cpu\]", out), out
    assert "broken.json: not valid JSON" in out and "1 failed, 6 passed" in out, out  # simacc's 5 cases and the promoted


# -- one file per distinct failure -------------------------------------------------------


def test_one_failure_is_one_file_whichever_worker_run_or_device_spelling_finds_it(tmp_path):
    first = reprofile.save(_record(message="first"), tmp_path)
    again = reprofile.save(_record(device="cpu:0", message="found again"), tmp_path)
    assert again == first and re.fullmatch(NAME, first.name)
    assert list(tmp_path.iterdir()) == [first]
    assert reprofile.load(first, sx.CONTRACTS).message == "found again"  # the latest word on it
    others = [_record(impl=MISSING_IMPL), _record(device=NOWHERE), _record(case=_valid_case(seed=1)),
              _record(prop=("real_mode_writes_drafts_then_bonus_at_accepted_slots", "simacc.properties.test_tokens"))]
    names = {reprofile.save(record, tmp_path).name for record in others}
    assert len(names) == len(others) and first.name not in names


def test_concurrent_writers_of_one_failure_leave_one_whole_file_and_nothing_else(tmp_path):
    seen, stop = [], threading.Event()

    def write(writer):
        for _ in range(10):
            reprofile.save(_record(message=f"writer {writer}"), tmp_path)

    def read():  # a reader never sees half a file
        while not stop.is_set():
            for path in tmp_path.glob("*.json"):
                try:
                    seen.append(reprofile.load(path, sx.CONTRACTS).message)
                except reprofile.ReproError as e:
                    seen.append(f"half a file: {e}")

    reader = threading.Thread(target=read)
    writers = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in [reader, *writers]:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()
    (path,) = tmp_path.iterdir()
    assert re.fullmatch(NAME, path.name) and reprofile.load(path, sx.CONTRACTS).message.startswith("writer ")
    assert seen and all(m.startswith("writer ") for m in seen)


def test_a_write_that_fails_leaves_the_earlier_file_whole_and_no_temporary_file(tmp_path, monkeypatch):
    path = reprofile.save(_record(message="earlier"), tmp_path)

    def disk_error(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", disk_error)  # the new text never reached the disk
    with pytest.raises(OSError):
        reprofile.save(_record(message="later"), tmp_path)
    assert list(tmp_path.iterdir()) == [path]
    assert reprofile.load(path, sx.CONTRACTS).message == "earlier"


# -- which device, and exit 5 when nothing was replayed -----------------------------------


def test_a_case_recorded_on_a_missing_cuda_device_replays_on_cpu_with_a_note(tmp_path, capsys):
    path = _write(tmp_path, _record(device=NOWHERE))
    assert cli.main(["repro", str(path), "--device", "cpu", "--trust-recorded-impl"]) == 0
    assert f"on cpu (recorded on {NOWHERE})" in capsys.readouterr().out
    assert cli.main(["repro", str(path), "--trust-recorded-impl"]) == 0
    assert f"note: recorded on {NOWHERE}; no " in capsys.readouterr().out  # no CUDA, or no such index
    if not torch.cuda.is_available():
        cuda = _write(tmp_path, _record(device="cuda"))
        assert cli.main(["repro", str(cuda), "--trust-recorded-impl"]) == 0
        assert "no CUDA: torch.cuda.is_available() is False, so replaying on cpu" in capsys.readouterr().out


def test_a_case_its_contract_cannot_be_asked_says_which_variant_it_is_and_which_the_contract_takes(tmp_path, capsys):
    """A real-mode EAGLE case replayed against the legacy layout (fixed mode only): the message
    names both in the contract's word for its variants (CONTRACT.md §6)."""
    path = _write(tmp_path, _record())
    assert cli.main(["repro", str(path), "--impl", "simacc:legacy_generate_simulated_accept_index"]) == 2
    assert ("follows contract 'legacy' (token mode fixed), and this is a case whose token mode is real-draft-token, "
            "for eagle" in capsys.readouterr().err)


def test_an_explicit_device_that_is_missing_exits_5_with_a_one_line_reason(tmp_path, capsys):
    path = _write(tmp_path, _record())
    assert cli.main(["repro", str(path), "--device", NOWHERE]) == 5
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"--device {NOWHERE}, but no " in err, err
    if not torch.cuda.is_available():
        assert cli.main(["repro", str(path), "--device", "cuda"]) == 5
        assert "--device cuda, but no CUDA" in capsys.readouterr().err


def test_without_fallback_a_case_recorded_on_a_missing_device_exits_5_and_promotes_nothing(tmp_path, capsys):
    path = _write(tmp_path / "failures", _record(device=NOWHERE))
    corpus = tmp_path / "corpus"
    assert cli.main(["repro", str(path), "--no-fallback", "--promote", "--corpus", str(corpus)]) == 5
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"recorded on {NOWHERE}, but no " in err and "--no-fallback" in err, err
    assert not corpus.exists()


def test_a_cuda_parity_case_is_never_replayed_on_cpu(tmp_path, capsys):
    path = _write(tmp_path, _record(prop=PARITY))
    assert cli.main(["repro", str(path), "--device", "cpu"]) == 5  # it would compare cpu with itself
    assert "compares CUDA with CPU" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert cli.main(["repro", str(path)]) == 5
        assert "compares CUDA with CPU, and CUDA is not available here" in capsys.readouterr().err


# -- cleaning the repro folder ------------------------------------------------------------


def _clean(*args):
    """``simacc repro ARGS``, trusting the files' implementations unless ``--impl`` names one."""
    trust = [] if "--impl" in args else ["--trust-recorded-impl"]
    return cli.main(["repro", *args, *trust])


def test_pruning_removes_the_cases_that_pass_now_and_keeps_the_ones_that_still_fail(tmp_path, buggy, capsys):
    passes, fails = _write(tmp_path, _record()), _write(tmp_path, _record(impl=buggy))
    assert _clean("--prune", "--repro-dir", str(tmp_path)) == 1
    out = capsys.readouterr().out
    assert f"removed    {passes}: passes now ({REFERENCE} on cpu)\n" in out
    assert f"kept       {fails}: still fails ({buggy} on cpu): AssertionError: index[1, 0]=" in out
    assert out.endswith(f"2 repro file(s) in {tmp_path}: 1 removed, 1 kept, 0 unreadable\n")
    assert list(tmp_path.iterdir()) == [fails]
    assert _clean("--prune", "--repro-dir", str(tmp_path), "--impl", REFERENCE) == 0  # once fixed
    assert _clean("--prune", "--repro-dir", str(tmp_path)) == 0
    assert list(tmp_path.iterdir()) == [] and capsys.readouterr().out.endswith(f"no repro files in {tmp_path}\n")


def test_pruning_reports_an_unreadable_file_and_removes_it_only_when_asked(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "simacc-repro/1"')
    passes = _write(tmp_path, _record())
    assert _clean("--prune", "--repro-dir", str(tmp_path)) == 2
    out = capsys.readouterr().out
    assert f"unreadable {broken}: not valid JSON" in out and "(kept; --remove-unreadable removes it)" in out
    assert f"removed    {passes}: passes now" in out
    assert list(tmp_path.iterdir()) == [broken]
    assert _clean("--prune", "--repro-dir", str(tmp_path), "--remove-unreadable") == 0
    assert f"removed    {broken}: unreadable: not valid JSON" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_pruning_keeps_every_case_it_cannot_replay_here(tmp_path, capsys):
    elsewhere = _write(tmp_path, _record(device=NOWHERE))
    parity = _write(tmp_path, _record(prop=PARITY, device=NOWHERE))  # on cpu it would compare cpu with itself
    assert _clean("--prune", "--no-fallback", "--repro-dir", str(tmp_path)) == 5
    out = capsys.readouterr().out
    assert f"kept       {elsewhere}: not replayed: recorded on {NOWHERE}, but no " in out
    assert f"kept       {parity}: not replayed: " in out
    assert _clean("--prune", "--repro-dir", str(tmp_path)) == 5  # the fallback replays one on cpu
    assert f"removed    {elsewhere}: passes now ({REFERENCE} on cpu; recorded on {NOWHERE}" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [parity]
    unusable = _write(tmp_path, _record(impl=MISSING_IMPL))
    assert _clean("--prune", "--repro-dir", str(tmp_path)) == 2
    assert f"kept       {unusable}: not replayed: IMPL {MISSING_IMPL!r}: no such file" in capsys.readouterr().out
    assert sorted(tmp_path.iterdir()) == sorted([parity, unusable])


def test_keep_n_removes_all_but_the_newest_n_files_without_replaying_them(tmp_path, buggy, capsys):
    oldest = _write(tmp_path, _record(impl=MISSING_IMPL), age=600)  # never imported
    old = _write(tmp_path, _record(impl=buggy), age=300)
    new = _write(tmp_path, _record(), age=10)
    assert _clean("--keep", "1", "--repro-dir", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert f"removed    {oldest}: older than the newest 1\n" in out and f"removed    {old}: older than the newest 1\n" in out
    assert f"kept       {new}: one of the newest 1\n" in out
    assert list(tmp_path.iterdir()) == [new]
    newest = _write(tmp_path, _record(impl=buggy, case=_valid_case(seed=7)))
    assert _clean("--prune", "--keep", "1", "--repro-dir", str(tmp_path)) == 1  # the newest still fails
    assert list(tmp_path.iterdir()) == [newest]


def test_pruning_a_named_folder_that_does_not_exist_exits_2_and_a_missing_default_one_is_clean(tmp_path, monkeypatch, capsys):
    assert _clean("--prune", "--repro-dir", str(tmp_path / "typo")) == 2
    assert f"repro folder {tmp_path / 'typo'} does not exist" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMACC_REPRO_DIR", raising=False)
    assert _clean("--prune") == 0
    assert capsys.readouterr().out == "no repro files in .simacc/failures\n"


@pytest.mark.parametrize("args, problem", [
    ([], "give a repro file PATH, or --prune/--keep N to clean the repro folder, or --database URL --impl IMPL to "
            "replay an example database"),
    (["case.json", "--prune"], "give a repro file PATH or --prune/--keep, not both"),
    (["--keep", "3", "--promote"], "--promote goes with a repro file PATH"),
    (["case.json", "--repro-dir", "elsewhere"], "--repro-dir and --remove-unreadable go with --prune or --keep"),
])
def test_a_repro_file_and_a_folder_action_exclude_each_other_and_one_is_needed(args, problem, capsys):
    assert _clean(*args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"simacc repro: error: {problem}; try 'simacc repro --help'\n", err


def test_the_help_documents_both_ways_to_call_it_and_every_exit_code(capsys):
    with pytest.raises(SystemExit):
        cli.main(["repro", "--help"])
    out = capsys.readouterr().out
    assert "simacc repro PATH" in out and "simacc repro --prune" in out and "simacc repro --keep N" in out
    for line in ("0  the case passes", "1  the case still fails", "2  the file is unusable", "5  nothing replayed"):
        assert line in out
    assert "--no-fallback" in out and "--remove-unreadable" in out


def test_a_repro_file_round_trips_every_tensor_dtype_layout_and_float():
    eagle = _valid_case()
    logits = torch.tensor([[0.5, float("inf")], [float("nan"), -1e-38]], dtype=torch.float32)
    dflash = DflashCase(
        candidates=TensorArg(torch.zeros((2, 1), dtype=torch.int32)), target_predict=None,
        accept_len=TensorArg(torch.zeros(2, dtype=torch.int32)), commit_lens=TensorArg(torch.zeros(2, dtype=torch.int32)),
        bonus=TensorArg(torch.tensor([2**62, -(2**63)])), out_tokens=TensorArg(torch.zeros((2, 1), dtype=torch.int64), "strided"),
        simulate_acc_len=float("nan"), simulate_acc_method="match-expected", simulate_acc_token_mode="real-draft-token",
        next_token_logits=TensorArg(logits, "transposed"), seed=0, fixed_token_id=2**31 - 1,
    )
    ints = lambda *values: TensorArg(torch.tensor(values))  # noqa: E731
    decisions = [DecisionCase(
        draft_token_ids=TensorArg(torch.tensor([3, -1], dtype=torch.int32)), num_draft_tokens=ints(2),
        uniform_probs=TensorArg(torch.tensor([0.2998, 6e-8], dtype=dtype)),
        synthetic_conditional_rates=TensorArg(torch.tensor([0.3, 0.1])), target_argmax=ints(1, 2),
        recovered_token_ids=ints(4, 5), bonus_token_ids=ints([6]), is_greedy=TensorArg(torch.tensor([True])),
    ) for dtype in (torch.float16, torch.bfloat16)]
    for case in (eagle, dflash, dataclasses.replace(dflash, fixed_token_id=None), *decisions):
        _same_case(reprofile.decode_case(json.loads(json.dumps(reprofile.encode_case(case))), sx.CONTRACTS), case)
    assert "fixed_token_id" not in reprofile.encode_case(dataclasses.replace(dflash, fixed_token_id=None))["fields"]
    assert reprofile.parse(json.dumps(_document()), sx.CONTRACTS).case.seed == 2**64 - 1


def _edit(path, key, value):
    def change(doc):
        target = doc
        for part in path:
            target = target[part]
        if value is _DELETE:
            del target[key]
        else:
            target[key] = value
        return json.dumps(doc)
    return change


_DELETE = object()
_FIELDS = ("case", "fields")
_INDEX = ("case", "fields", "accept_index")
INVALID = {
    "corrupt": (lambda doc: "{\x00garbage", "not valid JSON"),
    "truncated": (lambda doc: json.dumps(doc)[:150], "corrupt or truncated"),
    "not UTF-8": (None, "not UTF-8"),
    "a JSON list": (lambda doc: "[1, 2]", "a JSON list, not an object"),
    "no schema": (_edit((), "schema", _DELETE), "no 'schema' field"),
    "wrong schema": (_edit((), "schema", "simacc-repro/0"), "schema 'simacc-repro/0' is not supported"),
    "missing field": (_edit((), "device", _DELETE), "missing field 'device'"),
    "extra field": (_edit((), "pickle", "x"), "unexpected field 'pickle'"),
    "unknown property": (_edit((), "property", "no_such_claim"), "unknown property id 'no_such_claim'"),
    "property id with a path": (_edit((), "property", "../../etc"), "not a valid id"),
    "unknown contract": (_edit((), "contract", "medusa"), "unknown contract 'medusa'"),
    "contract not covered": (_edit((), "contract", "dflash"), "does not fit contract 'dflash'"),
    "unknown device": (_edit((), "device", "tpu"), "unknown device 'tpu'"),
    "unknown case type": (_edit(("case",), "type", "MedusaCase"), "unknown case type 'MedusaCase'"),
    "missing case field": (_edit(_FIELDS, "seed", _DELETE), "missing field 'seed'"),
    "extra case field": (_edit(_FIELDS, "topk", 2), "unexpected field 'topk'"),
    "wrong dtype": (_edit(_INDEX, "dtype", "torch.int32"), "unknown dtype 'torch.int32'"),
    "unknown layout": (_edit(_INDEX, "layout", "channels_last"), "unknown layout 'channels_last'"),
    "too few values": (_edit(_INDEX, "values", [0, -1, 3]), "has shape [2, 2] but 3 values"),
    "huge shape": (_edit(_INDEX, "shape", [10**6, 10**6]), "exceeds 10000000 elements"),
    "negative shape": (_edit(_INDEX, "shape", [-1, 2]), "invalid shape"),
    "deep nesting": (lambda doc: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "float in an int tensor": (_edit(_INDEX, "values", [0, -1, 3, 0.5]), "non-integer value"),
    "bool in an int tensor": (_edit(_INDEX, "values", [0, -1, 3, True]), "non-integer value"),
    "value out of int32 range": (_edit(_INDEX, "values", [0, -1, 2**31, -1]), "outside the int32 range"),
    "value out of float16 range": (lambda doc: _edit(_INDEX, "values", [0.0, -1.0, 3.0, 65536.0])(
        json.loads(_edit(_INDEX, "dtype", "float16")(doc))), "outside the float16 range"),
    "bare NaN": (lambda doc: json.dumps(doc).replace('"simulate_acc_len": 1.5', '"simulate_acc_len": NaN'), "bare NaN is not JSON"),
    "string seed": (_edit(_FIELDS, "seed", "0"), "field 'seed' must be a 64-bit integer"),
    "duplicate field": (lambda doc: json.dumps(doc)[:-1] + ', "device": "cuda"}', "field 'device' appears twice"),
    "control characters": (_edit((), "impl", "x.py:f\nrm -rf /"), "'impl' holds control characters"),
    "transposed 1-D": (_edit(("case", "fields", "predict"), "layout", "transposed"), "needs a 2-D tensor"),
}


@pytest.mark.parametrize("kind", INVALID)
def test_an_invalid_repro_file_exits_2_with_a_one_line_reason_and_writes_nothing(kind, tmp_path, capsys):
    make, reason = INVALID[kind]
    path = tmp_path / "case.json"
    if make is None:
        path.write_bytes(b"\xff\xfe{")
    else:
        path.write_text(make(_document()))
    corpus = tmp_path / "corpus"
    assert cli.main(["repro", str(path), "--promote", "--corpus", str(corpus)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and reason in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.json"]


def test_a_missing_file_exits_2(tmp_path, capsys):
    assert cli.main(["repro", str(tmp_path / "nope.json")]) == 2
    assert "cannot read it" in capsys.readouterr().err


def test_a_recorded_implementation_that_is_not_here_exits_2_and_suggests_impl(tmp_path, capsys):
    doc = _document()
    doc["impl"] = MISSING_IMPL
    (tmp_path / "case.json").write_text(json.dumps(doc))
    assert cli.main(["repro", str(tmp_path / "case.json")]) == 2
    assert "pass --impl" in capsys.readouterr().err


def test_the_repos_corpus_files_are_valid_and_named_for_their_case():
    from simacc.properties.test_regressions import BUILT_IN

    files = sorted(BUILT_IN.glob("*.json"))
    assert files, "the corpus starts with a few real cases"
    for path in files:
        record = reprofile.load(path, sx.CONTRACTS)
        assert path.name == f"{record.property}-{record.digest()}.json"


def test_local_runs_keep_an_example_database_and_ci_prints_reproduction_blobs(tmp_path):
    from hypothesis.database import DirectoryBasedExampleDatabase

    local = profiles.for_session("default", root=tmp_path).database
    assert isinstance(local, DirectoryBasedExampleDatabase) and Path(local.path) == tmp_path / ".hypothesis/examples"
    ci = profiles.for_session("ci")
    assert ci.database is None and ci.print_blob and ci.derandomize


@pytest.mark.parametrize("report", sorted((REPO / "docs" / "findings").glob("*.md")), ids=lambda path: path.stem)
def test_a_published_finding_replays_and_the_contracts_reference_passes_its_case(report, capsys):
    """A report for an engine's maintainers (docs/findings/) keeps a repro file this simacc reads,
    and its case is one the contract's reference passes: the answer the report expects is the
    contract's, whatever the engine does."""
    found = report.with_suffix(".json")
    assert f"simacc repro docs/findings/{found.name} --impl " in report.read_text(encoding="utf-8")
    contract = json.loads(found.read_text(encoding="utf-8"))["contract"]
    assert cli.main(["repro", str(found), "--impl", sx.contract(contract).spec]) == 0
    assert "holds for this case" in capsys.readouterr().out
