"""Mutants of vLLM's synthetic acceptance (CONTRACT.md §13-§18), one mistake each, from the
defect class §18.5 lists, and correct alternatives in other shapes.

Each function has the signature of the layout it implements (the settings, the conversion,
the decision, V1's sampler, V2's) and is built from the reference's steps
(:mod:`simacc.contract.vllm`), so its mistake is the one step that differs. Nothing is
registered yet: the properties that kill them come with the vLLM contracts' wiring (issue
28, phase 2). The comment above each names the claim (the property to be) that should kill
it, and which others also would.
"""

import math

import torch

from simacc.contract import vllm as ref
from simacc.contract import vllm_v2 as ref2

# -- the settings (§13) ------------------------------------------------------------------------


def _solve(total, fn, low=0.0, high=1.0):
    """The ``x`` in ``[low, high]`` with ``fn(x) = total`` for an increasing ``fn``
    (bisection to float precision)."""
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if fn(mid) < total else (low, mid)
    return (low + high) / 2


def _rates_or_schedule(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length, schedule):
    """The reference's checks and rates; a length goes through ``schedule(d, K)`` instead."""
    rates = ref.resolve_synthetic_rates(num_speculative_tokens=num_speculative_tokens,
                                        synthetic_acceptance_rates=synthetic_acceptance_rates,
                                        synthetic_acceptance_length=synthetic_acceptance_length)
    if synthetic_acceptance_length is None:
        return rates
    return schedule(float(synthetic_acceptance_length) - 1.0, num_speculative_tokens)


# killed by: length_resolves_to_the_minimum_variance_schedule (also the samplers' spread of
# the accepted count, which the law's per-position rates fix)
def geometric_decay_schedule(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                             synthetic_acceptance_length=None):
    """A length becomes conditional rates b * 0.85**i with b solved for the mean (ROCm ATOM #1850): right mean, wider spread."""

    def schedule(drafts, k):
        def mean(base, decay):
            return sum(math.prod(base * decay**j for j in range(i + 1)) for i in range(k))

        decay = 0.85 if mean(1.0, 0.85) >= drafts else _solve(drafts, lambda d: mean(1.0, d), 0.85, 1.0)
        base = _solve(drafts, lambda b: mean(b, decay))
        return [math.prod(base * decay**j for j in range(i + 1)) for i in range(k)]

    return _rates_or_schedule(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length,
                              schedule)


# killed by: length_resolves_to_the_minimum_variance_schedule
def constant_conditional_schedule(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                                  synthetic_acceptance_length=None):
    """A length becomes one conditional rate p with p + p**2 + ... + p**K = L - 1 (llama.cpp #27711's law)."""

    def schedule(drafts, k):
        p = _solve(drafts, lambda q: sum(q ** (i + 1) for i in range(k)))
        return [p ** (i + 1) for i in range(k)]

    return _rates_or_schedule(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length,
                              schedule)


# killed by: length_resolves_to_the_minimum_variance_schedule, the_schedule_keeps_the_mean_length
def schedule_fraction_rounded(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                              synthetic_acceptance_length=None):
    """The schedule's fractional entry d - floor(d) is rounded to 0 or 1, so the mean length is off."""

    def schedule(drafts, k):
        full = int(drafts)
        return ([1.0] * full + [float(round(drafts - full))] + [0.0] * (k - full - 1))[:k]

    return _rates_or_schedule(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length,
                              schedule)


# -- the conversion (§14) -----------------------------------------------------------------------------


# killed by: conditional_rates_are_quotients_of_the_unconditional_ones (also the samplers'
# per-position rates, fed through it)
def unconditional_used_as_conditional(*, unconditional_rates, device="cpu"):
    """Returns the unconditional rates p_i as the conditional ones (no division by p_{i-1})."""
    ref.conditional_rates(unconditional_rates=unconditional_rates)  # the same checks
    return torch.tensor([float(p) for p in unconditional_rates], dtype=torch.float32, device=device)


# -- the decision given the uniforms (§15) ----------------------------------------------------------


