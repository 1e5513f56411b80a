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


@register("sampling bounds", "dspark_length_is_the_documented_draw", "dspark_length_follows_the_documented_law")
def length_sized_for_8_drafts(*, simulated_correct_len, simulate_acc_len, gamma):
    """Samples with max_len = min(gamma, 8) + 1, as if a kernel's block of 8 drafts bounded the step: past 8 drafts never more than 8."""
    simulated_correct_len.fill_(_count(simulate_acc_len, gamma, max_len=min(gamma, 8) + 1))


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


def _gumbel(noise, device):
    return -torch.log(-torch.log(noise.clamp_min(1e-300))).to(device)


def _gumbel_max(scores, temperatures, seed, bs, noise=None):
    """The argmax of ``scores / T`` plus Gumbel noise (from ``seed``, or the uniforms ``noise``)
    where ``T > 0``, of ``scores`` elsewhere."""
    noise = _uniforms(scores.shape, seed) if noise is None else noise
    t = temperatures.reshape(bs, 1).to(scores.device, torch.float64)
    return torch.where(t > 0, scores / t.clamp_min(1e-300) + _gumbel(noise, scores.device), scores).argmax(dim=1)


def _uniforms(shape, seed):
    return torch.rand(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


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


@register("law", "dspark_bonus_follows_the_tempered_softmax")
def bonus_caps_the_temperature_at_5(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Clamps each temperature to at most 5, a sampler's usual maximum, so a hotter request draws from too sharp a law."""
    return _bonus(target_logits, correct_len, temperatures.clamp_max(5.0), bs, rows_per_request)


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


@register("law", "dspark_bonus_splits_tied_maxima_at_any_positive_temperature")
def bonus_noise_repeats_per_vocab_block(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Counts its noise from each 4096-token block's start, so tokens v and v + 4096 share noise and the lower wins their tie."""
    scores = _pick_rows(target_logits, correct_len, bs, rows_per_request)
    vocab = scores.shape[1]
    block = _uniforms((bs, min(vocab, 4096)), random.getrandbits(31))
    return _gumbel_max(scores, temperatures, None, bs, noise=block.repeat(1, -(-vocab // 4096))[:, :vocab])


@register("law", "dspark_bonus_splits_tied_maxima_at_any_positive_temperature")
def bonus_tiny_temperature_is_greedy(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Treats a temperature below the kernel's floor of 1e-5 as greedy, so tied maxima at T = 1e-6 go to the first."""
    t = temperatures.reshape(bs, 1)
    return _bonus(target_logits, correct_len, torch.where(t < 1e-5, 0.0, t), bs, rows_per_request)


@register("precision", "dspark_greedy_bonus_is_the_argmax_of_the_simulated_row")
def bonus_scores_in_half_precision(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Computes x / T plus the noise in float16, so at a tiny temperature scores overflow and the first infinite one wins."""
    scores = _pick_rows(target_logits, correct_len, bs, rows_per_request)
    noise = _gumbel(_uniforms(scores.shape, random.getrandbits(31)), scores.device)
    t = temperatures.reshape(bs, 1).to(scores.device, torch.float64)
    tempered = (scores.half() / t.clamp_min(1e-5).half() + noise.half()).double()
    return torch.where(t > 0, tempered, scores).argmax(dim=1)


@register("row", "dspark_greedy_bonus_is_the_argmax_of_the_simulated_row")
def bonus_ignores_the_row_stride(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Addresses the logits as row * V + v, so rows sliced from a wider (vocabulary-padded) buffer are read askew."""
    rows, vocab = target_logits.shape
    flat = target_logits.as_strided((rows, vocab), (vocab, 1))
    return _bonus(flat, correct_len, temperatures, bs, rows_per_request)


@register("generator", "dspark_bonus_draws_one_seed_for_a_servers_batch")
def bonus_seed_per_256_requests(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Launches its kernel over 256 requests at a time with a seed each, drawing more than once past 256 requests."""
    scores = _pick_rows(target_logits, correct_len, bs, rows_per_request)
    noise = torch.cat([_uniforms((min(256, bs - start), scores.shape[1]), random.getrandbits(31))
                       for start in range(0, bs, 256)])
    return _gumbel_max(scores, temperatures, None, bs, noise=noise)


@register("generator", "dspark_bonus_draws_one_seed_from_pythons_generator", "dspark_bonus_draws_one_seed_for_a_servers_batch")
def bonus_seed_per_vocab_block(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Launches a kernel per 4096-token block with a seed each, drawing more than once over a vocabulary past 4096."""
    scores = _pick_rows(target_logits, correct_len, bs, rows_per_request)
    vocab = scores.shape[1]
    noise = torch.cat([_uniforms((bs, min(4096, vocab - start)), random.getrandbits(31))
                       for start in range(0, vocab, 4096)], dim=1)
    return _gumbel_max(scores, temperatures, None, bs, noise=noise)


@register("correct")
def bonus_in_float32_at_a_floor_of_1e5(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Correct: sglang's kernel as §20.2 describes it, float32 x / max(T, 1e-5) plus Gumbel noise for every request."""
    generator = torch.Generator().manual_seed(random.getrandbits(31))
    rows = torch.arange(bs, device=target_logits.device) * rows_per_request + correct_len.to(target_logits.device)
    scores = target_logits.index_select(0, rows).float()
    noise = -torch.log(-torch.log(torch.rand(scores.shape, generator=generator))).to(scores.device)
    t = temperatures.reshape(bs, 1).to(scores.device, torch.float32).clamp_min(1e-5)
    return (scores / t + noise).argmax(dim=1)


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


def _targets(target_predict, bs, width, blocks_of_128):
    """The target's ``(bs, width)`` tokens; ``blocks_of_128`` offsets each block of 128 rows by
    ``start * (width - 1)``, a kernel's slip."""
    flat = target_predict.long()
    if not blocks_of_128:
        return flat.reshape(bs, width)
    starts = range(0, bs, 128)
    return torch.cat([flat[start * (width - 1):][: min(128, bs - start) * width].reshape(-1, width) for start in starts])


def _accept(candidates, target_predict, simulated_correct_len, bonus_in, bonus_parts, *, tie_high=False,
            real_mismatch=False, every_match=False, cached_count=False, bf16_parts=False, blocks_of_128=False,
            block_of_8=False):
    """``(correct, bonus)`` per row: the count, then the supplied bonus or the target's at it."""
    bs, width = candidates.shape
    drafts = candidates[:, 1:].long()
    target = None if target_predict is None else _targets(target_predict, bs, width, blocks_of_128)
    real = None
    if target is not None:
        real = (drafts == target[:, : width - 1]).long().sum(dim=1) if every_match else \
            _leading(drafts[:, :8] if block_of_8 else drafts, target)
    correct = real
    if simulated_correct_len is not None:
        if cached_count and not hasattr(simulated_correct_len, "cached_count"):
            simulated_correct_len.cached_count = simulated_correct_len.long().clone()  # the buffer is static
        count = simulated_correct_len.cached_count if cached_count else simulated_correct_len.long()
        correct = count.expand(bs)
    if bonus_parts is not None:
        values, indices, vocab = bonus_parts
        values, indices = values[:bs].to(torch.bfloat16 if bf16_parts else values.dtype), indices[:bs].long()
        best = values == values.amax(dim=1, keepdim=True)
        lowest = indices.masked_fill(~best, vocab).amin(dim=1)
        bonus = indices.masked_fill(~best, -1).amax(dim=1) if tie_high else lowest
    elif bonus_in is not None:
        bonus = bonus_in[:bs].long()
    else:
        bonus = target.gather(1, (real if real_mismatch else correct)[:, None]).squeeze(1)
    return correct, bonus


def _write(candidates, seq_lens, verify_lens, gate, outs, correct, bonus, *, zero_past=False, gated=True,
           clear_all=False, grid_from_seq_lens=False, cached_gate=False):
    bs = candidates.shape[0]
    if cached_gate and not hasattr(gate, "cached_gate"):
        gate.cached_gate = gate.clone()  # the buffer is static
    gate = gate.cached_gate if cached_gate else gate
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
    if grid_from_seq_lens:  # a program for each row of seq_lens: the rows past bs commit nothing
        rows = slice(bs, min(seq_lens.shape[0], outs["correct_len_out"].shape[0]))
        outs["correct_len_out"][rows], outs["commit_lens_out"][rows] = 0, 1
        outs["new_seq_lens_out"][rows] = seq_lens[rows] + 1


_ACCEPTING = ("tie_high", "real_mismatch", "every_match", "cached_count", "bf16_parts", "blocks_of_128", "block_of_8")


def _tail(mistake=None):
    """The accept with ``mistake`` (a keyword of :func:`_accept` or :func:`_write`) made."""
    chosen = {} if mistake is None else {mistake: True}

    def tail(*, candidates, target_predict, seq_lens, verify_lens, gate, correct_len_out, bonus_out, cap_trim_lens_out,
             commit_lens_out, new_seq_lens_out, out_tokens_out, simulated_correct_len=None, bonus_in=None,
             bonus_parts=None, gated_commit_lens_out=None):
        outs = {"correct_len_out": correct_len_out, "bonus_out": bonus_out, "cap_trim_lens_out": cap_trim_lens_out,
                "commit_lens_out": commit_lens_out, "new_seq_lens_out": new_seq_lens_out,
                "out_tokens_out": out_tokens_out, "gated_commit_lens_out": gated_commit_lens_out}
        accepting = {k: v for k, v in chosen.items() if k in _ACCEPTING}
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
    ("accept_counts_at_most_8_drafts", "block_of_8",
     "Compares only the first 8 drafts with the target, a block sized for 8, so a real count past 8 stops at 8.",
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
    ("accept_caches_the_simulated_count", "cached_count",
     "Reads the simulated count once per buffer object and keeps it, though each step refills the static buffer.",
     "dspark_accept_reads_the_simulated_count_at_every_call"),
    ("accept_caches_the_gate", "cached_gate",
     "Reads the gate once per buffer object and keeps it, as if captured with the graph, though each step refills it.",
     "dspark_accept_reads_the_simulated_count_at_every_call"),
    ("accept_parts_in_bfloat16", "bf16_parts",
     "Compares the bonus's per-split maxima in bfloat16, so maxima closer than its ulp tie and go to the lower index.",
     "dspark_accept_commits_the_drafts_then_the_targets_token_at_the_simulated_position"),
    ("accept_blocks_of_128_rows_slip", "blocks_of_128",
     "Offsets each block of 128 rows' targets by start * gamma, not start * (gamma + 1), so rows from 128 on misread.",
     "dspark_accept_a_servers_batch_is_accepted_like_a_small_one"),
    ("accept_grid_from_seq_lens", "grid_from_seq_lens",
     "Runs a program for every row of seq_lens, writing the static rows past bs as empty commits.",
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
