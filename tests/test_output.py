"""What ``simacc check`` prints, and the controls a pytest user reaches for: the default output
in pytest's manner (header, progress, failures, grouped reasons, one summary line), ``-v``,
``-q``, colour, ``-x``, ``--list`` and ``--property`` patterns with "did you mean".

The checks run as in ``test_check.py``: in ``tmp_path``, a few properties, a few examples,
``-n 0``, a fixed seed.
"""

import io
import re
import sys

import pytest
import torch
from test_check import COUNT, FIXED, INDEX, OFF_BY_ONE, REAL, REFERENCE, impl_file, no_cuda, rows, run, summary
from test_check import workdir  # noqa: F401 - a fixture

from simacc.commands import check, progress, terminal, verdict
from simacc.harness import catalogue
from simacc.harness.status import Status

PASSING = (INDEX, COUNT, FIXED, REAL)


def test_a_passing_check_prints_the_header_and_one_summary_line_and_on_a_log_a_line_per_property(workdir, capsys):
    code, out, err = run(capsys, REFERENCE, properties=("regression", *PASSING), verbose=False)
    lines = out.rstrip("\n").splitlines()
    assert code == 0 and lines[0] == f"simacc check {REFERENCE}" and len(lines) <= 20
    assert not any(line.startswith("property ") for line in lines)  # no table
    assert re.fullmatch(r"CONFORMANT: 5 pass, 1 not applicable in \d+\.\d s \(exit 0\)", lines[-1])  # DFLASH's cases
    # the corpus has three eagle cases: one property, three tests, one line
    shown = [line.split(": ")[0] for line in err.splitlines()]
    assert shown == [f"[{i}/5] {pid}" for i, pid in enumerate(["regression", FIXED, INDEX, COUNT, REAL], 1)], err
    assert err.startswith("[1/5] regression: pass (0.")


def test_verbose_prints_the_table_with_the_failures_first_and_a_progress_line_per_test(workdir, capsys):
    code, out, err = run(capsys, impl_file(workdir, OFF_BY_ONE), properties=(INDEX, COUNT))
    assert code == 1 and list(rows(out)) == [COUNT, INDEX]
    assert len(err.splitlines()) == 2 and f"{INDEX}[cpu]: pass" in err


