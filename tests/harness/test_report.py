"""Pictures of a failing distribution: the data a property attaches to its failure, its road to
``simacc check`` (worker, event stream, verdict) as data, the text chart of the terminal and
of ``simacc repro``, and the HTML page of ``--html`` with its plots or, without matplotlib,
the text chart.

The realistic bad case is the zoo's port that centres its Gaussian on the clamped ``x``, as
sglang-jax does (``own_generator_clamps_the_mean``, at the semantic level).
"""

import html
import json
import re
import sys
import types
import xml.etree.ElementTree as ET

import pytest

from simacc.commands import cli, html_pages
from simacc.commands.checking import report_html, verdict
from simacc.harness.call import impl
from simacc.harness.call.runner import Runner
from simacc.harness.judging import distributions, statistics
from simacc.harness.judging.distributions import Distribution
from simacc.properties import support
from simacc.properties import test_sampling as sampling

CLAMPED = "simacc.zoo.sampling:own_generator_clamps_the_mean"
MULTINOMIAL = "multinomial_matches_the_rounded_clamped_gaussian"
# what a 300-key run of sglang-jax's clamped mean gave at x = 0.4 (docs/output.md)
SEEN = Distribution.of([1] * 197 + [2] * 85 + [3] * 16 + [4] * 2, support.gaussian_probabilities(0.4, 4),
                       "multinomial L counts (x=0.4, max_len=4)")


def test_the_chart_puts_observed_beside_expected_and_marks_the_cdf_outside_its_band():
    assert SEEN.chart() == [
        "L over 300 draws, observed (#) against expected (=); the observed CDF must lie in its band",
        "  L  observed                         expected                         CDF    band",
        "  1  ##################        65.7%  ========================  86.4%  0.657  0.743-0.960  <- outside the band",
        "  2  ########                  28.3%  ===                       11.8%  0.940  0.925-1.000",
        "  3  #                          5.3%                             1.7%  0.993  0.977-1.000",
        "  4  #                          0.7%                             0.1%  1.000  1.000",
    ]


def test_each_length_has_the_band_of_the_test_narrower_where_the_cdf_is_near_0_or_1():
    bands = statistics.cdf_bands(300, SEEN.expected)
    assert list(zip(SEEN.low, SEEN.high)) == bands
    widths = [high - low for low, high in bands[:3]]
    assert widths[0] > widths[1] > widths[2]


