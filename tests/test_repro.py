"""Self-tests of repro files and ``simacc repro`` (issue #5): a planted bug goes from a failing
property to a repro file, a replay that points at the wrong element, a replay that passes
against the reference, a promoted regression case, and a next run that replays it first."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from simacc import catalogue, cli, reprofile
from simacc.cases import DflashCase, EagleCase, TensorArg

REPO = Path(__file__).resolve().parents[1]
REFERENCE = "simacc:generate_simulated_accept_index"
PROPERTY = "index_rows_are_root_plus_range_then_minus_one"
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
    """The suite in a fresh process (the ci profile: derandomized, no database), CPU only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMACC_")}
    env["SIMACC_REGRESSIONS"] = str(corpus)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(REPO),
               "--hypothesis-profile", "ci", "--device", "cpu", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A buggy implementation, the output of a suite run on one of its failing properties,
    and the repro file that run wrote."""
    root = tmp_path_factory.mktemp("planted")
    (root / "buggy.py").write_text(BUGGY)
    impl = f"{root / 'buggy.py'}:roots_at_i_times_width"
    run = _pytest(str(REPO / "properties" / "test_index.py"), "-k", "index_rows", "--impl", impl,
                  "--repro-dir", str(root / "failures"), corpus=root / "corpus", cwd=root)
    files = sorted((root / "failures").glob("*.json"))
    return {"root": root, "impl": impl, "run": run, "files": files}


@pytest.fixture
def promoted(planted, tmp_path):
    """A corpus (in ``tmp_path``, never the repo's) holding the planted failure."""
    code = cli.main(["repro", str(planted["files"][0]), "--impl", REFERENCE, "--promote", "--corpus", str(tmp_path)])
    assert code == 0
    return tmp_path


def _valid_case():
    return EagleCase(
        accept_index=TensorArg(torch.tensor([[0, -1], [3, -1]], dtype=torch.int32), "transposed"),
        predict=TensorArg(torch.arange(6, dtype=torch.int32), "offset"),
        num_correct_drafts=TensorArg(torch.tensor([7, -2**31], dtype=torch.int32), "strided"),
        candidates=TensorArg(torch.tensor([[1, 2], [3, 2**40]], dtype=torch.int64)),
        target_predict=TensorArg(torch.tensor([[5, 6], [7, 8]], dtype=torch.int64)),
        bs=2, spec_steps=1, simulate_acc_len=1.5, simulate_acc_method="multinomial",
        simulate_acc_token_mode="real-draft-token", seed=2**64 - 1,
    )


def _document(case=None):
    prop = catalogue.find_property(PROPERTY)
    record = reprofile.Repro(prop, "eagle", REFERENCE, "cpu", "index[0, 1]=9, but should be 1", case or _valid_case())
    return json.loads(reprofile.dumps(record))


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


def test_a_failing_property_writes_one_repro_file_and_says_how_to_replay_it(planted):
    run, files = planted["run"], planted["files"]
    assert run.returncode == 1, run.stdout + run.stderr
    assert len(files) == 1
    name = files[0].name
    assert re.fullmatch(rf"{PROPERTY}-cpu-[0-9a-f]{{10}}-[0-9a-f]{{8}}\.json", name)
    assert f"simacc repro failures/{name} [--impl IMPL]" in run.stdout  # relative to where pytest ran
    assert "case: EagleCase(" in run.stdout
    doc = json.loads(files[0].read_text())
    assert (doc["schema"], doc["property"], doc["module"]) == (reprofile.SCHEMA, PROPERTY, "properties.test_index")
    assert (doc["contract"], doc["impl"], doc["device"]) == ("eagle", planted["impl"], "cpu")
    assert doc["message"].startswith("index[")


def test_replaying_against_the_buggy_implementation_exits_1_and_points_at_the_wrong_element(planted, capsys):
    assert cli.main(["repro", str(planted["files"][0])]) == 1
    out = capsys.readouterr().out
    named = re.search(r"FAIL: AssertionError: index\[(\d+), (\d+)\]=(-?\d+), but should be (-?\d+)", out)
    assert named, out
    row, col, got, expected = named.groups()
    assert f"returned[{row}, {col}]: expected {expected}, produced {got}" in out


def test_replaying_against_the_reference_exits_0(planted, capsys):
    assert cli.main(["repro", str(planted["files"][0]), "--impl", REFERENCE]) == 0
    assert f"pass: {PROPERTY} holds" in capsys.readouterr().out


def test_promoting_copies_the_case_into_the_corpus_once(planted, promoted, capsys):
    (path,) = promoted.glob("*.json")
    assert re.fullmatch(rf"{PROPERTY}-[0-9a-f]{{10}}\.json", path.name)
    _same_case(reprofile.load(path).case, reprofile.load(planted["files"][0]).case)
    assert cli.main(["repro", str(planted["files"][0]), "--promote", "--corpus", str(promoted)]) == 1
    assert "already in the regression corpus" in capsys.readouterr().out
    assert len(list(promoted.glob("*.json"))) == 1


def test_the_next_suite_run_replays_the_promoted_case_first(planted, promoted, tmp_path):
    run = _pytest(str(REPO / "properties" / "test_index.py"), str(REPO / "properties" / "test_regressions.py"),
                  "-v", "-k", "index_rows or regression", "--impl", planted["impl"],
                  "--repro-dir", str(tmp_path / "failures"), corpus=promoted, cwd=tmp_path)
    results = re.findall(r"properties/(\S+)::(\S+) (PASSED|FAILED|SKIPPED)", run.stdout)
    assert results[0][:2] == ("test_regressions.py", f"test_regression[cpu-{next(promoted.glob('*.json')).stem}]"), run.stdout
    assert results[0][2] == "FAILED"
    assert {p.name.split("-")[0] for p in (tmp_path / "failures").glob("*.json")} == {PROPERTY}


def test_against_the_reference_a_promoted_case_passes_and_a_broken_corpus_file_fails_with_its_reason(promoted, tmp_path):
    (promoted / "broken.json").write_text('{"schema": "simacc-repro/1"')
    run = _pytest(str(REPO / "properties" / "test_regressions.py"), "-rA", corpus=promoted, cwd=tmp_path)
    assert re.search(r"PASSED \S+::test_regression\[cpu-index_rows", run.stdout), run.stdout
    assert "broken.json: not valid JSON" in run.stdout and "1 failed, 1 passed" in run.stdout, run.stdout


def test_a_case_recorded_on_cuda_replays_on_cpu(tmp_path, capsys):
    doc = _document()
    doc["device"] = "cuda"
    path = tmp_path / "from-cuda.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["repro", str(path), "--device", "cpu"]) == 0
    assert "on cpu (recorded on cuda)" in capsys.readouterr().out
    if not torch.cuda.is_available():
        assert cli.main(["repro", str(path)]) == 0
        assert "no CUDA: torch.cuda.is_available() is False, so replaying on cpu" in capsys.readouterr().out
        assert cli.main(["repro", str(path), "--device", "cuda"]) == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message where CUDA is missing")
def test_a_cuda_parity_case_needs_cuda_to_replay(tmp_path, capsys):
    doc = _document()
    doc["property"], doc["module"] = "cuda_matches_cpu_byte_for_byte", "properties.test_parity"
    (tmp_path / "parity.json").write_text(json.dumps(doc))
    assert cli.main(["repro", str(tmp_path / "parity.json")]) == 2
    assert "compares CUDA with CPU, and CUDA is not available here" in capsys.readouterr().err


def test_a_repro_file_round_trips_every_tensor_dtype_layout_and_float():
    eagle = _valid_case()
    logits = torch.tensor([[0.5, float("inf")], [float("nan"), -1e-38]], dtype=torch.float32)
    dflash = DflashCase(
        candidates=TensorArg(torch.zeros((2, 1), dtype=torch.int32)), target_predict=None,
        accept_len=TensorArg(torch.zeros(2, dtype=torch.int32)), commit_lens=TensorArg(torch.zeros(2, dtype=torch.int32)),
        bonus=TensorArg(torch.tensor([2**62, -(2**63)])), out_tokens=TensorArg(torch.zeros((2, 1), dtype=torch.int64), "strided"),
        simulate_acc_len=float("nan"), simulate_acc_method="match-expected", simulate_acc_token_mode="real-draft-token",
        next_token_logits=TensorArg(logits, "transposed"), seed=0,
    )
    for case in (eagle, dflash):
        _same_case(reprofile.decode_case(json.loads(json.dumps(reprofile.encode_case(case)))), case)
    assert reprofile.parse(json.dumps(_document())).case.seed == 2**64 - 1


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
    doc["impl"] = "/ci/runner/work/kernels.py:generate"
    (tmp_path / "case.json").write_text(json.dumps(doc))
    assert cli.main(["repro", str(tmp_path / "case.json")]) == 2
    assert "pass --impl" in capsys.readouterr().err


def test_the_repos_corpus_files_are_valid_and_named_for_their_case():
    files = sorted(reprofile.corpus_dir().glob("*.json"))
    assert files, "the corpus starts with a few real cases"
    for path in files:
        record = reprofile.load(path)
        assert path.name == f"{record.property.id}-{record.digest()}.json"


def test_local_runs_keep_an_example_database_and_ci_prints_reproduction_blobs():
    from hypothesis import settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    local = settings.get_profile("default").database
    assert isinstance(local, DirectoryBasedExampleDatabase) and Path(local.path) == Path(".hypothesis/examples")
    ci = settings.get_profile("ci")
    assert ci.database is None and ci.print_blob and ci.derandomize
