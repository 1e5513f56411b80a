"""What ``simacc check`` prints, and the controls a pytest user reaches for: the default output
in pytest's manner (header, progress, failures, grouped reasons, one summary line), ``-v``,
``-q``, colour, ``-x``, ``--list`` and ``--property`` patterns with "did you mean".

The checks run as in ``test_check.py``: in ``tmp_path``, a few properties, a few examples,
``-n 0``, a fixed seed.
"""

import io
import re

import pytest
from tests.commands.test_check import (
    COUNT,
    FIXED,
    INDEX,
    OFF_BY_ONE,
    REAL,
    REFERENCE,
    impl_file,
    rows,
    run,
    summary,
    workdir,  # noqa: F401 - a fixture
)

from simacc.commands import terminal
from simacc.commands.checking import check, conformance, progress, verdict
from simacc.harness.config.status import Status
from simacc.harness.judging import catalogue

NEAR_MISS = "num_correct_draft_is_length_minus_one[cpu]"
# an id, an id with its device (brackets literal), a pattern, and a near miss
PASSING = ("regression", FIXED, f"{INDEX}[cpu]", "num_correct_drafts_*", REAL, NEAR_MISS)


def test_a_passing_check_prints_the_header_and_one_summary_line_and_on_a_log_a_line_per_property(workdir, capsys):
    code, out, err = run(capsys, REFERENCE, properties=PASSING, verbose=False)
    lines = out.rstrip("\n").splitlines()
    assert code == 0 and lines[0] == f"simacc check {REFERENCE}" and len(lines) <= 20
    assert not any(line.startswith("property ") for line in lines)  # no table
    assert lines[-2] == f"note: --property {NEAR_MISS} matches no property; did you mean {COUNT}?"
    assert re.fullmatch(r"CONFORMANT: 5 pass, 1 not applicable in \d+\.\d s \(exit 0\)", lines[-1])  # DFLASH's cases
    # the corpus has three eagle cases: one property, three tests, one line
    shown = [line.split(": ")[0] for line in err.splitlines()]
    assert shown == [f"[{i}/5] {pid}" for i, pid in enumerate(["regression", FIXED, INDEX, COUNT, REAL], 1)], err
    assert err.startswith("[1/5] regression: pass (0.")