def test_lengths_outside_one_to_w_are_two_buckets_and_survive_json():
    shown = Distribution.of([0, -3, 1, 2, 9, 2], [0.5, 0.5], "L")
    assert (shown.labels, shown.observed, shown.expected) == (("<1", "1", "2", ">2"), (2, 1, 2, 1), (0, 0.5, 0.5, 0))
    assert (shown.low[0], shown.high[0], shown.low[-1], shown.high[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert Distribution.from_json(json.loads(json.dumps(shown.to_json()))) == shown
    assert shown.chart()[2].endswith("0.333  0.000  <- outside the band") and shown.outside() == [True, False, True, False]


def test_a_failing_distribution_property_carries_what_it_observed():
    prop = sampling.test_multinomial_matches_the_rounded_clamped_gaussian.simacc_property
    with Runner(impl.load(CLAMPED, level="semantic"), "cpu", 30) as runner, pytest.raises(AssertionError) as failed:
        prop.run(runner, x=0.4)
    shown = distributions.carried(failed.value)
    runs = sampling.MULTINOMIAL_DRAWS[0.4]
    assert shown.labels == ("1", "2", "3", "4") and shown.runs == runs
    assert shown.expected == tuple(support.gaussian_probabilities(0.4, 4))
    share = statistics.FALSE_ALARM / len(sampling.MULTINOMIAL_DRAWS)  # the parametrization's share of 1e-6
    assert list(zip(shown.low, shown.high)) == statistics.cdf_bands(runs, shown.expected, share)
    assert shown.outside()[0]


def test_a_plain_pytest_report_gets_the_data_and_the_chart_in_its_failure_text():
    report = types.SimpleNamespace(user_properties=[], longrepr=None, sections=[])
    distributions.report(report, distributions.attach(AssertionError("x"), SEEN))
    assert report.user_properties == [("simacc_distribution", SEEN.to_json())]
    assert report.sections == [("simacc distribution", "\n".join(SEEN.chart()))]
    distributions.report(report, AssertionError("no distribution"))
    assert len(report.user_properties) == 1


def test_check_prints_the_chart_in_the_failure_block_and_writes_it_in_json_junit_and_a_page(tmp_path, monkeypatch,
                                                                                        capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["check", CLAMPED, "--level", "semantic", "--property", f"{MULTINOMIAL}[0.4-cpu]", "--device", "cpu",
                     "-n", "0", "-q", "--json", "v.json", "--junitxml", "v.xml", "--html", "report.html"])
    out = capsys.readouterr().out
    assert code == 1
    block = out.split("\n\n")[0]
    assert "\n  L over 1000 draws, observed (#) against expected (=); the observed CDF must lie in its band\n" in block
    assert re.search(r"\n    1  #+ +\d+\.\d%  =+ +86\.4%  0\.\d{3}  0\.\d{3}-0\.\d{3}  <- outside the band\n", block), block
    (row,) = json.loads((tmp_path / "v.json").read_text())["results"]
    assert row["distribution"]["expected"] == support.gaussian_probabilities(0.4, 4)
    assert sum(row["distribution"]["observed"]) == sampling.MULTINOMIAL_DRAWS[0.4]
    failure = ET.parse(tmp_path / "v.xml").getroot().find(".//failure").text
    assert "\nL over 1000 draws, observed (#) against expected (=)" in failure and "\nreplay: simacc check " in failure
    page = (tmp_path / "report.html").read_text()
    if html_pages.plots_available():
        assert page.count("<img alt=") == 1 and "src='data:image/png;base64," in page
    assert f"<h1>simacc check {CLAMPED}</h1>" in page and "replay: <code class=replay>simacc check " in page


def test_the_page_is_self_contained_and_without_matplotlib_shows_the_text_chart(monkeypatch):
    failing = verdict.result_of({"nodeid": f"p/test_sampling.py::test_{MULTINOMIAL}[0.4-cpu]", "property": MULTINOMIAL,
                                 "device": "cpu", "status": "FAIL", "message": "AssertionError: counts=[197, 85, 16, 2], "
                                 "but should be about [259, 35, 5, 0] <&>", "distribution": SEEN.to_json()})
    passing = verdict.result_of({"nodeid": "p/test_index.py::test_index_rows[cpu]", "property": "index_rows",
                                 "device": "cpu", "status": "pass", "examples": 50, "seconds": 0.4})
    result = verdict.build({"impl": "my_kernel.py:generate"}, [], [failing, passing])
    monkeypatch.setattr(html_pages, "plots_available", lambda: False)
    page = report_html.page(result)
    assert not re.search(r"(src|href)=['\"]?(https?:)?//|<script|<link", page)  # nothing to fetch
    assert "should be about [259, 35, 5, 0] &lt;&amp;&gt;" in page
    assert html.escape("\n".join(SEEN.chart())) in page
    assert "pip install matplotlib" in page and "NOT CONFORMANT: 1 pass, 1 FAIL (exit 1)" in page


STUCK = '''
import simacc

def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
             simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    """Draws L as if x were 1, whatever it is."""
    return simacc.generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates,
                                                  target_predict, bs, spec_steps, 1.0, simulate_acc_method,
                                                  simulate_acc_token_mode)
'''
KNOBS = {"mode": "fixed", "method": "multinomial", "width": 4, "x": 2.5, "capacity": 1, "graphs": False,
         "quiet": True, "nodes": 4, "tokens": True, "dtype": "int64", "vocab": 16, "seed": 0}


def test_repro_draws_the_chart_of_a_serving_loops_burst(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading an IMPL appends its folder
    (tmp_path / "stuck.py").write_text(STUCK)
    record = {"schema": "simacc-repro/2", "property": "serving_loop_conforms_at_every_step",
              "module": "simacc.properties.test_serving", "contract": "eagle", "impl": f"{tmp_path}/stuck.py:generate",
              "device": "cpu", "message": "a burst of steps at x=1", "level": "semantic", "context": "inference",
              "program": {"machine": "EagleLoop", "knobs": KNOBS, "steps": [["join", {"count": 1}], ["burst", {}]]}}
    (tmp_path / "burst.json").write_text(json.dumps(record))
    assert cli.main(["repro", str(tmp_path / "burst.json"), "--impl", record["impl"]]) == 1
    out = capsys.readouterr().out
    assert "\nFAIL: multinomial L counts over a burst of 128 steps seeded once (x=2.5, max_len=4)=" in out
    assert "\n  L over 128 draws, observed (#) against expected (=); the observed CDF must lie in its band\n" in out, out


@pytest.mark.skipif(not html_pages.plots_available(), reason="needs matplotlib: pip install -e '.[plots]'")
def test_a_plot_is_a_png():
    import base64

    assert base64.b64decode(report_html.plot(SEEN)).startswith(b"\x89PNG\r\n\x1a\n")
