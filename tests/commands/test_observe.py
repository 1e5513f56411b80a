"""``simacc observe``: a log drawn from an engine's own law passes (once it is large enough to
see a shift of 0.1 in AL; smaller, it is INCONCLUSIVE), a log from a neighbouring law, a
drifting run or a run whose lengths stay with a request fails with a message that names what
differs, every unreadable log is a usage error that names its line and writes nothing, and the
record and the page say what the terminal says."""

import json

from tests.commands import engine_outputs
import pytest
from tests.commands.pages import Page, red_pixels, screenshot

from simacc.commands import cli, html_pages
from simacc.contract import laws

SETTINGS = [(2.6, 3), (3.5, 4), (3.0, 3)]


def write_log(path, engine, length, k, steps=120, batch=32, seed=3):
    """A log of ``engine``'s law drawn its own way: a line per request per step."""
    return engine_outputs.records(path, engine_outputs.draws(engine, length, k, steps, batch, seed))


def large(engine):
    """``(steps, batch)`` enough to see a shift of 0.1 in AL: 8,192 steps of one draw each for a
    lockstep law, 25,600 records for the others (the wide laws of ATOM #1850 and llama.cpp need
    about 12,700 and 20,400)."""
    return (8192, 2) if laws.ENGINES[engine].joint != laws.INDEPENDENT else (400, 64)


def observe(capsys, log, engine, length, k, *more):
    code = cli.main(["observe", str(log), "--engine", engine, "--length", str(length), "--steps", str(k), *more])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("engine", laws.ENGINES)
@pytest.mark.parametrize("length, k", SETTINGS)
def test_a_log_drawn_from_an_engines_own_law_matches_it(capsys, tmp_path, engine, length, k):
    if laws.law(engine, length, k).cannot:
        pytest.skip("the engine cannot take this AL")
    steps, batch = large(engine)
    log = write_log(tmp_path / "run.jsonl", engine, length, k, steps, batch)
    code, out, _ = observe(capsys, log, engine, length, k)
    assert code == 0 and "MATCHES the law (false-alarm rate 1e-06 in all" in out, out
    assert "power: it would see a shift of AL by 0.0" in out, out


@pytest.mark.parametrize("drawn, asked, says", [
    (("vllm", 3.0, 4), ("vllm", 3.05, 4), "but vLLM's law at AL 3.05 delivers 3.0500"),  # a shifted AL
    (("sglang", 2.6, 3), ("vllm", 2.6, 3), "the requests move in lockstep (one draw per batch), but vLLM draws per "
                                           "request"),  # the per-batch draw instead of the per-request one
    (("vllm", 2.6, 3), ("sglang", 2.6, 3), "but sglang match-expected draws one length for the whole batch: these "
                                           "requests drew their own"),
    (("llama.cpp", 2.6, 3), ("vllm", 2.6, 3), "which vLLM's law at AL 2.6 never gives (only [2, 3])"),  # geometric
    (("atom-1850", 3.5, 4), ("llama.cpp", 3.5, 4), "is narrower than the law's (1.590)"),
    (("trtllm", 3.6, 4), ("trtllm", 2.6, 4), "that is AL + 1, as when the knob is given AL where it counts accepted "
                                             "drafts (AL - 1)"),  # AL given to a knob of AL - 1
    (("vllm", 1.6, 3), ("vllm", 2.6, 3), "that is AL - 1, as when the knob is given AL - 1 where it takes AL"),
    (("sglang-multinomial", 2.6, 3), ("sglang", 2.6, 3), "which sglang match-expected's law at AL 2.6 never gives"),
])
def test_a_log_from_a_neighbouring_law_fails_naming_what_differs(capsys, tmp_path, drawn, asked, says):
    log = write_log(tmp_path / "run.jsonl", *drawn, steps=200, batch=32)
    code, out, _ = observe(capsys, log, *asked)
    assert code == 1 and "DOES NOT MATCH the law:" in out and says in out, out


def test_a_failing_log_names_the_laws_it_passes(capsys, tmp_path):
    code, out, _ = observe(capsys, write_log(tmp_path / "run.jsonl", "trtllm", 3.6, 4), "trtllm", 2.6, 4)
    assert code == 1 and "  the log passes the law of: TensorRT-LLM one-model at AL 3.6" in out


