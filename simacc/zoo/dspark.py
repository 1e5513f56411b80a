"""sglang's DSpark layouts (CONTRACT.md §19-§21): one mistake each, and correct alternatives.

The correct steps are :func:`_count` (the step's count from the sampler), :func:`_pick_rows` and
:func:`_gumbel_max` (the bonus: the request's row, then a Gumbel-max sample seeded from one
``random.getrandbits(31)``) and :func:`_accept` with :func:`_write` (the accept's count and
bonus, then the buffers); each mutant writes one of them wrong. ``accept_bonus_at_the_real_mismatch``
is sglang 0.5.23's own greedy path without the fold (§21.3).
"""

import math
import os
import random

import torch

from simacc.contract.caller import DEFAULT_METHOD
from simacc.contract.sampling import sample_simulated_acc_len
from simacc.zoo.base import register

_RANKS = "ranks_agree_given_the_same_inputs_and_seed"


# -- the step's length (§19) --------------------------------------------------------------------


def _count(x, gamma, max_len=None):
    return sample_simulated_acc_len(x, DEFAULT_METHOD, gamma + 1 if max_len is None else max_len) - 1


@register("num_correct_drafts", "dspark_length_is_the_documented_draw", "dspark_length_is_a_count_of_drafts")
def length_stores_l(*, simulated_correct_len, simulate_acc_len, gamma):
    """Stores L, the tokens the step commits, where the buffer holds the correct-draft count L - 1."""
    simulated_correct_len.fill_(_count(simulate_acc_len, gamma) + 1)


@register("sampling bounds", "dspark_length_is_the_documented_draw", "dspark_length_follows_the_documented_law")
def length_tops_at_gamma(*, simulated_correct_len, simulate_acc_len, gamma):
    """Samples with max_len = gamma (the drafts) instead of gamma + 1 (the verify rows): never all gamma drafts."""
    simulated_correct_len.fill_(_count(simulate_acc_len, gamma, max_len=max(gamma, 1)))


def _own_length(x, width, uniform):
    """§9's law for the method read at import, from ``uniform`` (a float in [0, 1)) and, for the
    Gaussian, torch's normal draw."""
    if DEFAULT_METHOD == "multinomial":
        return int(round(min(max(torch.randn(()).item() + x, 1), width)))
    clamped = max(1.0, min(width, x)) if x == x else width
    low = math.floor(clamped)
    return low + int(low < width and uniform < clamped - low)


@register("correct", level="semantic")
def length_from_one_uniform(*, simulated_correct_len, simulate_acc_len, gamma):
    """Correct at the semantic level: the documented law of L from one uniform of torch's generator."""
    simulated_correct_len.fill_(_own_length(simulate_acc_len, gamma + 1, torch.rand(()).item()) - 1)


@register("rank", _RANKS, level="semantic")
def length_from_os_entropy(*, simulated_correct_len, simulate_acc_len, gamma):
    """Draws L by the documented law from a generator the operating system seeds anew at every call."""
    uniform = random.SystemRandom().random()
    simulated_correct_len.fill_(_own_length(simulate_acc_len, gamma + 1, uniform) - 1)


# -- the simulated bonus (§20) ------------------------------------------------------------------


def _pick_rows(target_logits, correct_len, bs, rows_per_request):
    rows = torch.arange(bs, device=target_logits.device) * rows_per_request + correct_len.to(target_logits.device)
    return target_logits.index_select(0, rows).double()


