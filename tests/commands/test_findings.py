"""The reports in docs/findings/, written for an engine's maintainers (issue 55): each keeps as its
repro file a case the engine's own caller makes, the one its text shows, which the engine's code
fails (marked ``sglang`` and ``vllm``: run where that code is on the path) and the contract's
reference passes (tests/commands/test_repro.py); and each names who said what it cites from a pull
request, answers the token-mode objection (sglang) and says first that the kernel alone behaves
the same in both versions (vLLM)."""

import json
import re
from pathlib import Path

import pytest
import torch

from simacc.commands import cli
from simacc.contract import dspark_glue, vllm_glue
from simacc.harness.model import repro_files

REPO = Path(__file__).resolve().parents[2]
FINDINGS = REPO / "docs" / "findings"


class Report:
    """A report of docs/findings/: its page and its repro file."""

    def __init__(self, stem):
        self.name, self.md, self.json = stem, FINDINGS / f"{stem}.md", FINDINGS / f"{stem}.json"


DSPARK = Report("sglang-0.5.23-dspark-bonus-position")
VLLM = Report("vllm-0.34.0-refused-drafts")
CONTEXT = 2**16  # positions and prefix lengths of a request most models serve
PR_AUTHORS = {  # a pull request a report cites, and who wrote the words it relies on (read on GitHub)
    "29645": "weireweire", "32595": "saatwiknagpal", "46533": "njhill", "54166": "chengcuiping",
}


def case_of(report):
    return repro_files.load(report.json).case


def values(case, name):
    return getattr(case, name).values


def test_the_dspark_case_is_one_dsparks_static_epilogue_passes():
    """What ``_accept_static_greedy`` gives the tail (dspark_verify.py): fresh static buffers,
    the epilogue's gate on, every row verified whole (a simulated length above 1 needs a
    verify-all schedule, dspark_worker_v2.py:472-488), a prefix a request has, tokens of the
    vocabulary, a simulated count the sampler draws."""
    case = case_of(DSPARK)
    t = case.max_len
    assert (values(case, "verify_lens") == t).all() and values(case, "gate").tolist() == [1]
    assert ((values(case, "seq_lens") > 0) & (values(case, "seq_lens") + t < CONTEXT)).all()
    for name in ("correct_len_out", "bonus_out", "cap_trim_lens_out", "commit_lens_out", "new_seq_lens_out",
                 "out_tokens_out"):
        assert not values(case, name).any(), name
    tokens = torch.cat([values(case, "candidates").flatten(), values(case, "target_predict")])
    assert ((tokens >= 0) & (tokens < case.vocab)).all()
    assert 0 <= case.simulated < t and case.bonus_in is None and case.part_val is None


def test_the_vllm_case_is_one_vllms_v2_runner_passes():
    """What V2's runner gives the sampler: one segment of ``K + 1`` rows per request, the
    request's consecutive positions after a prefix it has, real drafts of the vocabulary, and
    logits that are finite but where a grammar's bitmask put ``-inf``."""
    case = case_of(VLLM)
    k = case.num_speculative_steps
    cu, pos = values(case, "cu_num_logits").tolist(), values(case, "pos")
    assert cu[0] == 0 and all(b - a == k + 1 for a, b in zip(cu, cu[1:]))
    for a, b in zip(cu, cu[1:]):
        assert pos[a:b].tolist() == list(range(int(pos[a]), int(pos[b - 1]) + 1)) and 0 < pos[a] <= pos[b - 1] < CONTEXT
    logits, drafts = values(case, "target_logits"), values(case, "draft_sampled")
    assert ((drafts >= 0) & (drafts < logits.shape[1])).all()
    assert (torch.isfinite(logits) | (logits == float("-inf"))).all() and torch.isfinite(logits).any(-1).all()
    assert (values(case, "request_seeds") >= 0).all()


def table(report):
    """``{argument: the value the report's table shows}`` for the table rows that give values."""
    shown = {}
    for line in report.md.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        if len(cells) == 2 and cells[1].startswith("`"):
            names = re.findall(r"`(\w+)`", cells[0])
            literals = re.findall(r"`(\[[^`]*\])`", cells[1])
            shown.update(zip(names, (json.loads(x) for x in literals[: len(names)])))
    return shown


