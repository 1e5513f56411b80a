"""DSpark's accept under a simulated length (CONTRACT.md §21.2, §21.3): each row commits the
simulated count of drafts (or its own greedy count without one), then a bonus, which is the
target's token at the position it is committed at, as EAGLE (§4.5) and DFLASH (§7.2) commit it
in their real-draft-token mode, unless one is supplied; only rows ``[:bs]`` of the static output
buffers are written.
"""

import dataclasses

import torch

from simacc import strategies as sx
from simacc.harness.config import grad_modes
from simacc.harness.judging.assertions import check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import TensorArg
from simacc.properties import dspark, serving, support
from simacc.strategies.dspark import dspark_accept_server_batches

cases = sx.dspark_accept_cases()


def _first_rows(outcome, name, case):
    return outcome.args[name][: case.bs].cpu()


def _length(case):
    return case.simulated + 1 if case.simulated is not None else "not simulated (each row's greedy accept)"


@claim(sx.DSPARK_ACCEPT, case=cases)
def test_dspark_accept_counts_follow_the_simulated_length(simacc, case):
    """correct_len is the simulated count (else the leading matches), commit_lens one more, new_seq_lens adds it (§21.2)."""
    _check_counts(simacc.run(case), case)


def _check_counts(outcome, case):
    rows = dspark.rows(case)
    correct = torch.tensor([row.correct for row in rows])
    where = "the simulated count" if case.simulated is not None else "the drafts matching the target up to a mismatch"
    expected = {
        "correct_len_out": (correct, f"the correct count: {where}"),
        "commit_lens_out": (correct + 1, "the tokens committed: the correct count and the bonus"),
        "new_seq_lens_out": (case.seq_lens.values[: case.bs] + correct + 1, "seq_lens plus the tokens committed"),
        "cap_trim_lens_out": (torch.zeros_like(correct), "no cap trim in a static step, 0"),
    }
    for name, (values, said) in expected.items():
        got = _first_rows(outcome, name, case)
        check_equal(f"{name}[:bs]", got, values.to(got.dtype), case, _length(case),
                    lambda index, said=said: f"row {index[0]}: {said}")


@claim(sx.DSPARK_ACCEPT, case=cases)
def test_dspark_accept_commits_the_drafts_then_the_targets_token_at_the_simulated_position(simacc, case):
    """out_tokens commits the drafts, then at the simulated position the target's token there (or one supplied) (§21.3)."""
    _check_commits(simacc.run(case), case)


def _check_commits(outcome, case):
    rows = dspark.rows(case)
    bonus = _first_rows(outcome, "bonus_out", case)
    check_equal("bonus_out[:bs]", bonus, torch.tensor([row.bonus for row in rows], dtype=bonus.dtype), case,
                _length(case), lambda index: f"row {index[0]}'s bonus: {rows[index[0]].source}")
    tokens = _first_rows(outcome, "out_tokens_out", case)
    past = torch.arange(case.max_len) > torch.tensor([[row.correct] for row in rows])  # not committed: another claim
    expected = torch.tensor([row.tokens for row in rows], dtype=tokens.dtype).masked_fill(past, 0)
    check_equal("out_tokens_out[:bs] up to commit_lens", tokens.masked_fill(past, 0), expected, case, _length(case),
                lambda index: rows[index[0]].token_role(index[1]))


@claim(sx.DSPARK_ACCEPT, case=cases)
def test_dspark_accept_keeps_the_drafts_past_the_bonus(simacc, case):
    """Past the bonus, out_tokens keeps the drafts and its last column is 0, as the separate ops leave it (§21.2)."""
    _check_kept(simacc.run(case), case)


def _check_kept(outcome, case):
    rows = dspark.rows(case)
    tokens = _first_rows(outcome, "out_tokens_out", case)
    committed = torch.arange(case.max_len) <= torch.tensor([[row.correct] for row in rows])  # another claim's
    expected = torch.tensor([row.tokens for row in rows], dtype=tokens.dtype).masked_fill(committed, 0)
    check_equal("out_tokens_out[:bs] past the bonus", tokens.masked_fill(committed, 0), expected, case, _length(case),
                lambda index: rows[index[0]].token_role(index[1]))


