"""``simacc engines``: a row whose code is not here, not in that version or not importable says
why and runs nothing; a row given an IMPL is checked and its verdict is the check's; what
changed between two versions is read from their files before anything runs; the table is
written where asked, and docs/engines.md has the command's columns and rows."""

import zipfile
from pathlib import Path

import pytest

from simacc.commands import cli
from simacc.commands.serving import engine_api, engines, wheels
from simacc.contract.vllm_glue import Call

PAGE = Path(__file__).resolve().parents[2] / "docs" / "engines.md"


def run(capsys, *argv):
    code = cli.main(["engines", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def rows_of(out):
    return [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| row |")]


def test_a_row_without_its_code_says_why_and_nothing_checked_exits_5(capsys, monkeypatch):
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: None)  # no engine installed here
    code, out, _ = run(capsys, "--only", "vllm-v2-sampler", "--only", "sglang-jax")
    assert code == 5
    rows = rows_of(out)
    assert rows[0].startswith("| sglang-jax | sglang-jax | not found | functional | - | not run: no IMPL known: ")
    assert rows[1].startswith("| vllm-v2-sampler | vLLM | not found | V2 sampler (§17) | - | not run: not importable "
                              "here: no module 'vllm'") and rows[1].endswith("|  |")


@pytest.mark.parametrize("spec, code, verdict", [
    ("simacc:resolve_synthetic_rates", 0, "conformant (8 properties pass)"),
    ("simacc.zoo.vllm:rates_cut_to_k", 1, "NOT CONFORMANT (1 failed): vllm_rates_of_another_count_than_k_are_rejected"),
])
def test_a_row_given_an_impl_gets_the_checks_verdict_and_the_table_is_written(capsys, tmp_path, spec, code, verdict):
    shown, out, _ = run(capsys, "--only", "vllm-settings", "--impl", f"vllm-settings={spec}", "--output",
                        str(tmp_path / "engines.md"))
    row = rows_of(out)[0]
    assert shown == code and f"| settings (§13) | exact | {verdict}" in row, row
    written = (tmp_path / "engines.md").read_text()
    assert written.startswith("# Engines\n") and row in written and "simacc engines --only vllm-settings --impl " in written


@pytest.mark.parametrize("argv, said", [
    (["--only", "vllm-v3"], "unknown row vllm-v3; the rows are sglang-eager, "),
    (["--version", "vllm"], "--version 'vllm' is not NAME==VERSION"),
    (["--version", "vllm>=0.33"], "--version 'vllm>=0.33' is not NAME==VERSION"),
    (["--version", "torch==2.13.0"], "--version torch==2.13.0: no engine distributes 'torch'; the engines are sglang, "),
    (["--python", "vllm=/no/such/python"], "--python vllm=/no/such/python: /no/such/python is not an interpreter"),
    (["--python", "vllm"], "--python 'vllm' is not NAME=PATH"),
])
def test_bad_options_are_a_usage_error_that_names_them(capsys, argv, said):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and said in err, err


def test_a_row_whose_code_does_not_import_says_the_checks_one_line(capsys):
    code, out, _ = run(capsys, "--only", "vllm-settings", "--impl", "vllm-settings=no_such_module:resolve")
    assert code == 5 and "| not run: IMPL 'no_such_module:resolve': module 'no_such_module' not found |" in out


def test_what_a_distribution_declares_and_this_machine_lacks_is_counted(monkeypatch):
    installed = engines.importlib.metadata.distribution
    monkeypatch.setattr(engines.importlib.metadata, "distribution",
                        lambda name: FakeDistribution() if name == "sglang" else installed(name))
    assert engines._missing("sglang", engines.Source("sglang")) == \
        "; sglang declares 2 requirements, 1 not installed here (no-such-package)"


class FakeDistribution:
    requires = ["torch==2.14.1", "no-such-package>=1", "pytest; extra == 'test'"]


# -- versions: wheels read from their files -------------------------------------------------------------


def wheel(folder, version, files):
    """A wheel of a made-up ``vllm`` release holding ``files`` ({relative path: text})."""
    folder.mkdir(exist_ok=True)
    with zipfile.ZipFile(folder / f"vllm-{version}-py3-none-any.whl", "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)


DOES_NOT_IMPORT = "import no_such_dependency_of_vllm\n"
V1 = {"vllm/__init__.py": "", "vllm/v1/__init__.py": "", "vllm/v1/sample/__init__.py": "",
      "vllm/v1/sample/rejection_sampler.py": DOES_NOT_IMPORT + "def _rejection_greedy_sample(out, cu):\n    pass\n\n\n"
                                             "def _rejection_random_sample(out, cu):\n    pass\n"}


def test_a_layout_a_later_version_removed_is_said_before_anything_runs_and_its_row_says_so(capsys, tmp_path):
    wheel(tmp_path, "0.1.0", V1)
    wheel(tmp_path, "0.2.0", {"vllm/__init__.py": ""})
    code, out, err = run(capsys, "--version", "vllm==0.1.0", "--version", "vllm==0.2.0", "--wheel-dir", str(tmp_path),
                         "--only", "vllm-v1-decision", "--output", str(tmp_path / "engines.md"))
    assert code == 5, out + err
    assert err.startswith("What changed between versions (read from their files, nothing imported):\n"
                          "- **vLLM 0.1.0 → 0.2.0**\n  - V1 decision (§16.1; vLLM 0.33 and earlier): layout gone: "
                          "no `_rejection_greedy_sample` (looked in `vllm.v1.sample.rejection_sampler`); ")
    old, new = rows_of(out)
    assert old.startswith("| vllm-v1-decision | vLLM | 0.1.0 | ") and "| - | not run: vLLM's code does not import " \
        "here: ModuleNotFoundError: No module named 'no_such_dependency_of_vllm' |" in old
    assert new.startswith("| vllm-v1-decision | vLLM | 0.2.0 | ") and "| - | not in vLLM 0.2.0: no " \
        "`_rejection_greedy_sample` (looked in `vllm.v1.sample.rejection_sampler`); " in new and new.endswith("|  |")
    assert "\n## What changed between versions\n" in (tmp_path / "engines.md").read_text()


def test_a_version_whose_wheel_cannot_be_had_is_a_row_that_says_why(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(wheels, "download", lambda name, version, folder: "ERROR: No matching distribution found "
                        f"for {name}=={version}")
    code, out, err = run(capsys, "--version", "vllm==9.9.9", "--wheel-dir", str(tmp_path), "--only", "vllm-settings")
    assert code == 5 and "Traceback" not in err
    assert rows_of(out) == ["| vllm-settings | vLLM | 9.9.9 | settings (§13) | - | not run: no wheel of vllm==9.9.9: "
                            "ERROR: No matching distribution found for vllm==9.9.9 |  |"]


def test_pip_that_finds_no_wheel_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no network in CI: pip looks in an empty folder only
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    assert wheels.unpacked("vllm", "9.9.9", tmp_path / "wheels") == (
        None, "no wheel of vllm==9.9.9: ERROR: No matching distribution found for vllm==9.9.9")


def test_a_wheel_that_does_not_unpack_leaves_nothing_half_written(tmp_path):
    (tmp_path / "vllm-0.1.0-py3-none-any.whl").write_bytes(b"not a zip")
    folder, why = wheels.unpacked("vllm", "0.1.0", tmp_path)
    assert folder is None and why.startswith("vllm-0.1.0-py3-none-any.whl does not unpack: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vllm-0.1.0-py3-none-any.whl"]


# -- engine_api: the reader and the differences ---------------------------------------------------------


def version(folder, files):
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


CALLS = (Call("f", ("pkg.a", "pkg.b")), Call("C.m", ("pkg.a",)), Call("g", ("pkg.gone",)),
         Call("h", ("pkg.a",), optional="the glue does without it"))


def test_the_reader_finds_a_moved_function_a_changed_signature_and_a_module_gone(tmp_path):
    old = version(tmp_path / "old", {"pkg/__init__.py": "from pkg.a import f\n",
                                     "pkg/a.py": "def f(x, y=1):\n    pass\n\n\nclass C:\n    def m(self, a):\n        pass\n",
                                     "pkg/gone.py": "def g():\n    pass\n"})
    new = version(tmp_path / "new", {"pkg/a.py": "class C:\n    def m(self, a, *, b=None):\n        pass\n\n\n"
                                                 "def h():\n    pass\n",
                                     "pkg/b.py": "def f(x, z, y=2, **extra):\n    pass\n"})
    before = [engine_api.find(old, c) for c in CALLS]
    after = [engine_api.find(new, c) for c in CALLS]
    assert before[0] == engine_api.Found("f", "pkg.a", ("x", "y=1"))
    assert after[2] == engine_api.Found("g", None) and before[3] == engine_api.Found("h", None)
    assert engine_api.find(old, Call("f", ("pkg",))) == engine_api.Found("f", "pkg")  # re-exported: not read
    assert engine_api.changes(CALLS, before, after) == [
        "`f` moved from `pkg.a` to `pkg.b`",
        "`f`: added z, **extra; y=1 -> y=2",
        "`C.m`: added *, b=None",
        "`g` gone (was in `pkg.gone`)",
        "`h` new in `pkg.a`",
    ]
    assert engine_api.missing(CALLS, before) is None  # h is optional
    assert engine_api.missing(CALLS, after) == "no `g` (looked in `pkg.gone`)"


def test_a_renamed_parameter_is_said_as_one(tmp_path):
    calls = (Call("sample", ("s",)),)
    old = version(tmp_path / "old", {"s.py": "def sample(logits, draft_logits, drafts, k=1):\n    pass\n"})
    new = version(tmp_path / "new", {"s.py": "def sample(logits, draft_logits_cache, drafts, k=1, skip=False):\n"
                                             "    pass\n"})
    assert engine_api.changes(calls, [engine_api.find(old, calls[0])], [engine_api.find(new, calls[0])]) == [
        "`sample`: parameter 2 renamed draft_logits -> draft_logits_cache; added skip=False"]


def test_a_version_whose_runner_cuts_the_refused_drafts_is_checked_with_refused_drafts_runner(tmp_path):
    """CONTRACT.md §15.4: vLLM 0.33's V2 runner (``grammar_invalid_drafts``) and V1's scheduler
    (``StructuredOutputManager.validate_tokens``) cut them; 0.34 has neither."""
    v1, v2 = (next(r for r in engines.ROWS if r.id == f"vllm-{name}-sampler") for name in ("v1", "v2"))
    cut = version(tmp_path / "cut", {
        "vllm/v1/worker/gpu/structured_outputs.py": "def grammar_invalid_drafts(batch, ids, acceptable):\n    pass\n",
        "vllm/v1/structured_output/__init__.py": "class StructuredOutputManager:\n"
                                                 "    def validate_tokens(self, request, tokens):\n        pass\n"})
    kept = version(tmp_path / "kept", {"vllm/v1/structured_output/__init__.py": "class StructuredOutputManager:\n"
                                       "    def trim_spec_tokens(self, request, tokens):\n        pass\n"})
    for row in (v1, v2):
        assert engines.refused_drafts(row, [engine_api.find(cut, c) for c in row.calls()]) == "runner"
        assert engines.refused_drafts(row, [engine_api.find(kept, c) for c in row.calls()]) == "sampler"
    assert engines.refused_drafts(v2, None) == "sampler"  # nothing read: the contract's default


# -- docs/engines.md ----------------------------------------------------------------------------------------


def test_the_page_has_the_commands_columns_and_a_row_for_each_of_its_rows():
    lines = PAGE.read_text().splitlines()
    assert lines[0] == "# Engines" and any(line.startswith("    simacc engines ") for line in lines[:6])
    header = next(line for line in lines if line.startswith("| row |"))
    assert header == engines.table([]).splitlines()[0]
    rows = rows_of("\n".join(lines))
    cells = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in rows]
    assert all(len(c) == len(engines.COLUMNS) for c in cells), [c for c in cells if len(c) != len(engines.COLUMNS)]
    assert {c[0] for c in cells} == {row.id for row in engines.ROWS}
    engine_of = {row.id: row.engine for row in engines.ROWS}
    layout_of = {row.id: row.layout for row in engines.ROWS}
    assert all(c[1] == engine_of[c[0]] and c[3] == layout_of[c[0]] for c in cells)