def test_quiet_prints_the_failures_and_the_summary_only(workdir, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    code, out, _ = run(capsys, impl_file(workdir, OFF_BY_ONE), "-q", properties=(INDEX, COUNT), verbose=False)
    blocks = out.rstrip("\n").split("\n\n")
    assert code == 1 and sys.stderr.getvalue() == ""
    assert blocks[0].startswith(f"FAIL {COUNT}\n  num_correct_drafts[0]=") and "  replay: " in blocks[0]
    assert len(blocks) == 2 and summary(blocks[1]) == "NOT CONFORMANT: 1 pass, 1 FAIL (exit 1)"


def test_a_failure_says_l_w_the_mode_and_the_values_and_a_repeated_case_is_printed_once(workdir, capsys):
    code, out, _ = run(capsys, impl_file(workdir, OFF_BY_ONE), properties=(COUNT, "length_matches_the_documented_draw"),
                       verbose=False)
    assert code == 1
    first, second = [block for block in out.split("\n\n") if block.startswith("FAIL ")]
    assert "[L=1, W=1, bs=1, mode fixed]" in first and "\n  got      [1]\n  expected [0]\n" in first
    assert "\n  case=EagleCase(\n      accept_index=tensor([[0]], dtype=int32),\n" in first
    assert "\n  case=(the same case as above)\n" in second


@no_cuda
def test_cuda_without_cuda_is_one_grouped_line_not_a_row_per_property(workdir, capsys):
    code, out, _ = run(capsys, REFERENCE, "--device", "cuda", properties=(INDEX, COUNT), verbose=False)
    assert code == 5
    assert f"skipped (2): no CUDA: torch.cuda.is_available() is False ({INDEX}, {COUNT})" in out.splitlines()
    assert summary(out).startswith("NOTHING CHECKED: every property was skipped: no CUDA")


def test_without_jax_the_functional_properties_are_not_applicable_to_an_eagle_implementation(workdir, capsys,
                                                                                             monkeypatch):
    # the child session sees jax as missing (importlib.util.find_spec("jax") is None)
    (workdir / "nojax").mkdir()
    (workdir / "nojax" / "sitecustomize.py").write_text("import sys\nsys.modules['jax'] = None\n")
    monkeypatch.setenv("PYTHONPATH", str(workdir / "nojax"))
    code, out, _ = run(capsys, REFERENCE, properties=(INDEX, "functional_*"), verbose=False)
    assert code == 0 and "skipped" not in out and "jax" not in out
    assert re.fullmatch(r"CONFORMANT: 1 pass, \d+ not applicable \(exit 0\)", summary(out)), out


def test_exitfirst_stops_at_the_first_failure_and_the_rest_is_not_run(workdir, capsys):
    code, out, _ = run(capsys, impl_file(workdir, OFF_BY_ONE), "-x",
                       properties=(COUNT, "length_matches_the_documented_draw"))
    assert code == 1
    assert rows(out) == {COUNT: "FAIL", "length_matches_the_documented_draw": "skipped"}
    assert verdict.EXITFIRST in out


def test_list_prints_each_applicable_property_with_its_claim_and_runs_none(workdir, capsys):
    code, out, err = run(capsys, "simacc:legacy_generate_simulated_accept_index", "--contract", "legacy", "--list",
                         properties=(FIXED, REAL, INDEX))  # -v: each property's tests, and why the rest does not apply
    assert code == 0 and err == ""
    listed = out.split("\n\n")[1].splitlines()
    assert [line.split()[0] for line in listed] == [FIXED, f"{FIXED}[cpu]", INDEX, f"{INDEX}[cpu]"]
    assert listed[0].endswith("Fixed mode writes the fixed id to every element of predict, accepted or not "
                              "(§4.4, §5.2).")
    assert f"  contract 'legacy' (it applies to eagle): {REAL}" in out.splitlines()
    assert summary(out) == "2 properties apply; 1 do not"


def test_list_of_nothing_that_applies_exits_5(workdir, capsys):
    code, out, _ = run(capsys, "simacc:apply_dflash_simulated_acceptance", "--list", "-q", properties=(INDEX,),
                       verbose=False)
    assert code == 5 and out.strip() == "no property applies; 1 do not (-v says why)"


@pytest.mark.parametrize("pattern, name, selected", [
    (INDEX, f"{INDEX}[cpu]", True),
    (f"{INDEX}[cpu]", f"{INDEX}[cpu]", True),  # brackets are the device, not a set of characters
    (f"{INDEX}[cuda]", f"{INDEX}[cpu]", False),
    ("index_*[cpu]", f"{INDEX}[cpu]", True),
    ("index_*", f"{INDEX}[cpu]", True),
    ("match_expected_*[cpu]", "match_expected_has_the_documented_mean_and_support[0.4-cpu]", True),
    ("match_expected_*[0.4-*]", "match_expected_has_the_documented_mean_and_support[0.4-cpu]", True),
    ("regression", "regression[index_rows-0bb61f9f2a-cpu]", True),
    ("*[cuda:1]", f"{INDEX}[cpu]", False),
])
def test_a_property_pattern_is_an_id_an_id_with_its_device_or_a_shell_pattern(pattern, name, selected):
    assert catalogue.selects(pattern, name) is selected


def test_an_id_with_its_device_selects_that_test_and_a_near_miss_is_told_the_name_it_was_near(workdir, capsys):
    code, out, _ = run(capsys, REFERENCE, properties=(f"{INDEX}[cpu]", "num_correct_draft_is_length_minus_one[cpu]"))
    assert code == 0 and rows(out) == {INDEX: "pass"}
    assert (f"note: --property num_correct_draft_is_length_minus_one[cpu] matches no property; did you mean {COUNT}?"
            in out.splitlines())
    assert check._near([INDEX[:-1]]) == f"; did you mean {INDEX}?" and check._near(["nothing_like_it"]) == ""


@pytest.mark.parametrize("environ, tty, coloured", [
    ({}, True, True), ({}, False, False), ({"NO_COLOR": "1"}, True, False), ({"FORCE_COLOR": "1"}, False, True),
    ({"TERM": "dumb"}, True, False), ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
])
def test_colour_follows_the_terminal_no_color_and_force_color(environ, tty, coloured):
    stream = io.StringIO()
    stream.isatty = lambda: tty
    assert terminal.colours(stream, environ) is coloured


def test_force_color_colours_the_verdict_and_the_progress(workdir, capsys, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, err = run(capsys, impl_file(workdir, OFF_BY_ONE), properties=(INDEX, COUNT), verbose=False)
    assert code == 1 and "\x1b[31mNOT CONFORMANT\x1b[0m: " in out and f"\x1b[31mFAIL\x1b[0m {COUNT}" in out
    assert "\x1b[32mpass\x1b[0m" in err


def test_the_summary_counts_every_status_and_groups_what_did_not_run_by_reason():
    def row(pid, status, message=""):
        return verdict.PropertyResult(pid, status, None, 0.1, message, nodeid=f"p/t.py::test_{pid}[cpu]")

    rows_ = [row("a", Status.PASS), row("b", Status.SKIPPED, "no triton"), row("c", Status.SKIPPED, "no triton"),
             row("d", Status.XFAIL, "x=1, but should be 2"), row("e", Status.SKIPPED, "no CUDA")]
    got = verdict.Verdict({}, rows_, 0, not_applicable={"p/t.py::test_f[cpu]": "contract"})
    assert verdict.render(got).splitlines() == [
        "skipped (2): no triton (b, c)", "expected failure (1): d", "skipped (1): no CUDA (e)",
        "CONFORMANT: 1 pass, 1 expected failure, 3 skipped, 1 not applicable (exit 0)"]


def test_the_log_progress_names_a_property_whose_tests_disagree():
    stream = io.StringIO()
    shown = progress.Progress(stream)
    shown.collected(["p/t.py::test_a[cpu]", "p/t.py::test_a[cuda]"])
    for device, status in (("cpu", Status.PASS), ("cuda", Status.SKIPPED)):
        shown.finished(verdict.PropertyResult("a", status, 1, 0.25, nodeid=f"p/t.py::test_a[{device}]"))
    assert stream.getvalue() == "[1/1] a: pass, 1 skipped (0.5 s, 2 examples)\n"


def test_check_help_describes_the_output_and_its_controls(capsys):
    from simacc.commands import cli

    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    out = capsys.readouterr().out
    for flag in ("-x, --exitfirst", "--list", "-v, --verbose", "-q, --quiet", "NO_COLOR", "FORCE_COLOR"):
        assert flag in out
    assert check.HINT == "try 'simacc check --help'"
    assert torch  # the check command itself never needs it; the test module does for no_cuda
