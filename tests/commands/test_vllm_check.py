"""vLLM's layouts through simacc's commands and plugin, as sglang's go: each layout is inferred
from its keyword names; ``simacc check`` finds a reference conformant and a mutant not, with a
replay command that ``simacc repro`` reproduces; ``--list`` names the properties; the pytest
plugin runs them.

Marked ``vllm``: vLLM's own code (0.33.0 or 0.34.0, whichever is on the path), through the glue
of :mod:`simacc.contract.vllm_glue` (the glue docs/vllm.md gives), checked by ``simacc check``
in a process of its own: failing as shipped only what it is known to (0.34.0's V2 accepts a
draft its grammar refuses), not conformant with one line of its synthetic path wrong (a
patched copy of the file in a tree of links to the rest). Skipped with the reason where vLLM
is not importable, or where the version has no such layout or file.
"""

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tests.contract.test_strategies import reaches

from simacc.commands import cli
from simacc.contract import vllm_glue
from simacc.harness.processes import forkserver
from simacc.harness.call import impl
from simacc.harness.config import contracts
from simacc.harness.model import repro_files as reprofile
from simacc.strategies import dspark as sd
from simacc.strategies import vllm as sv

GLUE = "simacc.contract.vllm_glue"
LAYOUTS = {  # contract: (the reference, the glue's function)
    "vllm_settings": ("resolve_synthetic_rates", "resolve_synthetic_rates"),
    "vllm_conversion": ("conditional_rates", "conditional_rates"),
    "vllm_decision": ("synthetic_accept", "v1_synthetic_accept"),
    "vllm_v1": ("synthetic_rejection_sample", "v1_synthetic_rejection_sample"),
    "vllm_v2": ("synthetic_rejection_sample_v2", "v2_synthetic_rejection_sample"),
}