def test_a_length_outside_1_to_k_plus_1_fails_naming_its_line(capsys, tmp_path):
    log = tmp_path / "run.jsonl"
    lines = [{"step": s, "request": r, "accept_length": 2} for s in range(3) for r in range(2)]
    lines[4]["accept_length"] = 5
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = observe(capsys, log, "vllm", 2.0, 3, "--json", str(tmp_path / "v.json"))
    assert code == 1 and "FAIL  lengths: 1 lengths outside 1..4 (K=3): line 5: accept_length=5" in out
    record = json.loads((tmp_path / "v.json").read_text())
    assert record["status"] == "fail" and record["evidence"]["outside"] == 1


def test_the_record_is_a_runtime_verification_with_its_power(capsys, tmp_path):
    log = write_log(tmp_path / "run.jsonl", "vllm", 2.6, 3)
    code, out, _ = observe(capsys, log, "vllm", 2.6, 3, "--json", str(tmp_path / "v.json"))
    record = json.loads((tmp_path / "v.json").read_text())
    assert code == 0 and record["schema"] == "simacc.observe/2" and record["status"] == "pass"
    low, high = record["evidence"]["interval"]
    assert low <= record["observed_al"] <= high and record["tolerance"] == pytest.approx((high - low) / 2)
    assert record["expected_al"] == pytest.approx(2.6) and record["false_alarm"] == 1e-6
    power = record["power"]
    assert power["detectable_shift"] < 0.1 and power["probability"] == 0.99 and power["units"] == 120 * 32
    assert f"power: it would see a shift of AL by {power['detectable_shift']:.3f} or more in 99% of runs" in out
    evidence = record["evidence"]
    assert evidence["records"] == 120 * 32 and evidence["steps"] == 120 and evidence["requests"] == 32
    assert evidence["setting"] == "synthetic_acceptance_length=2.6" and len(evidence["sha256"]) == 64
    assert evidence["format"] == "records" and evidence["judged"] == "records"
    assert [c["name"] for c in evidence["checks"]] == ["lengths", "requests draw their own", "no drift",
                                                       "no serial dependence", "mean", "distribution"]
    assert f"observed AL {record['observed_al']:.4f}" in out


def test_a_log_from_stdin_is_read(capsys, tmp_path, monkeypatch):
    import io
    import sys

    data = write_log(tmp_path / "run.jsonl", "sglang", 2.6, 3, 4096, 2).read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = observe(capsys, "-", "sglang", 2.6, 3)
    assert code == 0 and out.startswith("<stdin> (records): 8192 records, 4096 steps, 2 requests"), out


@pytest.mark.skipif(not html_pages.plots_available(), reason="needs matplotlib: pip install -e '.[plots]'")
def test_the_page_shows_the_verdict_and_opens_with_its_plots(capsys, tmp_path):
    page = tmp_path / "v.html"
    code, out, _ = observe(capsys, write_log(tmp_path / "run.jsonl", "sglang", 2.6, 3), "vllm", 2.6, 3,
                           "--html", str(page))
    parsed = Page(page.read_text())
    assert code == 1 and parsed.title.endswith("does not match the law of vLLM at AL 2.6, K = 3")
    assert len(parsed.images) == 1 and out.strip() in "".join(parsed.text)
    screenshot(page, tmp_path / "shot.png")
    assert red_pixels(tmp_path / "shot.png") > 1000


