"""The DFLASH block layout (CONTRACT.md §7): ``(bs, B)`` blocks, ``L`` in ``[1, B]``, counts in
``accept_len``/``commit_lens``, tokens in ``out_tokens``/``bonus``. Unlike the EAGLE function
there is no ``> 0`` check on the length."""

import torch

from simacc import strategies as sx
from simacc.harness.judging.assertions import check_equal
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

INPUTS = ("candidates", "target_predict", "next_token_logits")
cases = sx.dflash_cases()


def target_tokens(case):
    """``target_predict``, or the argmax of the logits viewed as ``(bs, B)`` without it."""
    if case.target_predict is not None:
        return case.target_predict.values
    return case.next_token_logits.values.argmax(dim=1).reshape(case.candidates.values.shape)


def token_role(case, length):
    """``role((i, j))`` of ``out_tokens``: a draft, the bonus, or zero padding past ``L`` (§7.2)."""
    target = "target_predict" if case.target_predict is not None else "argmax(next_token_logits)"

    def role(index):
        i, j = index
        if j < length - 1:
            return f"row {i}, j={j}: draft {j + 1}, candidates[{i}, {j + 1}]"
        if j == length - 1:
            return f"row {i}, j={j}: the bonus, {target}[{i}, {j}]"
        return f"row {i}, j={j}: padding (j >= L), zeroed"

    return role


def check_counts(simacc, outcome, case):
    """accept_len is L - 1 and commit_lens L in every row; returns L."""
    __tracebackhide__ = True
    length = support.length_of(simacc, outcome, case, "commit_lens")
    accept_len, commit_lens = outcome.args["accept_len"], outcome.args["commit_lens"]
    check_equal("accept_len", accept_len, torch.full_like(accept_len, length - 1), case, length,
                lambda index: f"row {index[0]} counts the L - 1 accepted drafts")
    check_equal("commit_lens", commit_lens, torch.full_like(commit_lens, length), case, length,
                lambda index: f"row {index[0]} commits L tokens, the drafts and the bonus")
    return length


def check_fixed_tokens(simacc, outcome, case):
    """bonus and every element of out_tokens hold the fixed id: the one the call passed, or the
    implementation's default."""
    __tracebackhide__ = True
    passed = case.fixed_token_id is not None
    fixed = case.fixed_token_id if passed else simacc.impl.fixed_token_id
    role = f"fixed mode writes the fixed_token_id passed, {fixed}," if passed else "fixed mode writes the fixed id"
    for name in ("bonus", "out_tokens"):
        got = outcome.args[name]
        check_equal(name, got, torch.full_like(got, fixed), case, role=lambda index: f"{role} to every element")


def check_real_tokens(outcome, case, length):
    """out_tokens is the drafts, the bonus, then zeros; bonus is the target's token at L - 1."""
    __tracebackhide__ = True
    bs, block = case.out_tokens.values.shape
    accepted = support.drafts_then_bonus(case.candidates.values, target_tokens(case), length)
    expected = torch.cat([accepted, torch.zeros((bs, block - length), dtype=torch.int64)], dim=1)
    check_equal("out_tokens", outcome.args["out_tokens"].cpu(), expected, case, length, token_role(case, length))
    check_equal("bonus", outcome.args["bonus"].cpu(), accepted[:, length - 1], case, length,
                lambda index: token_role(case, length)((index[0], length - 1)))


@claim(sx.DFLASH, case=cases)
def test_dflash_counts_are_length_minus_one_and_length(simacc, case):
    """accept_len becomes L - 1 and commit_lens L, in every row (§7.2)."""
    check_counts(simacc, simacc.run(case), case)


@claim(sx.DFLASH, case=sx.dflash_cases(modes=("fixed",)))
def test_dflash_fixed_mode_fills_bonus_and_tokens_with_the_fixed_id(simacc, case):
    """Fixed mode writes the fixed id (``fixed_token_id`` when the call passes one) to bonus and
    to every element of out_tokens (§7.2)."""
    check_fixed_tokens(simacc, simacc.run(case), case)


@claim(sx.DFLASH, case=sx.dflash_cases(modes=("real-draft-token",)))
def test_dflash_real_mode_tokens_are_drafts_then_bonus(simacc, case):
    """Real mode: out_tokens is the drafts, then the bonus, then zeros; bonus is target_predict[:, L-1] (§7.2)."""
    outcome = simacc.run(case)
    check_real_tokens(outcome, case, support.length_of(simacc, outcome, case, "commit_lens"))


@claim(sx.DFLASH, case=sx.dflash_server_batches())
def test_dflash_a_servers_batch_is_simulated_like_a_small_one(simacc, case):
    """A batch of 4103 requests (blocks of 256 to 4096 rows and a tail of seven) gets the counts and tokens of §7.2 (§11.3)."""
    outcome = simacc.run(case)
    length = check_counts(simacc, outcome, case)
    if case.token_mode == "real-draft-token":
        check_real_tokens(outcome, case, length)
    else:
        check_fixed_tokens(simacc, outcome, case)


@claim(sx.DFLASH, case=cases)
def test_dflash_inputs_are_never_written(simacc, case):
    """candidates, target_predict and next_token_logits are never written (§7)."""
    support.check_inputs_untouched(simacc.run(case), case, INPUTS)


@claim(sx.DFLASH, levels=("exact",), case=sx.dflash_cases(min_bs=1))
def test_dflash_length_matches_the_documented_draw(simacc, case):
    """DFLASH: L is exactly the documented draw, with max_len = B (§7.2)."""
    outcome = simacc.run(case)
    got = outcome.args["commit_lens"].long().cpu()
    length = support.documented_draws(case)[0]
    check_equal("L (commit_lens)", got, torch.full_like(got, length), case, length,
                lambda index: f"row {index[0]}'s commit_lens")
    support.check_documented_draws(outcome, case)


@claim(sx.DFLASH, case=sx.dflash_cases(methods=sx.bad_methods()))
def test_dflash_rejects_unknown_method_before_writing(simacc, case):
    """DFLASH: an unknown method raises a ValueError naming it, before anything is written (§3.4)."""
    support.check_rejected_untouched(simacc.attempt(case), case, naming=case.simulate_acc_method)
