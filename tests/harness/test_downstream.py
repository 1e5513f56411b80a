"""simacc as another project uses it: a toy downstream repository in a temporary folder, with
its own implementation, its own ``tests/strategies.py``, a conftest that adds its own
``--device`` and ``--level`` options, ``device`` and ``impl`` fixtures and a Hypothesis profile
of its own, and its own ``@given`` test that checks all of these are still its own. The runs
are the README's command, in a process of their own with plugin autoloading on, as in a
project's CI (simacc found through its entry point), from the project's folder.

The last test installs simacc into a fresh virtual environment with the README's commands (a
wheel of this checkout: no package named simacc is published): it takes minutes, so it runs
with ``--simacc-run-slow``.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from simacc.harness.processes import forkserver

REPO = Path(__file__).resolve().parents[2]
EAGLE_ARGS = ("accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, "
              "simulate_acc_len, simulate_acc_method='match-expected', simulate_acc_token_mode='fixed'")
CALL = ("accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, "
        "simulate_acc_len, simulate_acc_method, simulate_acc_token_mode")
HOST = {
    "pyproject.toml": """\
        [tool.pytest.ini_options]
        testpaths = ["tests"]
        """,
    "my_pkg/__init__.py": '__version__ = "1.2.3"\n',
    "my_pkg/kernels.py": f"""\
        import simacc


        def generate({EAGLE_ARGS}):
            return simacc.generate_simulated_accept_index({CALL})


        def counts_the_bonus({EAGLE_ARGS}):
            out = generate({CALL})
            num_correct_drafts.add_(1)
            return out
        """,
    # as sglang's own module does (CONTRACT.md §11.6): a helper compiled at import
    "my_pkg/compiled.py": f"""\
        import torch

        import simacc


        @torch.compile(backend="eager", dynamic=True)
        def _counts(num_correct_drafts):
            return num_correct_drafts.clone()


        def generate({EAGLE_ARGS}):
            out = simacc.generate_simulated_accept_index({CALL})
            num_correct_drafts.copy_(_counts(num_correct_drafts))
            return out
        """,
    "tests/conftest.py": """\
        import pytest
        from hypothesis import settings

        settings.register_profile("host", max_examples=7, deadline=250)
        settings.load_profile("host")


        def pytest_addoption(parser):
            parser.addoption("--device", default="gpu-less")
            parser.addoption("--level", default="low")


        @pytest.fixture(scope="session")
        def device(request):
            return request.config.getoption("--device")


        @pytest.fixture(scope="session")
        def impl():
            return "the host's own impl"
        """,
    "tests/strategies.py": """\
        from hypothesis import strategies as st

        small_ints = st.integers(0, 9)
        """,
    "tests/test_host.py": """\
        import datetime
        import sys

        from hypothesis import given, settings
        from strategies import small_ints


        @given(x=small_ints)
        def test_the_host_keeps_its_options_fixtures_and_profile(x, device, impl, pytestconfig):
            assert (device, impl, pytestconfig.getoption("--level")) == ("gpu-less", "the host's own impl", "low")
            assert (settings().max_examples, settings().deadline) == (7, datetime.timedelta(milliseconds=250))
            torch = sys.modules.get("torch")  # simacc's properties import it; the host alone never does
            if torch is not None:  # torch's own thread count, in an xdist worker too: nothing of simacc's shares it
                from simacc.harness.call import process_state

                with process_state.own_threads():
                    own = torch.get_num_threads()
                assert torch.get_num_threads() == own
        """,
}
COMMAND = ("--pyargs", "simacc.properties", "tests")  # the README's, with the host's own tests
# A few properties of each kind keep these runs short (the whole catalogue runs in the slow test
# and in the suite itself): Hypothesis ones, a regression replay, one not applicable to eagle.
FEW = ("--simacc-property=index_*", "--simacc-property=num_correct_drafts_*", "--simacc-property=regression",
       "--simacc-property=dflash_counts_*", "--simacc-max-examples=10")
# The README's install of simacc, as the slow test runs it: a wheel of a checkout, then the wheel.
CHECKOUT = "path/to/simacc"
INSTALL = (f"pip wheel --no-deps -w wheels {CHECKOUT}", "pip install wheels/simacc-*.whl")


def from_an_index(line):
    """Whether a shell line's ``pip install`` asks a package index for simacc (``simacc``,
    ``'simacc[redis]'``), where nothing of that name is published; a path, a wheel or
    ``simacc @ URL`` is not asking."""
    for command in re.split(r"&&|;|\|", line.split("#")[0]):
        words = shlex.split(command.replace("- run:", "")) if "pip install" in command else []
        if words[:2] == ["pip", "install"]:
            if any(re.fullmatch(r"simacc(\[[\w,]*\])?", w) and words[i + 1:i + 2] != ["@"]
                   for i, w in enumerate(words)):
                return True
    return False


@pytest.fixture
def project(tmp_path):
    for name, text in HOST.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def pytest_run(project, *args, ci=False, python=sys.executable):
    """``pytest ARGS`` in ``project`` as its CI would run it: the console script of
    ``python``'s environment (unlike ``python -m pytest``, it does not put the project on
    ``sys.path``), autoloading on, none of this session's ``SIMACC_*`` or ``PYTEST_*``
    variables, ``CI`` set or not."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIMACC_", "PYTEST_")) and k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run([str(Path(python).parent / "pytest"), "-p", "no:cacheprovider", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)


HOST_STATE = """\
    import torch


    def test_sets_the_precision():
        torch.set_float32_matmul_precision("medium")


    def test_keeps_it():
        assert torch.get_float32_matmul_precision() == "medium"
    """


def test_the_command_checks_a_correct_compiled_implementation_and_the_hosts_tests_may_change_the_process_after(
        project):
    """One run, two claims: a correct implementation compiled at import passes beside the host's
    own tests; and the end-of-run check (§11.4, a thread a call started) spans simacc's tests
    only: a host's test that sets torch's matmul precision after them is neither failed nor
    undone."""
    (project / "tests" / "test_host_state.py").write_text(textwrap.dedent(HOST_STATE))
    done = pytest_run(project, *COMMAND, "--simacc-impl=my_pkg.compiled:generate", "--simacc-device=cpu", *FEW,
                      "--simacc-property=ranks_*", "-n", "0")  # one process that compiles (xdist: the next test)
    assert "changed the process outside its calls" not in done.stdout, done.stdout[-3000:]
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"simacc: implementation my_pkg.compiled:generate ({project / 'my_pkg' / 'compiled.py'}, version 1.2.3)" \
        in done.stdout
    assert "modified the harness" not in done.stdout
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary


def test_a_buggy_implementation_fails_in_junit_with_the_property_and_the_replay_command_and_its_case_is_promoted(
        project):
    """One run of a buggy implementation (CI, JUnit, xdist) and what a user does with its
    failure: the case promoted into the project is replayed by the next run."""
    done = pytest_run(project, *COMMAND, "--simacc-impl=my_pkg.kernels:counts_the_bonus", "--simacc-device=cpu",
                      *FEW, "--junitxml=report.xml", "-n", "2", ci=True)
    assert done.returncode == 1, done.stdout[-3000:]
    cases = ET.parse(project / "report.xml").getroot().iter("testcase")
    by_name = {(case.get("classname"), case.get("name")): case for case in cases}
    failed = by_name[("simacc.properties.test_index", "test_num_correct_drafts_is_length_minus_one[cpu]")]
    text = failed.find("failure").text
    assert "num_correct_drafts[0]=" in text and "replay it: simacc repro .simacc/failures/" in text and "--impl my_pkg.kernels:counts_the_bonus" in text, text
    assert by_name[("tests.test_host", "test_the_host_keeps_its_options_fixtures_and_profile")].find("failure") is None
    assert not [name for name, case in by_name.items() if case.find("skipped") is not None]  # not applicable: deselected
    assert not (project / "simacc-regressions").exists()

    (found,) = (project / ".simacc" / "failures").glob("num_correct_drafts_is_length_minus_one-*.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMACC_")}
    # a new interpreter's copy, forked from the suite's session server (tests/conftest.py): no import of torch
    promote = subprocess.run(forkserver.command(["-m", "simacc", "repro", str(found), "--impl",
                                                 "my_pkg.kernels:counts_the_bonus", "--promote"]), cwd=project, env=env,
                             capture_output=True, text=True, timeout=300)
    assert promote.returncode == 1, promote.stdout + promote.stderr  # it still fails against counts_the_bonus
    (promoted,) = (project / "simacc-regressions").glob("*.json")
    assert json.loads(promoted.read_text())["impl"] == "simacc:generate_simulated_accept_index"
    again = pytest_run(project, "--pyargs", "simacc.properties", "--simacc-impl=my_pkg.kernels:counts_the_bonus",
                       "--simacc-device=cpu", "--simacc-property=regression", "-n", "0", "-v")
    assert f"test_regression[{promoted.stem}-cpu] FAILED" in again.stdout, again.stdout[-3000:]