def test_without_matplotlib_the_page_shows_the_run_against_the_law_as_a_text_chart(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(html_pages, "plots_available", lambda: False)
    page = tmp_path / "v.html"
    code, out, _ = observe(capsys, write_log(tmp_path / "run.jsonl", "sglang", 2.6, 3), "vllm", 2.6, 3,
                           "--html", str(page))
    parsed = Page(page.read_text())
    text = "".join(parsed.text)
    assert code == 1 and not parsed.images and "pip install matplotlib" in text and out.strip() in text
    assert "L over 3840 draws, observed (#) against expected (=)" in text, text
    assert "(the band drawn: the per-point Chernoff band the verdict judged)" in text


GOOD = '{"step": 0, "request": 0, "accept_length": 2}\n'
BAD_LOGS = [  # (the log's text, what the error says)
    (GOOD + '{"step": 0, "request": 1, "accept_len', "run.jsonl:2: not JSON at column 27 (Unterminated string "
                                                   "starting at): a truncated last line?"),
    (GOOD + "{'step': 1}\n" + GOOD, "run.jsonl:2: not JSON at column 2 (Expecting property name enclosed in "
                                       "double quotes)"),
    (GOOD + "[1, 2, 3]\n", "run.jsonl:2: a JSON list, but should be an object with step, request, accept_length"),
    (GOOD + '{"step": 1, "request": 0}\n', "run.jsonl:2: no 'accept_length' field"),
    ('{"request": 0, "accept_length": 2}\n', "run.jsonl:1: no 'step' field"),
    (GOOD + '{"step": 1, "request": 0, "accept_length": 2.0}\n', "run.jsonl:2: accept_length=2.0, but should be an "
                                                                 "integer"),
    (GOOD + '{"step": 1, "request": 0, "accept_length": true}\n', "run.jsonl:2: accept_length=true, but should be"),
    (GOOD + '{"step": "1", "request": 0, "accept_length": 2}\n', 'run.jsonl:2: step="1", but should be an integer'),
    (GOOD + '{"step": 1, "request": null, "accept_length": 2}\n', "run.jsonl:2: request=null, but should be an "
                                                                  "integer or a string"),
    (GOOD + GOOD, "run.jsonl:2: request 0 twice in step 0 (first on line 1)"),
    (GOOD + '{"step": 2, "request": 0, "accept_length": 2}\n', "run.jsonl: step 1 has no request (the log's steps "
                                                               "run from 0 to 2"),
    ("\n  \n", "run.jsonl: no records"),
]


@pytest.mark.parametrize("text, said", BAD_LOGS, ids=[said.split(": ", 1)[1][:40] for _, said in BAD_LOGS])
def test_an_unreadable_log_is_a_usage_error_that_names_its_line_and_writes_nothing(capsys, tmp_path, text, said):
    log = tmp_path / "run.jsonl"
    log.write_text(text)
    code, out, err = observe(capsys, log, "vllm", 2.6, 3, "--json", str(tmp_path / "v.json"), "--html",
                             str(tmp_path / "v.html"))
    assert code == 2 and out == "" and said in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]


@pytest.mark.parametrize("argv, said", [
    (["--engine", "trtllm-two-model", "--length", "2.6"],
     "TensorRT-LLM two-model cannot take AL 2.6: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.6 is not an integer"),
    (["--engine", "vllm", "--length", "5"], "vLLM cannot take AL 5: synthetic_acceptance_length=5 is refused"),
    (["--engine", "vllm", "--length", "2.6", "--json", "no/such/folder/v.json"], "no such folder no/such/folder"),
])
def test_an_al_the_engine_cannot_take_or_a_missing_folder_is_a_usage_error(capsys, tmp_path, argv, said):
    log = write_log(tmp_path / "run.jsonl", "vllm", 2.6, 3, steps=2, batch=2)
    code = cli.main(["observe", str(log), "--steps", "3", *argv])
    _, err = capsys.readouterr()
    assert code == 2 and said in err, err


def test_a_log_that_is_not_utf8_or_not_there_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "run.jsonl").write_bytes(GOOD.encode() + b"\xff\n")
    code, _, err = observe(capsys, tmp_path / "run.jsonl", "vllm", 2.6, 3)
    assert code == 2 and "run.jsonl: not UTF-8 text (byte 46)" in err
    code, _, err = observe(capsys, tmp_path / "missing.jsonl", "vllm", 2.6, 3)
    assert code == 2 and "missing.jsonl: No such file or directory" in err


def test_an_unknown_engine_is_a_usage_error(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["observe", "x.jsonl", "--engine", "tgi", "--length", "2", "--steps", "3"])
    assert exit_.value.code == 2 and "invalid choice: 'tgi'" in capsys.readouterr().err