@claim(sx.DSPARK_ACCEPT, case=sx.dspark_accept_cases(gated=True))
def test_dspark_accept_gates_the_committed_lengths(simacc, case):
    """gated_commit_lens, where asked for, is min(commit_lens, verify_lens) times the gate (§21.2)."""
    _check_gated(simacc.run(case), case)


def _check_gated(outcome, case):
    commit = torch.tensor([row.correct + 1 for row in dspark.rows(case)])
    gate = int(case.gate.values[0])
    expected = torch.minimum(commit, case.verify_lens.values[: case.bs]) * gate
    got = _first_rows(outcome, "gated_commit_lens_out", case)
    check_equal("gated_commit_lens_out[:bs]", got, expected.to(got.dtype), case, _length(case),
                lambda index: f"row {index[0]}: min(commit_lens, verify_lens[{index[0]}]) times the gate ({gate})")


@claim(sx.DSPARK_ACCEPT, case=cases)
def test_dspark_accept_writes_only_the_batch_rows_and_never_its_inputs(simacc, case):
    """Rows past bs of every output buffer, and every input, are left as they were (§21.2)."""
    _check_only_the_batch(simacc.run(case), case)


def _check_only_the_batch(outcome, case):
    support.check_inputs_untouched(outcome, case, dspark.ACCEPT_INPUTS)
    if case.part_val is not None:
        for k, name in enumerate(("part_val", "part_idx")):
            fresh = getattr(case, name).on(outcome.device)
            check_equal(f"{name} (bonus_parts[{k}])", outcome.args["bonus_parts"][k], fresh, case,
                        role=lambda index: "an input, never written")
    for name in dspark.ACCEPT_OUTPUTS:
        if getattr(case, name) is None:
            continue
        got = outcome.args[name]
        fresh = getattr(case, name).on(outcome.device)
        fresh[: case.bs] = got[: case.bs]  # the batch's rows are the other properties' business
        check_equal(f"{name}'s storage (rows past bs = {case.bs})", support.whole_storage(got),
                    support.whole_storage(fresh), case,
                    role=lambda index: "a row past the batch, or the storage around the buffer: never written")


@claim(sx.DSPARK_ACCEPT, case=dspark_accept_server_batches())
def test_dspark_accept_a_servers_batch_is_accepted_like_a_small_one(simacc, case):
    """A batch of 1025 rows in static buffers of 1032, simulated or not, gets every output of §21.2 (§21.1)."""
    outcome = simacc.run(case)
    for judge in (_check_counts, _check_commits, _check_kept, _check_gated, _check_only_the_batch):
        judge(outcome, case)


@claim(sx.DSPARK_ACCEPT, case=sx.dspark_accept_cases(min_gamma=1, simulated=True))
def test_dspark_accept_reads_the_simulated_count_at_every_call(simacc, case):
    """Called again on the same tensors, simulated_correct_len and the gate refilled in place (a graph's replay), it reads the new count and gate (§19.3, §21.2)."""
    outcome = simacc.run(case)
    _check_counts(outcome, case)
    _check_commits(outcome, case)
    again = dataclasses.replace(case, simulated_correct_len=TensorArg(torch.tensor([(case.simulated + 1) % case.max_len])),
                                gate=TensorArg(1 - case.gate.values))
    with grad_modes.entered(simacc.context):  # an inference tensor is written in inference mode only
        for name in ("simulated_correct_len", "gate"):
            outcome.args[name].copy_(getattr(again, name).values)
    again = serving.Step(again, outcome.args, "called again on the earlier call's tensors, refilled")
    try:
        outcome = simacc.run(again)
    finally:
        simacc.last = (case, simacc.device)  # a repro replays both calls from the drawn case
    _check_counts(outcome, again)
    _check_commits(outcome, again)
    if case.gated_commit_lens_out is not None:
        _check_gated(outcome, again)