def test_without_an_implementation_the_run_is_a_usage_error_and_the_host_alone_is_untouched(project):
    """Neither run imports torch: the error comes before anything is collected, and a session
    that does not name simacc's properties pays nothing for simacc."""
    (project / "conftest.py").write_text("import sys\n\n\ndef pytest_unconfigure(config):\n"
                                         "    print('torch imported:', 'torch' in sys.modules, file=sys.stderr)\n")
    done = pytest_run(project, *COMMAND)
    assert done.returncode == 4 and "no implementation selected: pass --simacc-impl" in done.stderr, done.stderr
    alone = pytest_run(project, ci=True)  # Hypothesis loads its own ci profile: the host's conftest overrides it
    assert alone.returncode == 0 and "simacc:" not in alone.stdout, alone.stdout  # no header of its own
    assert "torch imported: False" in done.stderr and "torch imported: False" in alone.stderr, done.stderr + alone.stderr


def commands(folder):
    """The lines of the docs' commands (indented code and CI ``run:`` steps) in ``folder``."""
    pages = [folder / "README.md", *sorted((folder / "docs").glob("*.md"))]
    return [line for page in pages for line in page.read_text(encoding="utf-8").splitlines()
            if line.startswith("    ") or "- run:" in line]


def test_importing_the_plugin_and_each_of_its_parts_imports_no_torch():
    """What the README promises: a session that collects none of simacc's properties pays nothing
    for simacc (torch is seconds of import); the entry module names its parts."""
    code = ("import importlib, sys; import simacc.harness.plugin as plugin; "
            "[importlib.import_module(name) for name in plugin.pytest_plugins]; "
            "print(len(plugin.pytest_plugins), sorted(m for m in sys.modules if m.partition('.')[0] == 'torch'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    parts, torch = done.stdout.split(" ", 1)
    assert int(parts) > 0 and torch.strip() == "[]", done.stdout


def test_the_docs_install_simacc_as_the_slow_test_does_never_from_a_package_index():
    lines = commands(REPO)
    assert all(any(line.strip().startswith(step) for line in lines) for step in INSTALL), INSTALL
    assert not [line for line in lines if from_an_index(line)]
    assert from_an_index("      - run: pip install simacc -e .")  # what the README once said
    assert from_an_index("pip install torch==2.13.0 'simacc[redis]' -e .   # simacc, and your port")
    assert not from_an_index("pip install 'simacc @ git+https://host/simacc.git@1234abc' && simacc check x:y")


@pytest.mark.slow
def test_from_a_built_wheel_simacc_installs_one_package_and_checks_the_project(project, tmp_path_factory):
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    torch = __import__("torch").__version__.split("+")[0]  # the CPU build this machine has
    subprocess.run([python, "-m", "pip", "install", "-q", f"torch=={torch}"], check=True)
    for step in INSTALL:  # the README's lines, in the project, with this checkout and the new environment's pip
        line = step.replace(CHECKOUT, str(REPO)).replace("pip ", f"{python} -m pip ", 1)
        subprocess.run(["bash", "-c", f"{line} -q"], cwd=project, check=True)
    (wheel,) = (project / "wheels").glob("simacc-*.whl")
    files = subprocess.run([python, "-m", "pip", "show", "-f", "simacc"], capture_output=True, text=True, check=True)
    listed = [line.strip() for line in files.stdout.split("Files:")[1].splitlines() if line.strip()]
    tops = {line.split("/")[0] for line in listed if not line.startswith("..")}
    assert tops == {"simacc", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    good = pytest_run(project, *COMMAND, "--simacc-impl=my_pkg.kernels:generate", "--simacc-device=cpu", "-n", "2",
                      python=python)
    assert good.returncode == 0, good.stdout[-3000:]
    bad = pytest_run(project, *COMMAND, "--simacc-impl=my_pkg.kernels:counts_the_bonus", "--simacc-device=cpu",
                     python=python, ci=True)
    assert bad.returncode == 1 and "num_correct_drafts_is_length_minus_one" in bad.stdout, bad.stdout[-3000:]
