"""``simacc engines``: a row whose code is not here says why and runs nothing; a row given an
IMPL is checked and its verdict is the check's; the table is written where asked."""

import pytest

from simacc.commands import cli, engines


def run(capsys, *argv):
    code = cli.main(["engines", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_row_without_its_code_says_why_and_nothing_checked_exits_5(capsys, monkeypatch):
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: None)  # no engine installed here
    code, out, _ = run(capsys, "--only", "vllm-v2-sampler", "--only", "sglang-jax")
    assert code == 5
    rows = out.splitlines()[2:]
    assert rows[0].startswith("| sglang-jax | not found | functional | - | not run: no IMPL known: ")
    assert rows[1].startswith("| vLLM | not found | V2 sampler (§17) | - | not run: not importable here: no module "
                              "'vllm'") and rows[1].endswith("|  |")


@pytest.mark.parametrize("spec, code, verdict", [
    ("simacc:resolve_synthetic_rates", 0, "conformant (8 properties pass)"),
    ("simacc.zoo.vllm:rates_cut_to_k", 1, "NOT CONFORMANT (1 failed): vllm_rates_of_another_count_than_k_are_rejected"),
])
def test_a_row_given_an_impl_gets_the_checks_verdict_and_the_table_is_written(capsys, tmp_path, spec, code, verdict):
    shown, out, _ = run(capsys, "--only", "vllm-settings", "--impl", f"vllm-settings={spec}", "--output",
                        str(tmp_path / "engines.md"))
    row = out.splitlines()[2]
    assert shown == code and f"| settings (§13) | exact | {verdict}" in row, row
    written = (tmp_path / "engines.md").read_text()
    assert written.startswith("# Engines\n") and row in written and "simacc engines --max-examples 5" in written


def test_an_unknown_row_is_a_usage_error(capsys):
    code, _, err = run(capsys, "--only", "vllm-v3")
    assert code == 2 and "unknown row vllm-v3; the rows are sglang-eager, " in err


def test_a_row_whose_code_does_not_import_says_the_checks_one_line(capsys):
    code, out, _ = run(capsys, "--only", "vllm-settings", "--impl", "vllm-settings=no_such_module:resolve")
    assert code == 5 and "| not run: IMPL 'no_such_module:resolve': module 'no_such_module' not found |" in out


def test_what_a_distribution_declares_and_this_machine_lacks_is_counted(monkeypatch):
    monkeypatch.setattr(engines.importlib.metadata, "requires",
                        lambda name: ["torch==2.14.1", "no-such-package>=1", "pytest; extra == 'test'"])
    assert engines._missing("sglang") == "; sglang declares 2 requirements, 1 not installed here (no-such-package)"