def _gumbel_max(scores, temperatures, seed, bs):
    noise = torch.rand(scores.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    gumbel = -torch.log(-torch.log(noise.clamp_min(1e-300))).to(scores.device)
    t = temperatures.reshape(bs, 1).to(scores.device, torch.float64)
    return torch.where(t > 0, scores / t.clamp_min(1e-300) + gumbel, scores).argmax(dim=1)


def _bonus(target_logits, correct_len, temperatures, bs, rows_per_request, seed=None):
    seed = random.getrandbits(31) if seed is None else seed
    return _gumbel_max(_pick_rows(target_logits, correct_len, bs, rows_per_request), temperatures, seed, bs)


@register("dtype", "dspark_bonus_is_one_token_a_request_on_the_logits_device")
def bonus_as_int32(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Returns the split kernel's int32 token indices, not int64 tokens."""
    return _bonus(target_logits, correct_len, temperatures, bs, rows_per_request).to(torch.int32)


@register("inputs", "dspark_bonus_inputs_are_never_written")
def bonus_tempers_the_logits_in_place(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Divides target_logits by each sampling request's temperature in place, so the caller's logits change."""
    t = temperatures.reshape(bs, 1).to(target_logits.dtype)
    target_logits.div_(torch.where(t > 0, t, 1.0).repeat_interleave(rows_per_request, dim=0))
    scores = _pick_rows(target_logits, correct_len, bs, rows_per_request)
    return _gumbel_max(scores, torch.where(t > 0, 1.0, t), random.getrandbits(31), bs)


@register("row", "dspark_greedy_bonus_is_the_argmax_of_the_simulated_row")
def bonus_misses_the_request_offset(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Reads row correct_len[r] for request r, forgetting its offset r * rows_per_request."""
    scores = target_logits.index_select(0, correct_len.to(target_logits.device)).double()
    return _gumbel_max(scores, temperatures, random.getrandbits(31), bs)


@register("row", "dspark_greedy_bonus_is_the_argmax_of_the_simulated_row")
def bonus_uses_the_first_correct_len(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Reads every request's row at correct_len[0], as if the length were always one for the batch."""
    shared = correct_len[:1].expand(bs)
    return _bonus(target_logits, shared, temperatures, bs, rows_per_request)


@register("law", "dspark_bonus_follows_the_tempered_softmax")
def bonus_multiplies_by_the_temperature(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Multiplies the logits by the temperature instead of dividing them by it."""
    t = temperatures.reshape(bs, 1).to(target_logits.device, torch.float64)
    scores = _pick_rows(target_logits, correct_len, bs, rows_per_request) * torch.where(t > 0, t, 1.0)
    return _gumbel_max(scores, torch.where(t > 0, 1.0, t), random.getrandbits(31), bs)


@register("law", "dspark_bonus_follows_the_tempered_softmax")
def bonus_uses_the_first_temperature(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Samples every request at the first request's temperature."""
    first = temperatures.reshape(-1)[:1].expand(bs)
    return _bonus(target_logits, correct_len, first, bs, rows_per_request)


@register("generator", "dspark_bonus_draws_afresh_at_every_call", "dspark_bonus_draws_one_seed_from_pythons_generator")
def bonus_seed_never_refilled(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Seeds its noise from a seed buffer that is never refilled (0), so every call draws the same noise."""
    return _bonus(target_logits, correct_len, temperatures, bs, rows_per_request, seed=0)


@register("generator", "dspark_bonus_draws_one_seed_from_pythons_generator")
def bonus_seeded_from_torch(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Takes its seed from torch's CPU generator, shifting the stream the next step's length is drawn from."""
    seed = int(torch.randint(0, 2**31, ()))
    return _bonus(target_logits, correct_len, temperatures, bs, rows_per_request, seed=seed)


@register("rank", _RANKS, level="semantic")
def bonus_seeded_from_the_os(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Seeds its noise from the operating system's entropy, so each tensor-parallel rank draws its own bonus."""
    seed = int.from_bytes(os.urandom(4), "little") >> 1
    return _bonus(target_logits, correct_len, temperatures, bs, rows_per_request, seed=seed)


@register("correct")
def bonus_by_inverse_cdf(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Correct: a uniform a request, from a generator seeded by one random.getrandbits(31), through the CDF."""
    stream = random.Random(random.getrandbits(31))
    uniforms = torch.tensor([stream.random() for _ in range(bs)], dtype=torch.float64)
    rows = target_logits.double().cpu()[torch.arange(bs) * rows_per_request + correct_len.cpu()]
    t = temperatures.reshape(bs, 1).double().cpu()
    cdf = torch.softmax(rows / torch.where(t > 0, t, 1.0), dim=1).cumsum(dim=1)
    sampled = (cdf <= uniforms[:, None] * cdf[:, -1:]).sum(dim=1).clamp_max(rows.shape[1] - 1)
    return torch.where(t[:, 0] > 0, sampled, rows.argmax(dim=1)).to(target_logits.device)


# -- the accept under a simulated length (§21) --------------------------------------------------


def _leading(drafts, target):
    return (drafts == target[:, : drafts.shape[1]]).long().cumprod(dim=1).sum(dim=1)


def _accept(candidates, target_predict, simulated_correct_len, bonus_in, bonus_parts, *, tie_high=False,
            real_mismatch=False, every_match=False):
    """``(correct, bonus)`` per row: the count, then the supplied bonus or the target's at it."""
    bs, width = candidates.shape
    drafts = candidates[:, 1:].long()
    target = None if target_predict is None else target_predict.reshape(bs, width).long()
    real = None
    if target is not None:
        real = (drafts == target[:, : width - 1]).long().sum(dim=1) if every_match else _leading(drafts, target)
    correct = real if simulated_correct_len is None else simulated_correct_len.long().expand(bs)
    if bonus_parts is not None:
        values, indices, vocab = bonus_parts
        values, indices = values[:bs], indices[:bs].long()
        best = values == values.amax(dim=1, keepdim=True)
        lowest = indices.masked_fill(~best, vocab).amin(dim=1)
        bonus = indices.masked_fill(~best, -1).amax(dim=1) if tie_high else lowest
    elif bonus_in is not None:
        bonus = bonus_in[:bs].long()
    else:
        bonus = target.gather(1, (real if real_mismatch else correct)[:, None]).squeeze(1)
    return correct, bonus


def _write(candidates, seq_lens, verify_lens, gate, outs, correct, bonus, *, zero_past=False, gated=True,
           clear_all=False):
    bs = candidates.shape[0]
    commit = correct + 1
    tokens = torch.cat([candidates[:, 1:].long(), candidates.new_zeros((bs, 1), dtype=torch.long)], dim=1)
    if zero_past:
        tokens.masked_fill_(torch.arange(tokens.shape[1], device=tokens.device) > correct[:, None], 0)
    tokens.scatter_(1, correct[:, None], bonus[:, None])
    outs["correct_len_out"][:bs] = correct
    outs["bonus_out"][:bs] = bonus
    (outs["cap_trim_lens_out"] if clear_all else outs["cap_trim_lens_out"][:bs]).zero_()
    outs["commit_lens_out"][:bs] = commit
    outs["new_seq_lens_out"][:bs] = seq_lens[:bs] + commit
    outs["out_tokens_out"][:bs] = tokens
    if outs["gated_commit_lens_out"] is not None:
        capped = torch.minimum(commit, verify_lens[:bs].long())
        outs["gated_commit_lens_out"][:bs] = capped * gate.long() if gated else capped


def _tail(mistake=None):
    """The accept with ``mistake`` (a keyword of :func:`_accept` or :func:`_write`) made."""
    chosen = {} if mistake is None else {mistake: True}

    def tail(*, candidates, target_predict, seq_lens, verify_lens, gate, correct_len_out, bonus_out, cap_trim_lens_out,
             commit_lens_out, new_seq_lens_out, out_tokens_out, simulated_correct_len=None, bonus_in=None,
             bonus_parts=None, gated_commit_lens_out=None):
        outs = {"correct_len_out": correct_len_out, "bonus_out": bonus_out, "cap_trim_lens_out": cap_trim_lens_out,
                "commit_lens_out": commit_lens_out, "new_seq_lens_out": new_seq_lens_out,
                "out_tokens_out": out_tokens_out, "gated_commit_lens_out": gated_commit_lens_out}
        accepting = {k: v for k, v in chosen.items() if k in ("tie_high", "real_mismatch", "every_match")}
        correct, bonus = _accept(candidates, target_predict, simulated_correct_len, bonus_in, bonus_parts, **accepting)
        writing = {k: v for k, v in chosen.items() if k not in accepting}
        _write(candidates, seq_lens, verify_lens, gate, outs, correct, bonus, gated=not writing.pop("ungated", False),
               **writing)

    return tail


def _mutant(name, mistake, bug, *killers):
    tail = _tail(mistake)
    tail.__name__ = tail.__qualname__ = name
    tail.__doc__ = bug
    globals()[name] = register("accept", *killers)(tail)


_ACCEPT_MISTAKES = (
    ("accept_bonus_at_the_real_mismatch", "real_mismatch",
     "Takes the bonus from the target at the real first mismatch and writes it at the simulated position "
     "(sglang 0.5.23's greedy paths without the fold).",
     "dspark_accept_commits_the_drafts_then_the_targets_token_at_the_simulated_position"),
    ("accept_counts_every_matching_draft", "every_match",
     "Counts every draft that matches the target, not only those before the first mismatch.",
     "dspark_accept_counts_follow_the_simulated_length"),
    ("accept_parts_tie_to_the_highest_index", "tie_high",
     "Breaks a tie between the bonus's per-split maxima toward the highest token index.",
     "dspark_accept_commits_the_drafts_then_the_targets_token_at_the_simulated_position"),
    ("accept_zeroes_past_the_bonus", "zero_past",
     "Zeroes out_tokens past the bonus, as DFLASH does, where the separate ops keep the drafts.",
     "dspark_accept_keeps_the_drafts_past_the_bonus"),
    ("accept_ignores_the_gate", "ungated",
     "Writes min(commit_lens, verify_lens) without the gate, so a step whose gate is 0 still commits KV.",
     "dspark_accept_gates_the_committed_lengths"),
    ("accept_clears_the_whole_buffer", "clear_all",
     "Zeroes every row of cap_trim_lens_out, not only the batch's.",
     "dspark_accept_writes_only_the_batch_rows_and_never_its_inputs"),
)
for _name, _mistake, _bug, *_killers in _ACCEPT_MISTAKES:
    _mutant(_name, _mistake, _bug, *_killers)


@register("correct")
def accept_per_row_loop(*, candidates, target_predict, seq_lens, verify_lens, gate, correct_len_out, bonus_out,
                        cap_trim_lens_out, commit_lens_out, new_seq_lens_out, out_tokens_out,
                        simulated_correct_len=None, bonus_in=None, bonus_parts=None, gated_commit_lens_out=None):
    """Correct: the accept a row at a time in Python, each output element written on its own."""
    bs, width = candidates.shape
    tokens = candidates.tolist()
    target = None if target_predict is None else target_predict.reshape(bs, width).tolist()
    for i in range(bs):
        drafts = tokens[i][1:]
        if simulated_correct_len is not None:
            correct = int(simulated_correct_len[0])
        else:
            correct = next((j for j, d in enumerate(drafts) if d != target[i][j]), width - 1)
        if bonus_parts is not None:
            pairs = zip(bonus_parts[0][i].tolist(), bonus_parts[1][i].tolist())
            bonus = min(pairs, key=lambda pair: (-pair[0], pair[1]))[1]
        elif bonus_in is not None:
            bonus = int(bonus_in[i])
        else:
            bonus = target[i][correct]
        row = drafts + [0]
        row[correct] = bonus
        for j, token in enumerate(row):
            out_tokens_out[i, j] = token
        correct_len_out[i], bonus_out[i], cap_trim_lens_out[i] = correct, bonus, 0
        commit_lens_out[i] = correct + 1
        new_seq_lens_out[i] = int(seq_lens[i]) + correct + 1
        if gated_commit_lens_out is not None:
            gated_commit_lens_out[i] = min(correct + 1, int(verify_lens[i])) * int(gate[0])