@pytest.mark.parametrize("report", [DSPARK, VLLM], ids=lambda p: p.name)
def test_the_repro_file_is_the_case_the_report_shows(report):
    shown, case = table(report), case_of(report)
    assert len(shown) >= 3, shown
    for name, value in shown.items():
        assert values(case, name).tolist() == value, name


@pytest.mark.sglang
@pytest.mark.skipif(dspark_glue.unavailable() is not None, reason=str(dspark_glue.unavailable()))
@pytest.mark.parametrize("glue", ["static_accept_tail_torch", "static_accept_tail_triton"])
def test_sglangs_own_tail_fails_the_reports_case(glue, capsys, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    code = cli.main(["repro", str(DSPARK.json), "--impl", f"simacc.contract.dspark_glue:{glue}"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL: bonus_out[:bs][0]=50, but should be 12" in out, out


@pytest.mark.vllm
@pytest.mark.skipif(vllm_glue.unavailable() is not None, reason=str(vllm_glue.unavailable()))
def test_vllms_own_sampler_fails_the_reports_case_where_its_runner_passes_the_refused_draft(capsys):
    """0.34.0's runner passes the refused draft to the sampler; 0.33.0's made it -1 (the glue
    does what each runner does), so only 0.34.0 fails."""
    code = cli.main(["repro", str(VLLM.json), "--impl",
                     "simacc.contract.vllm_glue:v2_synthetic_rejection_sample"])
    out = capsys.readouterr().out
    keeps_the_draft = vllm_glue.find("v2_synthetic_rejection_sample", "grammar_invalid_drafts") is None
    assert code == (1 if keeps_the_draft else 0), out


def paragraphs(path):
    return [p for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]


@pytest.mark.parametrize("report", [DSPARK, VLLM], ids=lambda p: p.name)
def test_a_report_names_who_said_what_it_cites_from_a_pull_request(report):
    cited = [(n, p) for p in paragraphs(report.md) for n in re.findall(r"#(\d{4,6})\b", p)]
    assert cited
    for number, paragraph in cited:
        assert PR_AUTHORS[number] in paragraph, (number, paragraph)


@pytest.mark.parametrize("path", [REPO / "simacc" / "contract" / "CONTRACT.md", REPO / "README.md",
                                  *sorted((REPO / "docs").rglob("*.md"))], ids=lambda p: p.name)
def test_the_words_of_pr_54166_are_given_to_its_author(path):
    """Issue 55: they are chengcuiping's, the author's, answering reviewers, on a closed PR about
    replaying a sampling mask; they were cited as a vLLM reviewer's."""
    for paragraph in paragraphs(path):
        if "#54166" in paragraph:
            assert "chengcuiping" in paragraph and "reviewer on PR" not in paragraph, paragraph


def test_the_vllm_report_says_first_that_the_kernel_alone_is_unchanged_and_cites_what_vllm_intends():
    text = VLLM.md.read_text(encoding="utf-8")
    top, text = " ".join(text.split("\n## ")[0].split()), " ".join(text.split())
    assert "`[15, 0]`" in top and "0.33.0" in top and "not a change in the rejection kernel" in top
    for said in ("#46533", "trim_spec_tokens", "num_acceptable_drafts", "not a local fix", "FINISHED_ERROR"):
        assert said in text, said
    assert re.search(r"`vllm/v1/[\w/]+\.py:\d+", text)


def test_the_dspark_report_answers_the_token_mode_and_argues_from_sglangs_own_code():
    text = " ".join(DSPARK.md.read_text(encoding="utf-8").split())
    for said in ("SGLANG_SIMULATE_ACC_TOKEN_MODE", "`real-draft-token`", "`fixed`", "DSpark reads no token mode",
                 "#32595", "[[11, 50, 13, 0]]", "SGLANG_SIMULATE_ACC_LEN=1", "dspark_verify.py:1110",
                 "`:1131`", "`:1133-1142`", "CapCorrectLen", "`:651-655`"):
        assert said in text, said
    assert "§" not in text  # the case rests on sglang's own code and on what a user sees, not on simacc's contract