@pytest.fixture
def workdir(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading an IMPL appends folders
    return tmp_path


@pytest.mark.parametrize("contract", list(LAYOUTS))
def test_each_layout_is_inferred_from_its_keyword_names(contract, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    reference, glue = LAYOUTS[contract]
    assert impl.load(f"simacc:{reference}").contract == contract
    assert impl.load(f"{GLUE}:{glue}").contract == contract  # vLLM is imported on the first call only


@pytest.mark.parametrize("strategy", [sv.synthetic_settings(), sv.bad_settings("knobs"), sv.bad_settings("range"),
                                      sv.conversion_cases(), sv.decision_cases(max_bs=8), sv.v1_cases(max_bs=8),
                                      sv.v2_cases(max_bs=8), sv.v2_cases(max_bs=8, masked=True), sd.dspark_length_cases(),
                                      sd.dspark_bonus_cases(max_bs=2, max_rows=2), sd.dspark_accept_cases(max_bs=8)],
                         ids=lambda s: repr(s)[:30])
def test_each_case_type_round_trips_through_a_repro_file(strategy):
    """float64 values (edge uniforms a float64 apart), NaN rates, -inf logits and a knob left out (null) included;
    DSpark's cases too (a vocabulary of thousands: small batches)."""

    def round_trip(case):
        contract = next(c.name for c in contracts.CONTRACTS.values() if c.case_name == type(case).__name__)
        record = reprofile.Repro("p", "m", contract, "x:y", "cpu", "", case)
        again = reprofile.parse(reprofile.dumps(record)).case
        assert reprofile.encode_case(again) == reprofile.encode_case(case) and again.problem() is None
        assert all(torch.equal(a.values, b.values) for a, b in zip(again.tensors().values(), case.tensors().values())
                   if not a.values.is_floating_point() or not a.values.isnan().any())
        return False

    assert not reaches(strategy, round_trip, examples=20)


def check(capsys, *argv, examples=5):
    code = cli.main(["check", "--device", "cpu", "--max-examples", str(examples), "--seed", "0", "-n", "0", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_v2_reference_is_conformant_and_its_tail_never_judged(workdir, capsys):
    code, out, _ = check(capsys, "simacc:synthetic_rejection_sample_v2", "--json", "v.json")
    data = json.loads((workdir / "v.json").read_text())
    assert code == 0 and "CONFORMANT: 18 pass" in out, out
    assert ("contract:  vllm_v2 (inferred from the signature); level semantic; refused drafts reach the sampler "
            "(§15.4)\n") in out  # no fixed token id
    assert data["verdict"] == "conformant" and {r["status"] for r in data["results"]} == {"pass"}


def test_a_mutant_is_not_conformant_and_its_replay_command_reproduces_it(workdir, capsys):
    spec = "simacc.zoo.vllm:accepts_placeholders"
    code, out, _ = check(capsys, spec, "--property", "vllm_placeholder_drafts_are_never_accepted", "--json", "v.json",
                         "--junitxml", "v.xml", examples=50)
    assert code == 1 and "NOT CONFORMANT" in out
    failed = json.loads((workdir / "v.json").read_text())["results"][0]
    first = failed["message"].splitlines()[0]
    assert first.startswith("the drafts request ") and ", but should be at most " in first, first
    assert "is a placeholder (-1) [K=" in first and "requests]" in first  # the request, its role, the sizes
    assert failed["replay"] in out and failed["replay"] in (workdir / "v.xml").read_text()
    assert cli.main(shlex.split(failed["replay"])[1:]) == 1  # the printed command, as a user pastes it
    replayed = capsys.readouterr().out
    assert "FAIL: the drafts request " in replayed and "case=DecisionCase(" in replayed
    reference = ["repro", failed["repro"], "--impl", "simacc:synthetic_accept"]
    assert cli.main(reference) == 0 and "pass: " in capsys.readouterr().out


PORTS = Path(__file__).with_name("vllm_0_33_ports.py")
ALLOWED_SET = "vllm_a_token_the_target_forbids_is_never_emitted"


@pytest.mark.parametrize("port", ["v1_rejection_sample", "v2_rejection_sample"])
def test_a_port_of_vllm_0_33s_sampler_conforms_as_its_runner_calls_it(port, workdir, capsys):
    """CONTRACT.md §15.4: 0.33's runner cut a grammar's refused drafts before its sampler, whose
    synthetic mode reads no logit. A port of that sampler is conformant with the drafts so cut
    (``--refused-drafts runner``, as vLLM 0.33's own code is checked), and fails the allowed set
    alone where the sampler is handed them (the default: 0.34's runner)."""
    spec = f"{PORTS}:{port}"
    code, out, _ = check(capsys, spec, "--refused-drafts", "runner", "--property", ALLOWED_SET, examples=30)
    assert code == 0 and "CONFORMANT: 1 pass" in out and "; refused drafts cut by the runner (§15.4)" in out, out
    code, out, _ = check(capsys, spec, "--property", ALLOWED_SET, "--json", "v.json", examples=30)
    failed = json.loads((workdir / "v.json").read_text())["results"]
    assert code == 1 and [r["status"] for r in failed] == ["FAIL"], out
    assert "(draft 0, accepted)" in failed[0]["message"] and "is -inf)" in failed[0]["message"]


@pytest.mark.parametrize("greedy", [True, False])
def test_the_port_of_vllm_0_33s_v2_sampler_accepts_a_draft_its_logit_forbids(greedy):
    """What 0.33 does with a draft cut by top-k, top-p, min-p or bad words (its runner cut only a
    grammar's refusals): at rate 1 it is accepted and emitted, as vLLM 0.33's own V2 does
    (``test_reference_vllm.py``, marked vllm). The drafts [2, 5], draft 5's logit -inf."""
    ports = _ports()
    logits = torch.full((3, 8), -1.0)
    logits[0, 2] = logits[1, 3] = logits[2, 5] = 4.0
    logits[1, 5] = -torch.inf
    sampled, num_sampled = ports.v2_rejection_sample(
        target_logits=logits, draft_sampled=torch.tensor([0, 2, 5]), cu_num_logits=torch.tensor([0, 3]),
        pos=torch.tensor([9, 10, 11]), temperature=torch.tensor([0.0 if greedy else 1.0]), seed=torch.tensor([4]),
        num_speculative_steps=2, synthetic_conditional_rates=torch.ones(2))
    assert sampled[0, : int(num_sampled[0])].tolist() == [2, 5, 5]


def _ports():
    spec = importlib.util.spec_from_file_location("vllm_0_33_ports", PORTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_list_names_the_properties_of_the_layout(workdir, capsys):
    code = cli.main(["check", "simacc:conditional_rates", "--list"])
    out = capsys.readouterr().out
    assert code == 0 and "vllm_conditional_rates_are_quotients_of_the_unconditional_ones" in out
    assert "vllm_decision_is_exact_given_the_uniforms" not in out and "2 properties apply" in out


def test_the_plugin_runs_the_properties_of_a_vllm_layout(workdir):
    # python -m pytest, forked from the session server this suite shares (its torch already imported)
    args = ["-m", "pytest", "--pyargs", "simacc.properties", "-q", "-p", "no:randomly",
            "--simacc-impl=simacc:resolve_synthetic_rates", "--simacc-max-examples=5", "-n", "0"]
    done = subprocess.run(forkserver.command(args), capture_output=True, text=True, cwd=workdir)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "8 passed" in done.stdout, done.stdout[-2000:]


# -- vLLM's own code (marked vllm; skipped where vLLM is not importable) ----------------------------------------


needs_vllm = pytest.mark.skipif(vllm_glue.unavailable() is not None, reason=str(vllm_glue.unavailable()))
# Triton's interpreter runs a request at a time (V2 ~75 ms): a few examples of each property as shipped, more
# of the one property a wrong line must fail; a call's limit for the law's batches of hundreds of requests
VLLM_OPTIONS = ("--device", "cpu", "--seed", "0", "-n", "0", "--timeout", "600")
AS_SHIPPED, WRONG = 5, 30  # examples per property


def check_vllm(tmp_path, glue, *, examples, pythonpath=None, properties=(), refused_drafts=None):
    """``simacc check`` of the glue's function in a process of its own, with ``--refused-drafts``
    as the version's runner places them (None) or as given; ``(exit code, verdict JSON, output)``."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    selected = [arg for pid in properties for arg in ("--property", pid)]
    placed = ("--refused-drafts", refused_drafts or vllm_glue.refused_drafts(glue))
    done = subprocess.run([sys.executable, "-m", "simacc", "check", f"{GLUE}:{glue}", *VLLM_OPTIONS, *placed,
                           "--max-examples", str(examples), *selected,
                           "--json", str(tmp_path / "v.json")], capture_output=True, text=True, cwd=tmp_path, env=env)
    return done.returncode, json.loads((tmp_path / "v.json").read_text()), done.stdout + done.stderr


def in_this_version(glue):
    """Skip where the vLLM on the path lacks the layout (0.34.0 removed V1's)."""
    try:
        for call in vllm_glue.CALLS[glue]:
            vllm_glue.find(glue, call.name)
    except vllm_glue.NotInThisVersion as gone:
        pytest.skip(str(gone))


def known_to_fail(contract):
    """What vLLM fails as shipped, each sampler checked as its version's runner calls it: from
    0.34.0 on, V2's runner leaves a draft its grammar refuses in, and the synthetic branch
    accepts it (docs/findings/vllm-0.34.0-refused-drafts.md)."""
    relies = contract == "vllm_v2" and vllm_glue.refused_drafts(LAYOUTS[contract][1]) == "sampler"
    return [ALLOWED_SET] if relies else []


@pytest.mark.vllm
@needs_vllm
@pytest.mark.parametrize("contract", list(LAYOUTS))
def test_vllm_as_shipped_fails_only_what_it_is_known_to(contract, tmp_path):
    in_this_version(LAYOUTS[contract][1])
    code, data, out = check_vllm(tmp_path, LAYOUTS[contract][1], examples=AS_SHIPPED)
    failed = [r["id"].split("[")[0] for r in data["results"] if r["status"] == "FAIL"]
    assert data["header"]["contract"] == contract and failed == known_to_fail(contract), out[-3000:]
    assert code == (1 if failed else 0), out[-3000:]


@pytest.mark.vllm
@needs_vllm
@pytest.mark.parametrize("contract", ["vllm_v1", "vllm_v2"])
def test_vllm_0_33s_samplers_fail_the_allowed_set_where_the_sampler_is_handed_the_refused_drafts(contract, tmp_path):
    """0.33's samplers, which its runner spared a grammar's refusals, checked as 0.34's runner
    uses them: their synthetic mode accepts the refused draft, as 0.34's does (§15.4)."""
    glue = LAYOUTS[contract][1]
    in_this_version(glue)
    if vllm_glue.refused_drafts(glue) != "runner":
        pytest.skip(f"vLLM {vllm_glue.version()}'s runner leaves the refused drafts to the sampler")
    code, data, out = check_vllm(tmp_path, glue, examples=AS_SHIPPED, properties=(ALLOWED_SET,),
                                 refused_drafts="sampler")
    assert code == 1 and [r["status"] for r in data["results"]] == ["FAIL"], out[-3000:]


# one line of vLLM's synthetic path made wrong: (file, or the files it has moved through, the line as shipped, the
# line instead, layout, property); a version without the file skips it
WRONG_LINES = {
    "V1's greedy kernel accepts a placeholder": (
        "vllm/v1/sample/rejection_sampler.py", "accepted = (uniform_prob < rate) and draft_token_id >= 0",
        "accepted = uniform_prob < rate", "v1_synthetic_accept", "vllm_placeholder_drafts_are_never_accepted"),
    "V1's greedy kernel emits the draft on a rejection": (
        "vllm/v1/sample/rejection_sampler.py", "token_id = draft_token_id if accepted else target_argmax_id",
        "token_id = draft_token_id", "v1_synthetic_accept", "vllm_a_rejection_emits_the_targets_token"),
    "V2's greedy path accepts a placeholder": (
        "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py", "\n                accepted &= is_valid_draft\n",
        "\n", "v2_synthetic_rejection_sample", "vllm_placeholder_drafts_are_never_accepted"),
    "the conversion returns the rates unconverted": (
        ("vllm/v1/spec_decode/utils.py", "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py"), "return [p / q if q > 0.0 else 0.0 for p, q in zip(rates, [1.0, *rates[:-1]])]",
        "return list(rates)", "conditional_rates", "vllm_conditional_rates_are_quotients_of_the_unconditional_ones"),
    "a schedule of the right mean and the wrong spread": (
        "vllm/config/speculative.py", "[1.0] * num_full + [num_drafts - num_full] + [0.0] * (n - num_full - 1)",
        "[num_drafts / n] * n", "resolve_synthetic_rates", "vllm_a_length_becomes_the_minimum_variance_schedule"),
}


def patched_tree(tmp_path, relative, shipped, instead):
    """A tree of links to vLLM's files (its dist-info beside) with ``relative`` (the first of
    them this version has) a copy whose one occurrence of ``shipped`` reads ``instead``; its
    folder, to go first on PYTHONPATH. Skipped where the version has none of the files."""
    source = Path(importlib.util.find_spec("vllm").origin).parent.parent
    here = [r for r in ((relative,) if isinstance(relative, str) else relative) if (source / r).is_file()]
    if not here:
        pytest.skip(f"vLLM {vllm_glue.version()} has no {relative}")
    relative = here[0]
    tree = tmp_path / "vllm-patched"
    tree.mkdir()
    for name in ["vllm", *(p.name for p in source.glob("vllm-*.dist-info"))]:
        subprocess.run(["cp", "-rs", str(source / name), str(tree / name)], check=True)
    target = tree / relative
    text = target.read_text()
    assert text.count(shipped) == 1, f"{relative} no longer has the line {shipped.strip()!r} once"
    target.unlink()
    target.write_text(text.replace(shipped, instead))
    return tree


@pytest.mark.vllm
@needs_vllm
@pytest.mark.parametrize("what", list(WRONG_LINES))
def test_vllm_with_one_line_wrong_is_not_conformant(what, tmp_path):
    relative, shipped, instead, glue, killer = WRONG_LINES[what]
    code, data, out = check_vllm(tmp_path, glue, examples=WRONG, properties=(killer,),
                                 pythonpath=patched_tree(tmp_path, relative, shipped, instead))
    assert code == 1 and [r["status"] for r in data["results"]] == ["FAIL"], out[-3000:]