def _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
              target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    counts = list(num_draft_tokens)
    flat, real = ref.grid(counts, draft_token_ids.device)
    drafts, uniforms = draft_token_ids[flat], uniform_probs[flat]
    rejected = torch.where(is_greedy[:, None], target_argmax[flat], recovered_token_ids[flat])
    return mistake(flat, real, drafts, uniforms, synthetic_conditional_rates, rejected, bonus_token_ids.reshape(-1))


# killed by: placeholder_drafts_are_never_accepted
def accepts_placeholders(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                         target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """A -1 placeholder is accepted like a real draft when its uniform is below the rate, and emitted as token -1 (vLLM #46533)."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        as_tokens = torch.where(drafts < 0, 0, drafts)  # the walk no longer sees the placeholder
        accepted = ref.walk(as_tokens, real, uniforms, rates)
        return ref.emit(accepted, real.sum(1), drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


# killed by: a_rejection_emits_the_targets_token
def emits_the_rejected_draft(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                             target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """On a rejection it emits the rejected draft itself instead of the target's argmax or the recovered token."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        accepted = ref.walk(drafts, real, uniforms, rates)
        return ref.emit(accepted, real.sum(1), drafts, drafts, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


# killed by: exactly_one_token_follows_the_accepted_drafts
def bonus_after_a_rejection(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                            target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """After a rejection's token it also appends the bonus (two tokens past the accepted drafts)."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        accepted = ref.walk(drafts, real, uniforms, rates)
        out = ref.emit(accepted, real.sum(1), drafts, rejected, bonus)
        cols = torch.arange(out.shape[1], device=out.device)
        after = (cols == accepted[:, None] + 1) & (accepted < real.sum(1))[:, None]
        return torch.where(after, bonus.to(torch.int32)[:, None], out)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


# correct: a Python loop over requests, from the contract's prose (§15)
def per_request_loop(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Correct: walks each request in a Python loop, one draft at a time."""
    counts = list(num_draft_tokens)
    out = torch.full((len(counts), max(counts, default=0) + 1), -1, dtype=torch.int32)
    drafts, uniforms = draft_token_ids.tolist(), uniform_probs.tolist()
    rates = synthetic_conditional_rates.to(torch.float64).tolist()
    start = 0
    for r, n in enumerate(counts):
        emitted = []
        for i in range(n):
            if drafts[start + i] >= 0 and uniforms[start + i] < rates[i]:
                emitted.append(drafts[start + i])
                continue
            source = target_argmax if bool(is_greedy[r]) else recovered_token_ids
            emitted.append(int(source[start + i]))
            break
        else:
            emitted.append(int(bonus_token_ids[r, 0]))
        out[r, : len(emitted)] = torch.tensor(emitted, dtype=torch.int32)
        start += n
    return out.to(draft_token_ids.device)


# correct: the first failure found with argmax over a sentinel column, not a running product
def first_failure_by_argmax(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                            target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Correct: the accepted count is the index of the first failing draft, found with argmax."""

    def count(flat, real, drafts, uniforms, rates, rejected, bonus):
        fails = ~(real & (drafts >= 0) & (uniforms < rates[: drafts.shape[1]]))
        sentinel = torch.ones((drafts.shape[0], 1), dtype=torch.bool, device=drafts.device)
        accepted = torch.cat([fails, sentinel], 1).to(torch.int8).argmax(1)
        return ref.emit(accepted, real.sum(1), drafts, rejected, bonus)

    return _decision(count, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


# -- V1's sampler with its own draws (§16.2) -----------------------------------------------------------


# killed by: requests_draw_independent_uniforms (semantic); at the exact level also
# uniforms_are_v1s_generator_calls and seeded_requests_reproduce
def one_uniform_for_the_batch(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                              generators, synthetic_conditional_rates):
    """Draws one uniform per draft position and shares it across every request of the batch."""
    counts = list(num_draft_tokens)
    shared = torch.rand((max(counts, default=0),), dtype=torch.float64, device=target_logits.device)
    flat, real = ref.grid(counts, target_logits.device)
    uniforms = torch.zeros(sum(counts), dtype=torch.float64, device=target_logits.device)
    uniforms[flat[real]] = shared.expand(flat.shape)[real]
    target_argmax = target_logits.argmax(dim=-1)
    if bool(is_greedy.all()):
        recovered = target_argmax
    else:
        q = ref.v1_exponentials(counts, target_logits.shape[1], generators, target_logits.device)
        recovered = ref.v1_recovered(counts, draft_token_ids, target_logits, q)
    return ref.decide(counts, draft_token_ids, uniforms, synthetic_conditional_rates, target_argmax, recovered,
                      bonus_token_ids, is_greedy)


# killed by: a_request_without_drafts_leaves_its_generator_alone (exact); also
# seeded_requests_reproduce across steps
def draws_without_drafts(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                         generators, synthetic_conditional_rates):
    """A seeded request with no drafts still draws its row of exponentials from its own generator."""
    counts = list(num_draft_tokens)
    device = target_logits.device
    uniforms = ref.v1_uniforms(counts, generators, device)
    target_argmax = target_logits.argmax(dim=-1)
    if bool(is_greedy.all()):
        recovered = target_argmax
    else:
        q = torch.empty((len(counts), target_logits.shape[1]), dtype=torch.float32, device=device).exponential_()
        for r, generator in generators.items():  # the n > 0 guard forgotten
            q[r].exponential_(generator=generator)
        recovered = ref.v1_recovered(counts, draft_token_ids, target_logits, q)
    return ref.decide(counts, draft_token_ids, uniforms, synthetic_conditional_rates, target_argmax, recovered,
                      bonus_token_ids, is_greedy)


# -- V2's sampler (§17) ------------------------------------------------------------------------------------


# correct (semantic level): its own uniforms, still a function of (seed, position) alone
def v2_with_a_generator_per_position(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                     num_speculative_steps, synthetic_conditional_rates):
    """Correct: draws each uniform from a torch generator seeded with a hash of (seed, position)."""
    start = cu_num_logits[:-1].tolist()
    n = (cu_num_logits.diff() - 1).tolist()
    rates = synthetic_conditional_rates.tolist()
    sampled = torch.full((len(n), num_speculative_steps + 1), -1, dtype=torch.int64)
    num_sampled = torch.zeros(len(n), dtype=torch.int32)
    for r, (s, count) in enumerate(zip(start, n)):
        key = lambda p: (int(seed[r]) * 0x9E3779B97F4A7C15 + int(p)) % 2**63  # noqa: E731
        gen = lambda p: torch.Generator().manual_seed(key(p))  # noqa: E731
        row, stop, removed = [], s + count, -1
        for i in range(count):
            draft = int(draft_sampled[s + i + 1])
            if draft >= 0 and float(torch.rand((), generator=gen(pos[s + i]))) < rates[i]:
                row.append(draft)
                continue
            stop, removed = s + i, draft
            break
        logits = target_logits[stop].to(torch.float32).cpu()
        if float(temperature[r]) == 0:
            token = int(logits.argmax())
        else:
            if removed >= 0:
                logits[removed] = -torch.inf
            noise = torch.rand(logits.shape, generator=gen(pos[stop] + (1 << 40))).clamp_min(1e-12)
            token = int((logits - torch.log(-torch.log(noise))).argmax())
        sampled[r, : len(row) + 1] = torch.tensor(row + [token])
        num_sampled[r] = len(row) + 1
    return sampled.to(target_logits.device), num_sampled.to(target_logits.device)


# killed by: requests_draw_independent_uniforms
def v2_one_uniform_per_position(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                num_speculative_steps, synthetic_conditional_rates):
    """Keys every uniform by the position alone, so requests at the same positions share them."""
    return ref2.synthetic_rejection_sample_v2(
        target_logits=target_logits, draft_sampled=draft_sampled, cu_num_logits=cu_num_logits, pos=pos,
        temperature=temperature, seed=torch.zeros_like(seed), num_speculative_steps=num_speculative_steps,
        synthetic_conditional_rates=synthetic_conditional_rates)
