"""Each engine's law (CONTRACT.md §23-§27, ``simacc.contract.laws``) and ``simacc laws``: the exact
laws against the engines' mechanisms drawn, the figures the sources give, the knobs' parsing at
its edges, the table, its JSON and its page; and, marked ``vllm`` and ``sglang``, the rows that
run those engines' own code where it is importable."""

import contextlib
import io
import json
import math

from pathlib import Path

import pytest
from tests.commands.pages import Page, red_pixels, screenshot

from simacc.commands import cli, html_pages
from simacc.commands.serving import laws as command
from simacc.contract import laws
from simacc.harness.judging import statistics

REPO = Path(__file__).resolve().parents[2]
SETTINGS = [(2.6, 3), (3.5, 4), (1.0, 3), (3.0, 3), (4.0, 3), (1.3, 1)]


def run(capsys, *argv):
    code = cli.main(["laws", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("engine", laws.ENGINES)
@pytest.mark.parametrize("length, k", SETTINGS)
def test_each_engines_exact_law_is_what_its_mechanism_draws(engine, length, k):
    """The walk over draft positions, the batch's one draw, the pool's schedule: 2,000 draws
    (steps for a lockstep law, one request each) within the Chernoff band at 1e-6."""
    law = laws.law(engine, length, k)
    if law.cannot:
        pytest.skip(law.cannot)
    lockstep = law.engine.joint != laws.INDEPENDENT
    run_ = law.draw(2000 if lockstep else 40, 1 if lockstep else 50, seed=7)
    lengths = [x for step in run_ for x in step]
    assert math.isclose(sum(law.accepted), 1.0, abs_tol=1e-12)
    test = statistics.cdf_test(lengths, list(law.accepted))
    assert test.passed, test


def test_a_lockstep_law_gives_every_request_of_a_step_one_length_and_an_independent_one_does_not():
    assert all(len(set(step)) == 1 for step in laws.law("sglang", 2.6, 3).draw(50, 64, seed=1))
    assert all(len(set(step)) == 2 for step in laws.law("vllm", 2.6, 3).draw(50, 64, seed=1))
    assert all(len(set(step)) == 1 for step in laws.law("trtllm-two-model", 3.0, 3).draw(5, 64, seed=1))


@pytest.mark.parametrize("fraction, share", [(0.1, 0.0988311767578125), (0.25, 0.2485809326171875),
                                             (0.5, 0.49920654296875), (0.6, 0.60028076171875),
                                             (0.75, 0.748931884765625), (0.9, 0.8995819091796875)])
def test_tensorrt_llms_pool_grants_the_extra_draft_at_its_own_frequency(fraction, share):
    """§27.4: the report's figures, from the pool torch draws with seed 0xACCE9D."""
    assert laws.pool_fraction(fraction) == share


def test_tensorrt_llms_pool_schedule_reuses_entries_as_its_constants_say():
    pool = laws.pool()
    assert pool.shape == (65536,) and float(pool.min()) == pytest.approx(2.0266e-05, rel=1e-4)
    assert laws.pool_reuse(1) == (65536, 0) and laws.pool_reuse(24) == (593, 23)
    assert laws.pool_reuse(104) == (593, 23) and laws.pool_reuse(105) == (168, 104)
    index = lambda c, s: (c * laws.POOL_STEP + s * laws.POOL_SLOT) & 0xFFFF  # noqa: E731
    assert index(1 + 168, 104) == index(1, 0) and index(1 + 593, 0) == index(1, 23)
    # and by brute force: no two of 24 rows read one entry fewer than 593 steps apart
    assert not any(index(c, s) == index(0, 0) for c in range(1, 593) for s in range(-23, 24))


def test_the_rates_and_laws_match_the_figures_their_sources_give():
    assert laws.llama_rate(3.4, 4) == pytest.approx(0.805809, abs=1e-6)  # llama.cpp's test (§26.3)
    assert laws.law("llama.cpp", 3.4, 4).mean == pytest.approx(3.4, abs=1e-8)
    assert laws.law("atom-1850", 3.78, 7).sd ** 2 == pytest.approx(2.63, abs=0.005)  # ATOM #1948's message (§25.3)
    assert laws.law("atom", 3.78, 7).sd ** 2 == pytest.approx(0.1716, abs=1e-6)
    assert laws.law("vllm", 2.6, 3).accepted == pytest.approx((0.0, 0.4, 0.6, 0.0))
    for x, mean in [(1, 1.382), (2.6, 2.588), (4, 3.618), (5, 3.927)]:  # §24.3, W = 4
        assert laws.law("sglang-multinomial", x, 3).mean == pytest.approx(mean, abs=5e-4)
    assert laws.law("sglang-jax-multinomial", 5, 3).accepted == pytest.approx(laws.law("sglang-multinomial", 4, 3)
                                                                                .accepted)


@pytest.mark.parametrize("rate, k, a0, g", [
    ((2.6 - 1) / 3, 3, 0.7833075253292918, 0.85), ((3.78 - 1) / 7, 7, 0.9484992772340775, 0.85),
    (0.3, 8, 0.889189925044775, 0.85), (0.999, 5, 1.0, 0.9997498029842973), (1.0, 4, 1.0, 1.0), (0.0, 3, 0.0, 0.85),
])
def test_atom_1850s_base_and_decay_are_its_own_search_to_the_last_digit(rate, k, a0, g):
    """§25.3: #1850 records its search (``compute_synthetic_rejection_sampler_params`` at
    fe24d1def): each bisection stops at a width of 1e-9 and returns the interval's upper end.
    The figures are what that function returns."""
    assert laws.atom_1850_schedule(rate, k) == (a0, g)


def test_tensorrt_llms_two_model_notes_say_which_requests_the_knob_does_not_reach():
    """§27.5: only ``_process_draft_tokens_greedy`` reads the forced count; a sampled request
    with draft logits and a draft tree take other paths, where the count is the real one."""
    notes = " ".join(laws.law("trtllm-two-model", 3.0, 3).notes(64))
    for said in ("greedily along a chain", "sampled ones without draft logits", "does not apply to a sampled "
                 "request with draft logits", "real rejection sampling", "draft tree", "the count is the real one"):
        assert said in notes, notes


def test_part_iv_and_the_recipe_give_each_corrected_fact_with_its_source():
    """Issue 55: where the two-model knob does not reach, sglang-jax's ValueError, #1850's search,
    and what sglang's ``spec_accept_length`` counts, each with the file it was read in."""
    contract = " ".join((REPO / "simacc" / "contract" / "CONTRACT.md").read_text(encoding="utf-8").split())
    for said in ("`_process_draft_tokens_tree`", "`_process_draft_tokens_rejection_sampling`",
                 "`python/sgl_jax/srt/speculative/spec_utils.py:21-50`",
                 "`atom/model_ops/rejection_sampler.py:54-103`"):
        assert said in contract, said
    assert "is not recorded" not in contract
    recipe = " ".join((REPO / "docs" / "laws.md").read_text(encoding="utf-8").split())
    assert "`spec_accept_length` (its mean)" not in recipe
    assert "`completion_tokens / spec_verify_ct` (`tokenizer_manager.py:3165-3168`)" in recipe
    assert "reads high" in recipe


def test_the_truncated_geometric_law_is_the_direct_enumeration():
    p, k = laws.llama_rate(2.6, 3), 3
    assert laws.law("llama.cpp", 2.6, k).accepted == pytest.approx([p**a * (1 - p) for a in range(k)] + [p**k])


READINGS = [  # (engine, text, K, the value read, or a fragment of why not)
    ("trtllm", "2.6", 3, 2.6), ("trtllm", " 3 ", 3, 3.0), ("trtllm", "1e0", 3, 1.0), ("trtllm", "-0.5", 3, -0.5),
    ("trtllm", "2,6", 3, "reads 0, which turns forcing off"), ("trtllm", "0", 3, "turns forcing off"),
    ("trtllm", "nan", 3, "int() of it raises"), ("trtllm", "inf", 3, "int() of it raises"),
    ("trtllm", "-1", 3, "fewer than 1"),
    ("trtllm-two-model", " 3 ", 3, 3), ("trtllm-two-model", "2.6", 3, "not an integer"),
    ("trtllm-two-model", "2.0", 3, "not an integer"), ("trtllm-two-model", "1e0", 3, "not an integer"),
    ("trtllm-two-model", "-1", 3, "n-1 of n drafts"), ("trtllm-two-model", "0", 3, "turns forcing off"),
    ("vllm", "2.6", 3, 2.6), ("vllm", "5", 3, "must lie in [1, 4]"), ("vllm", "nan", 3, "must lie in [1, 4]"),
    ("vllm", "abc", 3, "not a number"),
    ("atom", "4", 3, 4.0), ("atom", "4.01", 3, "[1, 4]"), ("atom", "nan", 3, "[1, 4]"), ("atom", "-inf", 3, "[1, 4]"),
    ("atom-1850", "0.5", 3, 0.5), ("atom-1850", "1.1", 3, "[0, 1]"), ("atom-1850", "-0.1", 3, "[0, 1]"),
    ("llama.cpp", "3.4", 4, 3.4), ("llama.cpp", "3.4x", 4, "not a number"), ("llama.cpp", "nan", 4, "finite"),
    ("llama.cpp", "5.1", 4, "[1, 5]"), ("llama.cpp", "0", 4, "[1, 5]"),
    ("sglang", "2.6", 3, 2.6), ("sglang", "inf", 3, math.inf), ("sglang", "abc", 3, "leaves simulation off"),
    ("sglang", "0", 3, "stays off"), ("sglang", "-1", 3, "stays off"), ("sglang", "nan", 3, "stays off"),
    ("sglang-jax-multinomial", "2.6", 3, 2.6), ("sglang-jax-multinomial", "abc", 3, "raises ValueError"),
    ("sglang-jax-multinomial", "0", 3, "stays off"), ("sglang-jax-multinomial", "nan", 3, "stays off"),
]


@pytest.mark.parametrize("engine, text, k, expected", READINGS, ids=[f"{r[0]}-{r[1]!r}" for r in READINGS])
def test_each_engine_reads_its_knob_as_its_code_does(engine, text, k, expected):
    reading = laws.ENGINES[engine].read(text, k)
    if isinstance(expected, str):
        assert reading.value is None and expected in reading.why, reading
    else:
        assert reading.value == expected and not reading.why


@pytest.mark.parametrize("engine, length, k, knob, delivers", [
    ("trtllm", 3.5, 4, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.5", 3.49921),  # AL - 1, the pool's 0.49921
    ("trtllm", 1.0, 3, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1e-05", 1.0),  # 0 is off
    ("trtllm", 5.0, 3, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=4", 4.0),  # capped at K + 1
    ("trtllm-two-model", 3.0, 3, "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2", 3.0),  # "2", never "2.0"
    ("atom-1850", 2.6, 3, "--spec-decode-acceptance-rate 0.533333333333", 2.6),
    ("sglang", 5.0, 3, "SGLANG_SIMULATE_ACC_LEN=5", 4.0),  # clamped to K + 1
    ("sglang", 0.5, 3, "SGLANG_SIMULATE_ACC_LEN=0.5", 1.0),
])
def test_each_engine_is_asked_in_its_own_unit_and_delivers_what_its_law_says(engine, length, k, knob, delivers):
    law = laws.law(engine, length, k)
    assert law.knob == knob and law.mean == pytest.approx(delivers, abs=1e-5)


@pytest.mark.parametrize("engine, length, k, why", [
    ("trtllm-two-model", 2.6, 3, "=1.6 is not an integer: int() raises"),
    ("trtllm-two-model", 1.0, 3, "=0 is 0, which turns forcing off"),
    ("vllm", 5.0, 3, "must lie in [1, 4]"), ("atom", 0.5, 3, "[1, 4]"), ("atom-1850", 5.0, 3, "[0, 1]"),
    ("llama.cpp", 5.0, 3, "[1, 4]"),
])
def test_an_engine_that_cannot_take_the_al_says_why(engine, length, k, why):
    law = laws.law(engine, length, k)
    assert law.accepted == () and why in law.cannot, law.cannot


def test_the_table_names_each_engines_setting_law_and_joint_law(capsys):
    code, out, _ = run(capsys, "--length", "2.6", "--steps", "3", "--batch", "64", "--references")
    assert code == 0
    lines = out.splitlines()
    assert "  TensorRT-LLM one-model  TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.6" in out
    assert any(line.startswith("  TensorRT-LLM two-model  cannot: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.6 is "
                               "not an integer") for line in lines)
    assert "  sglang match-expected                    0 0.400 0.600     0   0.490  lockstep           0.490" in lines
    assert "  vLLM                                     0 0.400 0.600     0   0.490  own draws          0.061" in lines
    assert "rows 23 apart read the same pool entry 593 steps apart" in out


def test_the_json_has_a_row_per_engine_with_its_law(capsys, tmp_path):
    code, _, _ = run(capsys, "--length", "3.5", "--steps", "4", "--references", "--json", str(tmp_path / "t.json"))
    data = json.loads((tmp_path / "t.json").read_text())
    assert code == 0 and data["schema"] == "simacc.laws/1" and data["steps"] == 4 and data["batch"] == 64
    rows = {r["engine"]: r for r in data["rows"]}
    assert list(rows) == list(laws.ENGINES)
    assert rows["vllm"]["accepted"] == pytest.approx([0, 0, 0.5, 0.5, 0]) and rows["vllm"]["joint"] == "independent"
    assert rows["sglang"]["step_mean_sd"] == pytest.approx(0.5) and rows["sglang"]["joint"] == "lockstep"
    assert rows["trtllm-two-model"]["cannot"] and rows["trtllm-two-model"]["accepted"] is None
    assert rows["trtllm"]["mean_al"] == pytest.approx(3.499207, abs=1e-6) and rows["trtllm"]["mean_al_interval"] is None


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """``simacc laws --html`` at AL 2.6, K = 3: ``(exit code, what it printed, the page)``."""
    path = tmp_path_factory.mktemp("laws") / "laws.html"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(["laws", "--length", "2.6", "--steps", "3", "--references", "--html", str(path)])
    return code, out.getvalue(), path


NEEDS_PLOTS = pytest.mark.skipif(not html_pages.plots_available(), reason="needs matplotlib: pip install -e '.[plots]'")


@NEEDS_PLOTS
def test_the_page_holds_the_table_and_a_plot_of_the_laws(page):
    code, out, path = page
    parsed = Page(path.read_text())
    assert code == 0 and parsed.title == "simacc laws: AL 2.6, K = 3, 64 requests per step"
    assert len(parsed.images) == 1 and parsed.images[0].startswith("data:image/png;base64,")
    assert out.strip() in "".join(parsed.text)


@NEEDS_PLOTS
def test_the_page_opens_in_a_browser_with_its_plot_drawn(page, tmp_path):
    screenshot(page[2], tmp_path / "shot.png")
    assert red_pixels(tmp_path / "shot.png") > 1000  # the lockstep laws' bars


def test_without_matplotlib_the_page_holds_the_table_and_says_how_to_get_a_plot(tmp_path, monkeypatch):
    monkeypatch.setattr(html_pages, "plots_available", lambda: False)
    path = tmp_path / "laws.html"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(["laws", "--length", "2.6", "--steps", "3", "--references", "--html", str(path)])
    parsed = Page(path.read_text())
    text = "".join(parsed.text)
    assert code == 0 and not parsed.images and "pip install matplotlib" in text and out.getvalue().strip() in text


@pytest.mark.parametrize("argv, said", [
    (["--length", "nan", "--steps", "3"], "must be a finite number > 0, got 'nan'"),
    (["--length", "0", "--steps", "3"], "must be a finite number > 0, got '0'"),
    (["--length", "abc", "--steps", "3"], "must be a number, got 'abc'"),
    (["--length", "2.6", "--steps", "0"], "must be >= 1, got '0'"),
    (["--length", "2.6"], "the following arguments are required: --steps"),
])
def test_a_bad_option_is_a_usage_error(capsys, argv, said):
    with pytest.raises(SystemExit) as exit_:
        run(capsys, *argv)
    assert exit_.value.code == 2 and said in capsys.readouterr().err


def test_an_output_in_a_missing_folder_is_a_usage_error_and_nothing_is_written(capsys, tmp_path):
    code, out, err = run(capsys, "--length", "2.6", "--steps", "3", "--references", "--json",
                         str(tmp_path / "t.json"), "--html", str(tmp_path / "no" / "p.html"))
    assert code == 2 and out == "" and "no such folder" in err and list(tmp_path.iterdir()) == []


# -- the engines' own code (marked; skipped where it is not importable) -----------------------------------


@pytest.mark.vllm
def test_the_vllm_row_comes_from_running_vllm():
    from simacc.contract import vllm_glue

    why = vllm_glue.unavailable()
    if why:
        pytest.skip(why)
    row = next(r for r in command.rows(2.6, 3, 64, 128) if r.law.engine.id == "vllm")
    assert row.source.startswith("vLLM ") and "V2 sampler, 128 requests" in row.source, row.source
    assert "its resolver gives the reference's rates" in row.notes
    assert row.interval[0] <= 2.6 <= row.interval[1] and any("agrees with the reference law" in n for n in row.notes)


@pytest.mark.sglang
def test_the_sglang_rows_come_from_running_sglang():
    try:
        from sglang.srt.speculative.spec_utils import sample_simulated_acc_len  # noqa: F401
    except Exception as e:  # noqa: BLE001 - whatever stops the import
        pytest.skip(f"sglang not importable here: {e}")
    table = {r.law.engine.id: r for r in command.rows(2.6, 3, 64, 2000)}
    for engine in ("sglang", "sglang-multinomial"):
        assert table[engine].source.startswith("sglang ") and table[engine].interval is not None
        assert any("agrees with the reference law" in n for n in table[engine].notes), table[engine].notes


def test_without_the_engines_every_row_is_the_reference():
    table = command.rows(2.6, 3, 64, 10, references=True)
    assert all(r.source.startswith("reference, CONTRACT.md §") and r.interval is None for r in table)
