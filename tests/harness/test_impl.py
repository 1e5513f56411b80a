"""Loading the implementation under test from an ``IMPL`` string, inferring its contract
from the signature, and calling it in that signature's style."""

import dataclasses
import inspect
import os
import sys
import textwrap
from importlib import metadata

import pytest

from simacc.harness.call import impl
from simacc.harness.config import contracts

EAGLE = ", ".join(contracts.EAGLE_PARAMS)
REFERENCES = {name: c.reference for name, c in contracts.CONTRACTS.items()}


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """Run in ``tmp_path`` with ``sys.path`` restored afterwards (loading appends folders)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


def write(folder, name, source):
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def assert_one_line_error(spec, *fragments, contract=None):
    with pytest.raises(impl.ImplError) as info:
        impl.load(spec, contract)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    return message


@pytest.mark.parametrize("contract", contracts.NAMES)
def test_each_reference_is_inferred_as_its_own_contract(contract):
    loaded = impl.load(REFERENCES[contract])
    assert loaded.contract == contract and loaded.is_reference
    assert loaded.version and loaded.source.endswith(".py")


@pytest.mark.parametrize("third", contracts.LEGACY_THIRD)
def test_each_legacy_name_of_the_third_parameter_is_inferred_as_legacy(third):
    def fn(*args):
        pass

    names = ("accept_index", "predict", third, "bs", "spec_steps", "simulate_acc_len", "simulate_acc_method")
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    assert impl.infer_style(fn) == ("legacy", "legacy")


def test_the_oldest_order_with_the_length_before_bs_is_called_in_that_order():
    seen = []

    def oldest(accept_index, predict, accept_length, simulate_acc_len, bs, spec_steps):
        seen.append((accept_index, predict, accept_length, simulate_acc_len, bs, spec_steps))

    loaded = impl.Implementation("x:oldest", oldest, *impl.infer_style(oldest))
    assert loaded.style == "oldest"
    loaded.call({"accept_index": "a", "predict": "p", "num_correct_drafts": "n", "bs": 2, "spec_steps": 3,
                 "simulate_acc_len": 1.5, "simulate_acc_method": "multinomial"})
    assert seen == [("a", "p", "n", 1.5, 2, 3)]


def test_an_eagle_signature_under_other_names_is_called_positionally_when_the_contract_is_forced():
    seen = []

    def positional(a, b, c, d, e, f, g, h, i, j, /):
        seen.append((a, b, c, d, e, f, g, h, i, j))

    with pytest.raises(impl.ImplError, match="fits no contract"):
        impl.infer_style(positional)
    contract, style = impl.infer_style(positional, "eagle")
    assert (contract, style) == ("eagle", "positional")
    impl.Implementation("x:positional", positional, contract, style).call({name: name for name in contracts.EAGLE_PARAMS})
    assert seen == [contracts.EAGLE_PARAMS]


def test_a_keyword_call_passes_every_eagle_argument_by_name():
    def keywords(*, simulate_acc_token_mode, simulate_acc_method, simulate_acc_len, spec_steps, bs,
                 target_predict, candidates, num_correct_drafts, predict, accept_index):
        return simulate_acc_token_mode, accept_index

    loaded = impl.Implementation("x:keywords", keywords, *impl.infer_style(keywords))
    assert loaded.style == "keywords"
    assert loaded.call({name: name for name in contracts.EAGLE_PARAMS}) == ("simulate_acc_token_mode", "accept_index")


def test_a_forced_contract_that_the_signature_does_not_fit_is_an_error():
    with pytest.raises(impl.ImplError, match="does not fit contract 'dflash'"):
        impl.load(REFERENCES["eagle"], "dflash")


def test_an_unknown_contract_is_an_error():
    assert_one_line_error(REFERENCES["eagle"], "unknown contract 'medusa'", contract="medusa")


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("simacc.generate_simulated_accept_index", "must be 'package.module:attribute'"),
        ("simacc:", "empty module or attribute"),
        (":generate_simulated_accept_index", "empty module or attribute"),
        ("simacc_no_such_module:fn", "module 'simacc_no_such_module' not found"),
        ("simacc.no_such_sub:fn", "module 'simacc.no_such_sub' not found"),
        ("simacc:no_such_function", "simacc has no attribute 'no_such_function'"),
        ("simacc:__version__", "'__version__' is a str, not callable"),
        ("simacc:sample_simulated_acc_len", "fits no contract; pass --contract"),
        ("no/such/file.py:fn", "no such file no/such/file.py"),
    ],
)
def test_a_bad_impl_is_a_one_line_error_that_says_which(spec, fragment):
    assert_one_line_error(spec, f"IMPL {spec!r}", fragment)


def test_a_file_that_raises_on_import_is_a_one_line_error(isolated):
    write(isolated, "broken.py", """\
        raise RuntimeError("first line\\nsecond line")
    """)
    assert_one_line_error("broken.py:fn", "importing broken.py raised RuntimeError: first line second line")
    assert not [m for m in sys.modules.values() if str(getattr(m, "__file__", "")).endswith("broken.py")]


def test_a_file_that_exits_on_import_is_an_error_not_an_exit(isolated):
    write(isolated, "exits.py", "import sys\nsys.exit(3)\n")
    assert_one_line_error("exits.py:fn", "raised SystemExit: 3")


def test_a_file_with_a_syntax_error_is_a_one_line_error(isolated):
    write(isolated, "syntax.py", "def fn(:\n")
    assert_one_line_error("syntax.py:fn", "raised SyntaxError")


def test_a_missing_dependency_is_told_apart_from_a_missing_module(isolated):
    write(isolated, "simacc_selftest_needs_dep.py", "import simacc_selftest_missing_dependency\n")
    assert_one_line_error(
        "simacc_selftest_needs_dep:fn",
        "importing simacc_selftest_needs_dep raised ModuleNotFoundError: No module named 'simacc_selftest_missing_dependency'",
    )


def test_a_file_outside_any_package_loads_and_can_import_the_modules_beside_it(isolated):
    folder = isolated / "kernels"
    folder.mkdir()
    write(folder, "simacc_selftest_helper.py", "import simacc\nforward = simacc.generate_simulated_accept_index\n")
    write(folder, "wrapper.py", f"""\
        import simacc_selftest_helper
        __version__ = "9.9"

        def generate({EAGLE}):
            return simacc_selftest_helper.forward({EAGLE})
    """)
    loaded = impl.load("kernels/wrapper.py:generate")
    assert (loaded.contract, loaded.style, loaded.version) == ("eagle", "keywords", "9.9")
    assert loaded.source == str((folder / "wrapper.py").resolve())


def test_a_module_in_the_current_folder_loads_by_module_name(isolated):
    write(isolated, "simacc_selftest_local.py", f"class Kernels:\n    @staticmethod\n    def run({EAGLE}):\n        pass\n")
    loaded = impl.load("simacc_selftest_local:Kernels.run")
    assert loaded.contract == "eagle"


def test_the_version_is_the_modules_own_else_its_packages_else_its_installed_distributions(isolated):
    """One rule, read without running any code: the header prints it before anything is imported."""
    (isolated / "simacc_selftest_versioned").mkdir()
    write(isolated, "simacc_selftest_versioned/__init__.py", '__version__ = "2.0"\n')
    write(isolated, "simacc_selftest_versioned/own.py", '__version__ = "2.1"\n')
    write(isolated, "simacc_selftest_versioned/plain.py", "")
    assert impl.locate("simacc_selftest_versioned.own:f") == (str(isolated / "simacc_selftest_versioned/own.py"), "2.1")
    assert impl.locate("simacc_selftest_versioned.plain:f")[1] == "2.0"
    assert "simacc_selftest_versioned" not in sys.modules
    # hypothesis imports its __version__ from a module of its own: no literal, so its distribution's
    assert impl.locate("hypothesis.strategies:integers")[1] == metadata.version("hypothesis")
    assert impl.locate("simacc_selftest_missing.module:f") == ("module simacc_selftest_missing.module, not found", "")


@pytest.mark.parametrize(("contract", "seen"), [
    (None, "3 match-expected fixed"),  # before its signature says which: sglang's, as any server but vLLM's sets them
    ("eagle", "3 match-expected fixed"),
    ("vllm_v1", "- - -"),  # vLLM's knobs are its config's
])
def test_the_import_runs_in_the_environment_of_the_server_that_imports_it(isolated, monkeypatch, contract, seen):
    """A module that reads sglang's simulation settings at import sees them set as a server
    that simulates acceptance sets them (CONTRACT.md §5.4), and they are put back after."""
    for name in contracts.SGLANG_SIMULATION:
        monkeypatch.delenv(name, raising=False)
    write(isolated, "reads_env.py", f"""\
        import os
        SEEN = " ".join(os.environ.get(name, "-") for name in {contracts.SGLANG_SIMULATION!r})

        def synthetic_rejection_sample(draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                                       generators, synthetic_conditional_rates):
            pass

        def generate({EAGLE}):
            pass
    """)
    target = "synthetic_rejection_sample" if contract == "vllm_v1" else "generate"
    loaded = impl.load(f"reads_env.py:{target}", contract)
    assert sys.modules[loaded.fn.__module__].SEEN == seen
    assert not {name for name in contracts.SGLANG_SIMULATION if name in os.environ}


def test_each_call_runs_in_the_environment_its_server_gives_it(isolated, monkeypatch):
    """As a server passes what its variables say, each call sees them as its own arguments are
    (an omitted one: the default), and they are put back after (CONTRACT.md §5.4)."""
    from simacc.harness.call.runner import Runner
    from simacc.properties import support

    for name in contracts.SGLANG_SIMULATION:
        monkeypatch.delenv(name, raising=False)
    write(isolated, "reads_env_at_calls.py", f"""\
        import os
        SEEN = []

        def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                     simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
            SEEN.append(" ".join(os.environ.get(name, "-") for name in {contracts.SGLANG_SIMULATION!r}))
    """)
    loaded = impl.load("reads_env_at_calls.py:generate", "eagle")
    case = support.small_case(2.5, "multinomial", 0)
    with Runner(loaded, "cpu") as runner:
        runner.attempt(case)
        runner.attempt(dataclasses.replace(case, simulate_acc_method="match-expected", omitted=("simulate_acc_method",)))
    assert sys.modules[loaded.fn.__module__].SEEN[0].startswith("2.5 multinomial ")
    assert sys.modules[loaded.fn.__module__].SEEN[1].startswith("2.5 match-expected ")
    assert not {name for name in contracts.SGLANG_SIMULATION if name in os.environ}