def test_a_log_too_small_to_see_a_shift_of_a_tenth_is_inconclusive_never_a_match(capsys, tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text(GOOD.replace('"accept_length": 2', '"accept_length": 3'))
    code, out, _ = observe(capsys, log, "vllm", 2.6, 3, "--json", str(tmp_path / "v.json"))
    record = json.loads((tmp_path / "v.json").read_text())
    assert code == 6 and "MATCHES" not in out and record["status"] == "inconclusive", out
    assert "power: it would see no shift at all (too few draws) or more" in out
    assert "INCONCLUSIVE: every check passed, but the log is too small to see a shift of AL by 0.1" in out
    code, out, _ = observe(capsys, write_log(tmp_path / "run.jsonl", "vllm", 2.6, 3, 10, 32), "vllm", 2.6, 3)
    assert code == 6 and "(it sees 0.2" in out and "a log of about 2,560 records would" in out, out


def drifting(path, steps=400, batch=8, seed=0):
    """vLLM at K = 4, AL 2.4 for the first half of the run and 2.8 for the second: pooled, the
    law of AL 2.6 exactly."""
    run = engine_outputs.draws("vllm", 2.4, 4, steps // 2, batch, seed)
    run += engine_outputs.draws("vllm", 2.8, 4, steps - steps // 2, batch, seed + 1)
    return engine_outputs.records(path, run)


def sticky(path, steps=400, batch=64, seed=0):
    """vLLM at K = 3, AL 2.6: each request draws its length once and keeps it at every step."""
    first = engine_outputs.draws("vllm", 2.6, 3, 1, batch, seed)[0]
    return engine_outputs.records(path, [first] * steps)


@pytest.mark.parametrize("seed", range(3))
def test_a_drifting_run_fails_as_drift_not_as_lockstep(capsys, tmp_path, seed):
    code, out, _ = observe(capsys, drifting(tmp_path / "run.jsonl", seed=seed), "vllm", 2.6, 4)
    assert code == 1 and "FAIL  no drift: the mean length of the first half differs from the second's by -0." in out
    assert "the acceptance length drifts within the run" in out and "lockstep" not in out, out


@pytest.mark.parametrize("seed", range(3))
def test_lengths_that_stay_with_a_request_fail_as_serial_dependence(capsys, tmp_path, seed):
    code, out, _ = observe(capsys, sticky(tmp_path / "run.jsonl", seed=seed), "vllm", 2.6, 3)
    assert code == 1 and "FAIL  no serial dependence" in out, out
    assert "a request's consecutive lengths are alike" in out and "a request's length depends on its earlier" in out
    assert "lockstep" not in out and "pass  no drift" in out, out


def shortened(run, k, seed=0):
    """``(run, drafted)``: each request drafts fewer than ``k`` at its last steps (``k - 1``
    down to 0 over the last ``k`` steps), its length the walk's over those drafts (a walk over
    ``d`` drafts accepts ``min(a, d)`` of what it would over ``k``)."""
    steps = len(run)
    drafted = [[min(k, steps - 1 - s) for _ in step] for s, step in enumerate(run)]
    return [[min(n, d + 1) for n, d in zip(step, ds)] for step, ds in zip(run, drafted)], drafted


def test_a_record_with_fewer_drafts_is_judged_against_the_walk_over_them(capsys, tmp_path):
    run, drafted = shortened(engine_outputs.draws("llama.cpp", 2.6, 3, 400, 64, 5), 3)
    log = engine_outputs.records(tmp_path / "run.jsonl", run, drafted)
    code, out, _ = observe(capsys, log, "llama.cpp", 2.6, 3, "--json", str(tmp_path / "v.json"))
    assert code == 0 and "(and 192 records of fewer drafts)" in out, out
    assert "(and the 192 records with fewer drafts within their walks' bands)" in out
    assert json.loads((tmp_path / "v.json").read_text())["evidence"]["fewer_drafts"] == 192


def test_records_with_fewer_drafts_that_do_not_walk_fail_naming_their_count(capsys, tmp_path):
    run, drafted = shortened(engine_outputs.draws("llama.cpp", 2.6, 3, 400, 64, 5), 3)
    run[-2] = [2] * 64  # one draft, always accepted: the walk over one draft accepts it with p = 0.55
    code, out, _ = observe(capsys, engine_outputs.records(tmp_path / "run.jsonl", run, drafted), "llama.cpp", 2.6, 3)
    assert code == 1 and "FAIL  distribution: P(accept_length <= 1) = 0.0000 among the 64 records with drafted=1" in out


@pytest.mark.parametrize("engine, drafted, said", [
    ("vllm", 4, "run.jsonl:1: drafted=4, more than K = 3"),
    ("sglang", 2, "run.jsonl:1: drafted=2, sglang match-expected's law over fewer drafts than K is not a walk simacc "
                  "knows: leave such steps out"),
    ("vllm", -1, "run.jsonl:1: drafted=-1, but should be an integer >= 0"),
])
def test_a_draft_count_the_law_cannot_judge_is_a_usage_error(capsys, tmp_path, engine, drafted, said):
    log = tmp_path / "run.jsonl"
    log.write_text(json.dumps({"step": 0, "request": 0, "accept_length": 2, "drafted": drafted}) + "\n")
    code, _, err = observe(capsys, log, engine, 2.6, 3)
    assert code == 2 and said in err, err


def vllm_run(steps=400, batch=64, seed=7):
    return engine_outputs.draws("vllm", 2.6, 3, steps, batch, seed)


@pytest.mark.parametrize("write, judged, said", [
    (lambda path: engine_outputs.vllm_responses(path, vllm_run(), 3), "records",
     "(vllm-responses): 25600 records, 400 steps, 64 requests"),
    (lambda path: engine_outputs.vllm_responses(path, vllm_run(), 3, detailed=False), "counts",
     "(vllm-responses): 25600 steps counted (a histogram: the distribution and the mean are judged)"),
    (lambda path: engine_outputs.vllm_prometheus(path, vllm_run(), 3), "counts", "(vllm-prometheus): 25600 steps"),
    (lambda path: engine_outputs.sglang_log(path, engine_outputs.draws("sglang", 2.6, 3, 4096, 2, 7)), "records",
     "(sglang-log): 4096 records, 4096 steps, 1 requests"),
    (lambda path: engine_outputs.sglang_responses(path, engine_outputs.draws("sglang", 2.6, 3, 4096, 2, 7)), "counts",
     "(sglang-responses): 4096 steps counted"),
])
def test_an_engines_own_output_is_read_as_it_writes_it(capsys, tmp_path, write, judged, said):
    engine = "sglang" if "sglang" in said else "vllm"
    code, out, _ = observe(capsys, write(tmp_path / "out.txt"), engine, 2.6, 3, "--json", str(tmp_path / "v.json"))
    record = json.loads((tmp_path / "v.json").read_text())
    assert code == 0 and said in out and record["evidence"]["judged"] == judged, out
    assert record["evidence"]["format"] == said.split(")")[0].lstrip("(")


def test_sglangs_two_decimals_are_read_and_a_batch_mean_is_not_one_length(capsys, tmp_path):
    log = engine_outputs.sglang_log(tmp_path / "server.log", engine_outputs.draws("sglang", 2.6, 3, 4096, 2, 7))
    assert "accept len: 3.00," in log.read_text()
    code, out, _ = observe(capsys, log, "sglang", 2.6, 3)
    assert code == 0 and "MATCHES the law" in out, out
    per_request = engine_outputs.sglang_log(tmp_path / "server.log", engine_outputs.draws("vllm", 2.6, 3, 400, 8, 7))
    code, out, _ = observe(capsys, per_request, "sglang", 2.6, 3)
    assert code == 1 and "FAIL  one length per step: line 3: accept len 2.62 at step 0" in out, out
    assert "a mean over requests of different lengths, but sglang match-expected draws one length" in out


def test_a_wider_log_interval_gives_the_mean_alone_with_its_power(capsys, tmp_path):
    log = engine_outputs.sglang_log(tmp_path / "server.log", engine_outputs.draws("sglang", 2.6, 3, 40960, 1, 7), 40)
    code, out, _ = observe(capsys, log, "sglang", 2.6, 3, "--decode-log-interval", "40", "--json",
                           str(tmp_path / "v.json"))
    record = json.loads((tmp_path / "v.json").read_text())
    assert code == 0 and "a mean over 40960 steps (only the mean is judged)" in out, out
    assert [c["name"] for c in record["evidence"]["checks"]] == ["lengths", "mean"]
    assert "(the law's spread, and the printed rounding)" in out and record["power"]["detectable_shift"] < 0.1


def test_two_prometheus_scrapes_are_subtracted_and_short_drafts_fail(capsys, tmp_path):
    earlier = [[2] * 64] * 50  # an earlier run, every step accepting one draft
    before = engine_outputs.vllm_prometheus(tmp_path / "before.prom", earlier, 3, base=1000)
    after = engine_outputs.vllm_prometheus(tmp_path / "after.prom", earlier + vllm_run(), 3, base=1000)
    code, out, _ = observe(capsys, after, "vllm", 2.6, 3, "--before", str(before))
    assert code == 0 and "25600 steps counted" in out and "pass  K drafts each" in out, out
    tokens = f"{float(3 * (25600 + 3200) + 1000)}"
    after.write_text(after.read_text().replace(f"}} {tokens}", f"}} {float(float(tokens) - 100)}"))
    code, out, _ = observe(capsys, after, "vllm", 2.6, 3, "--before", str(before))
    assert code == 1 and "some steps drafted fewer, which the law does not cover" in out, out


@pytest.mark.parametrize("distribution, judged", [(True, "counts"), (False, "mean")])
def test_atoms_stats_are_read_as_a_histogram_or_a_mean(capsys, tmp_path, distribution, judged):
    stats = engine_outputs.atom_mtp_stats(tmp_path / "mtp_stats.json", engine_outputs.draws("atom", 3.5, 4, 400, 64, 7),
                                          4, distribution)
    code, out, _ = observe(capsys, stats, "atom", 3.5, 4, "--json", str(tmp_path / "v.json"))
    record = json.loads((tmp_path / "v.json").read_text())
    assert code == 0 and record["evidence"]["judged"] == judged and "(atom-mtp-stats)" in out, out


DAMAGED = [  # (file name, text, engine, options, what the error says)
    ("run.csv", "step,request,accept_length\n0,0,2\n", "vllm", [], "run.csv: an unknown format (its first line: "
     "'step,request,accept_length'); expected one of: records (simacc's JSON Lines"),
    ("out.jsonl", '{"id": "x", "metrics": {"speculative_decoding": null}}\n', "vllm", [],
     "out.jsonl:1: no metrics.speculative_decoding (start vLLM with --per-request-spec-decode-metrics detailed"),
    ("m.prom", 'vllm:spec_decode_num_drafts_total{engine="0"} 10.0\n', "vllm", [],
     "vllm:spec_decode_num_accepted_tokens_per_pos_total has positions [], but --steps says K = 3"),
    ("m.prom", "# HELP x y\nx_total 1.0\n", "vllm", ["--format", "vllm-prometheus"],
     "m.prom: no vLLM spec-decode counters"),
    ("server.log", "[x] The server is fired up\n", "sglang", ["--format", "sglang-log"],
     "server.log: no 'Decode batch ... accept len: X.XX' line"),
    ("server.log", "Decode batch, #running-req: 1, accept len: 3.00, x\n", "vllm", [],
     "server.log: sglang's log, but --engine vllm"),
    ("mtp.json", '{"enabled": true, "distribution": {"2": 3', "atom", ["--format", "atom-mtp-stats"],
     "mtp.json: not JSON at line 1 column 42 (Expecting ',' delimiter): expected ATOM's /debug/mtp_stats"),
    ("mtp.json", '{"enabled": false, "total_draft_tokens": 0, "total_accepted_tokens": 0, "acceptance_rate": 0.0, '
     '"average_tokens_per_forward": 0.0, "distribution": {}, "distribution_percent": {}}', "atom", [],
     "not ATOM's /debug/mtp_stats with \"enabled\": true"),
]


@pytest.mark.parametrize("name, text, engine, options, said", DAMAGED, ids=[d[4][:40] for d in DAMAGED])
def test_an_unknown_or_damaged_format_is_a_usage_error_naming_what_was_expected(capsys, tmp_path, name, text, engine,
                                                                               options, said):
    (tmp_path / name).write_text(text)
    code, out, err = observe(capsys, tmp_path / name, engine, 2.6, 3, *options, "--json", str(tmp_path / "v.json"))
    assert code == 2 and out == "" and said in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def shapes():
    """Logs in several orders: by step, by request, requests that come and go, and a run whose
    steps mix two lengths (the lockstep check's find)."""
    import random

    rng = random.Random(1)
    run = engine_outputs.draws("vllm", 2.6, 3, 60, 12, 4)
    by_step = [(s, r, n) for s, step in enumerate(run) for r, n in enumerate(step)]
    by_request = sorted(by_step, key=lambda x: (x[1], x[0]))
    coming = [x for x in by_step if rng.random() < 0.7]
    shuffled = sorted(by_step, key=lambda x: (x[0], rng.random()))
    sticky_ = [(s, r, run[0][r]) for s in range(60) for r in range(12) if rng.random() < 0.9]
    return {"by step": by_step, "by request": by_request, "coming and going": coming, "shuffled": shuffled,
            "sticky": sticky_}


@pytest.mark.parametrize("shape", list(shapes()))
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_block_read_at_once_is_judged_as_its_lines_read_one_by_one(capsys, tmp_path, monkeypatch, shape, engine):
    from simacc.commands.serving import observe_formats

    monkeypatch.setattr(observe_formats, "CHUNK", 997)  # many blocks, pairs and requests across them
    records = shapes()[shape]
    plain, other = tmp_path / "plain.jsonl", tmp_path / "other.jsonl"
    plain.write_text("".join(json.dumps({"step": s, "request": r, "accept_length": n}) + "\n" for s, r, n in records))
    other.write_text("".join(json.dumps({"request": r, "step": s, "accept_length": n}) + "\n" for s, r, n in records))
    verdicts = []
    for log in (plain, other):
        observe(capsys, log, engine, 2.6, 3, "--json", str(tmp_path / f"{log.stem}.json"))
        record = json.loads((tmp_path / f"{log.stem}.json").read_text())
        for key in ("log", "sha256"):
            del record["evidence"][key]
        verdicts.append(record)
    assert verdicts[0] == verdicts[1]


def test_a_long_read_says_how_far_it_has_got_on_stderr_only_when_asked_or_on_a_terminal(capsys, tmp_path):
    log = write_log(tmp_path / "run.jsonl", "vllm", 2.6, 3, 400, 64)
    code, out, err = observe(capsys, log, "vllm", 2.6, 3)
    assert code == 0 and err == ""
    code, out, err = observe(capsys, log, "vllm", 2.6, 3, "--progress")
    lines = err.splitlines()
    assert code == 0 and len(lines) == 2 and "MATCHES" in out, err
    assert lines[0].startswith("simacc observe: reading ") and "21,612 records, 1 MB (84% of 1 MB)" in lines[0], err
    assert lines[1].endswith("25,600 records, 1 MB (100% of 1 MB)"), err


def test_on_a_terminal_the_progress_line_is_rewritten_in_place_and_cleared(capsys, tmp_path, monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = cli.main(["observe", str(write_log(tmp_path / "run.jsonl", "vllm", 2.6, 3, 400, 64)), "--engine", "vllm",
                     "--length", "2.6", "--steps", "3"])
    shown = terminal.getvalue()
    assert code == 0 and shown.startswith("\rsimacc observe: reading ") and shown.endswith("\r"), repr(shown)
    assert "\n" not in shown and "MATCHES" in capsys.readouterr().out


def test_before_is_only_for_a_prometheus_scrape(capsys, tmp_path):
    log = write_log(tmp_path / "run.jsonl", "vllm", 2.6, 3, 2, 2)
    code, _, err = observe(capsys, log, "vllm", 2.6, 3, "--before", str(log))
    assert code == 2 and "--before is for two vllm-prometheus scrapes, but LOG is records" in err, err


@pytest.mark.skipif(not html_pages.plots_available(), reason="needs matplotlib: pip install -e '.[plots]'")
def test_the_page_of_a_histogram_draws_the_run_without_its_steps(capsys, tmp_path):
    page = tmp_path / "v.html"
    scrape = engine_outputs.vllm_prometheus(tmp_path / "m.prom", vllm_run(), 3)
    code, out, _ = observe(capsys, scrape, "vllm", 2.6, 3, "--html", str(page))
    parsed = Page(page.read_text())
    assert code == 0 and parsed.title.endswith("matches the law of vLLM at AL 2.6, K = 3") and len(parsed.images) == 1
