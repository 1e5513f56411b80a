"""One convention for every command's errors: a usage error is one line from the subcommand it
concerns, ending ``try 'simacc <command> --help'``; a file error names the file; an IMPL that
fails for a reason with a known cure says the cure."""

import argparse
import subprocess
import sys

import pytest

from simacc import strategies as sx
from simacc.commands import cli
from simacc.harness.call import impl


def fails(capsys, *argv):
    """``simacc ARGV`` that must exit 2 before doing anything: its stderr."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv))
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize("argv, said", [
    (["check", "x:y", "--bogus"], "simacc check: error: unrecognized arguments: --bogus; try 'simacc check --help'"),
    (["check", "--device", "tpu"], "simacc check: error: argument --device: 'tpu' is not a device: expected cpu, "
                                   "cuda, cpu:N or cuda:N; try 'simacc check --help'"),
    (["check", "--junitxml"], "simacc check: error: argument --junitxml: expected one argument; "
                              "try 'simacc check --help'"),
    (["check", "-v", "-q"], "simacc check: error: argument -q/--quiet: not allowed with argument -v/--verbose; "
                            "try 'simacc check --help'"),
    (["mutants", "--seeds", "0"], "simacc mutants: error: argument --seeds: must be >= 1, got '0'; "
                                  "try 'simacc mutants --help'"),
    (["repro", "x.json", "--bogus"], "simacc repro: error: unrecognized arguments: --bogus; "
                                     "try 'simacc repro --help'"),
    (["chek"], "simacc: error: argument COMMAND: invalid choice: 'chek' (choose from 'check', 'repro', 'fuzz', "
               "'mutants', 'bench', 'engines', 'laws', 'observe'); try 'simacc --help'"),
])
def test_a_usage_error_is_one_line_from_its_own_subcommand_with_a_pointer_to_its_help(capsys, argv, said):
    assert fails(capsys, *argv) == said + "\n"


def test_a_bad_variable_is_one_line_with_the_pointer_too(capsys, monkeypatch):
    monkeypatch.setenv("SIMACC_TIMEOUT", "soon")
    assert cli.main(["check", "x:y"]) == 2
    assert capsys.readouterr().err == ("simacc check: error: SIMACC_TIMEOUT: must be a number of seconds, got 'soon'; "
                                       "try 'simacc check --help'\n")


@pytest.mark.parametrize("command", ["check", "fuzz", "repro"])
def test_an_unknown_contract_in_its_variable_is_one_line_naming_the_variable(capsys, monkeypatch, command):
    monkeypatch.setenv("SIMACC_CONTRACT", "medusa")
    assert cli.main([command, *{"repro": ["x.json"], "fuzz": ["x:y", "--minutes", "1"]}.get(command, ["x:y"])]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"simacc {command}: error: SIMACC_CONTRACT: unknown contract 'medusa'") and err.count("\n") == 1


@pytest.mark.parametrize("content, said", [
    ("x", "g.json: not JSON (Expecting value: line 1 column 1 (char 0))"),
    ("[]", "g.json is not a simacc mutants JSON file (schema simacc.mutants/1)"),
    (None, "g.json: No such file or directory"),
])
def test_bench_names_the_zoo_file_it_cannot_use(tmp_path, monkeypatch, capsys, content, said):
    monkeypatch.chdir(tmp_path)
    if content is not None:
        (tmp_path / "g.json").write_text(content)
    assert cli.main(["bench", "--zoo", "g.json"]) == 2
    assert capsys.readouterr().err == f"simacc bench: error: {said}\n"


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


def test_a_non_callable_is_named_with_its_article(isolated):
    (isolated / "m.py").write_text("generate = 3\nother = 'x'\n")
    with pytest.raises(impl.ImplError, match=r"'generate' is an int, not callable$"):
        impl.load("m.py:generate", sx.CONTRACTS)
    with pytest.raises(impl.ImplError, match=r"'other' is a str, not callable$"):
        impl.load("m.py:other", sx.CONTRACTS)


def test_a_file_inside_a_package_that_imports_relatively_is_told_the_dotted_form(isolated):
    package = isolated / "ports" / "mine"
    package.mkdir(parents=True)
    for folder in (isolated / "ports", package):
        (folder / "__init__.py").write_text("")
    (package / "helpers.py").write_text("import simacc\nREFERENCE = simacc.generate_simulated_accept_index\n")
    (package / "impl.py").write_text("from .helpers import REFERENCE as generate\n")
    with pytest.raises(impl.ImplError) as info:
        impl.load("ports/mine/impl.py:generate", sx.CONTRACTS)
    message = str(info.value)
    assert "\n" not in message and "attempted relative import" in message
    assert message.endswith("; impl.py lies in package 'ports': try IMPL 'ports.mine.impl:generate'")
    assert impl.load("ports.mine.impl:generate", sx.CONTRACTS).contract == "eagle"


def test_without_jax_the_hint_installs_the_extra_of_the_installed_package(monkeypatch):
    from simacc.contract import jaxbridge

    monkeypatch.setitem(sys.modules, "jax", None)  # importlib.util.find_spec("jax") is None
    assert jaxbridge.missing() == ("the functional contract needs jax, which is not installed (pip install "
                                   "'simacc[jax]', or in a checkout pip install -e '.[jax]')")


def test_a_command_imports_no_other_commands_module():
    """``simacc check`` parses with check's own parser: the other commands' modules are time
    before a check starts the process that imports torch."""
    script = ("import sys\nfrom simacc.commands import cli\ntry:\n    cli.main(['check', '--help'])\n"
              "except SystemExit:\n    pass\nprint(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.splitlines()[-1].split())
    assert cli.SUBCOMMANDS["check"] in loaded
    assert not {module for name, module in cli.SUBCOMMANDS.items() if name != "check"} & loaded


def test_a_ctrl_c_the_command_did_not_take_is_one_line_and_exit_130_as_a_program_and_theirs_in_a_caller(capsys):
    """Run as a program (no ``argv``), an interrupt ends the command with one line, not a
    traceback; called from someone else's code (``argv`` given), the interrupt is the caller's."""
    def interrupted(args):
        raise KeyboardInterrupt

    args = argparse.Namespace(command="laws", run=interrupted)
    try:
        code = cli._run(args, None)
    except KeyboardInterrupt:  # out of a test, it would end pytest's whole session
        pytest.fail("the interrupt left simacc as a traceback")
    assert code == 130
    assert capsys.readouterr() == ("", "simacc laws: interrupted\n")
    with pytest.raises(KeyboardInterrupt):
        cli._run(args, ["laws"])