def test_a_failure_says_l_w_the_mode_and_the_values_a_repeated_case_once_in_colour_when_forced(workdir, capsys,
                                                                                                monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, err = run(capsys, impl_file(workdir, OFF_BY_ONE), properties=(COUNT, "length_matches_the_documented_draw"),
                         verbose=False)
    assert code == 1 and "\x1b[31mNOT CONFORMANT\x1b[0m: " in out and "\x1b[31mFAIL\x1b[0m" in err
    first, second = [block for block in out.split("\n\n") if block.startswith("\x1b[31mFAIL\x1b[0m ")]
    assert first.startswith(f"\x1b[31mFAIL\x1b[0m {COUNT}\n  num_correct_drafts[0]=1, but should be 0: ")
    assert "[L=1, W=1, bs=1, mode fixed]" in first and "\n  got      [1]\n  expected [0]\n" in first
    assert "\n  case=EagleCase(\n      accept_index=tensor([[0]], dtype=int32),\n" in first
    assert "\n  case=(the same case as above)\n" in second


def made_up(*rows_):
    """A verdict of ``(property, status, message)`` rows on the CPU, as the session reports them."""
    results = [verdict.result_of({"nodeid": f"p/test_m.py::test_{pid}[cpu]", "property": pid, "device": "cpu",
                                  "status": status.value, "message": message, "examples": 5, "seconds": 0.25})
               for pid, status, message in rows_]
    return verdict.build({"devices": ["cpu"]}, [], results)


FAILING = made_up(("a", Status.PASS, ""), ("b", Status.FAIL, "AssertionError: x=1, but should be 2 [L=1]\ncase=C(\n)"),
                  ("c", Status.SKIPPED, "no CUDA"), ("d", Status.SKIPPED, "no CUDA"))


def test_verbose_puts_the_table_first_with_the_failures_at_its_top():
    lines = verdict.render(FAILING, verbosity=1).splitlines()
    assert [line.split()[0] for line in lines[1:5]] == ["b", "a", "c", "d"] and lines[4].endswith("no CUDA")
    assert "skipped (2)" not in "\n".join(lines)  # the table says it


def test_quiet_prints_the_failures_and_the_summary_only():
    assert verdict.render(FAILING, verbosity=-1).split("\n\n") == [
        "FAIL b\n  x=1, but should be 2 [L=1]\n  case=C(\n  )", "NOT CONFORMANT: 1 pass, 1 FAIL, 2 skipped (exit 1)"]
    quiet = io.StringIO()
    progress.Progress(quiet, quiet=True).finished(FAILING.results[0])
    assert quiet.getvalue() == ""


def test_what_did_not_run_is_one_line_per_reason_not_a_row_per_property():
    assert verdict.render(FAILING).splitlines()[-2:] == ["skipped (2): no CUDA (c, d)",
                                                          "NOT CONFORMANT: 1 pass, 1 FAIL, 2 skipped (exit 1)"]


def test_verbose_progress_on_a_log_is_a_line_per_test():
    stream = io.StringIO()
    shown = progress.Progress(stream, verbose=True)
    shown.collected([r.nodeid for r in FAILING.results])
    shown.finished(FAILING.results[0])
    assert stream.getvalue() == "[1/4] a[cpu]: pass (0.2 s, 5 examples)\n"


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
    assert summary(out) == "2 properties apply; 1 does not"


def test_a_list_of_nothing_that_applies_says_so():
    assert check.listing([], {f"p/test_index.py::test_{INDEX}[cpu]": "contract 'dflash'"}) == [
        "no property applies; 1 does not (-v says why)"]


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


def test_a_near_miss_is_told_the_nearest_id_and_a_far_one_nothing():
    assert conformance._near([INDEX[:-1]]) == f"; did you mean {INDEX}?" and conformance._near(["nothing_like_it"]) == ""


@pytest.mark.parametrize("environ, tty, coloured", [
    ({}, True, True), ({}, False, False), ({"NO_COLOR": "1"}, True, False), ({"FORCE_COLOR": "1"}, False, True),
    ({"TERM": "dumb"}, True, False), ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
])
def test_colour_follows_the_terminal_no_color_and_force_color(environ, tty, coloured):
    stream = io.StringIO()
    stream.isatty = lambda: tty
    assert terminal.colours(stream, environ) is coloured


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


def test_the_log_progress_counts_each_property_once_across_the_grad_modes_sessions():
    """A property checked in every grad mode has tests in the later sessions too, which start
    after the first one's properties may be done: the first session says them (``other_modes``)
    so that its line waits for them, and the count never passes its total."""
    stream = io.StringIO()
    shown = progress.Progress(stream)
    shown.collected(["p/t.py::test_a[cpu-inference]", "p/t.py::test_b[cpu]"], 0)
    shown.collected(["p/t.py::test_a[cpu-no_grad]"], "later")
    for nodeid in ("p/t.py::test_a[cpu-inference]", "p/t.py::test_b[cpu]"):
        shown.finished(verdict.PropertyResult(nodeid[10], Status.PASS, 1, 0.25, nodeid=nodeid))
    shown.collected(["p/t.py::test_a[cpu-no_grad]"], 1)  # the later session starts
    shown.finished(verdict.PropertyResult("a", Status.PASS, 1, 0.25, nodeid="p/t.py::test_a[cpu-no_grad]"))
    assert stream.getvalue() == "[1/2] b: pass (0.2 s, 1 example)\n[2/2] a: pass (0.5 s, 2 examples)\n"
    assert shown.total == 3


@pytest.mark.parametrize("statuses, said", [
    ((Status.SKIPPED, Status.SKIPPED), "skipped"),  # once "expected failure, 2 skipped"
    ((Status.SKIPPED, Status.NOT_RUN), "1 skipped, 1 not run"),
    ((Status.XFAIL, Status.SKIPPED), "expected failure, 1 skipped"),
])
def test_the_log_progress_of_a_property_none_of_whose_tests_passed(statuses, said):
    stream = io.StringIO()
    shown = progress.Progress(stream)
    shown.collected([f"p/t.py::test_a[{i}]" for i in range(len(statuses))])
    for i, status in enumerate(statuses):
        shown.finished(verdict.PropertyResult("a", status, None, 0.25, nodeid=f"p/t.py::test_a[{i}]"))
    assert stream.getvalue() == f"[1/1] a: {said} (0.5 s)\n"


def test_check_help_describes_the_output_and_its_controls(capsys):
    from simacc.commands import cli

    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    out = capsys.readouterr().out
    for flag in ("-x, --exitfirst", "--list", "-v, --verbose", "-q, --quiet", "NO_COLOR", "FORCE_COLOR"):
        assert flag in out


def test_nothing_checked_for_several_reasons_names_the_commonest():
    got = made_up(("a", Status.SKIPPED, "no CUDA"), ("b", Status.SKIPPED, "no CUDA"), ("c", Status.SKIPPED, "no CPU"))
    assert got.reason == "no property ran the implementation; most were skipped: no CUDA"
