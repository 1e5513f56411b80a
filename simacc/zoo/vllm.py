"""Mutants of vLLM's synthetic acceptance (CONTRACT.md §13-§18), one mistake each, from the
defect class §18.5 lists, and correct alternatives in other shapes.

Each function has the signature of the layout it implements (the settings, the conversion,
the decision, V1's sampler, V2's) and is built from the reference's steps
(:mod:`simacc.contract.vllm`), so its mistake is the one step that differs. A mutant of a
sampler whose mistake is in its law, not in V1's draws, is checked at the semantic level.
"""

import math

import torch

from simacc.contract import vllm as ref
from simacc.contract import vllm_v2 as ref2
from simacc.zoo.base import register

SEMANTIC = "semantic"

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


@register("schedule", "vllm_a_length_becomes_the_minimum_variance_schedule")
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


@register("schedule", "vllm_a_length_becomes_the_minimum_variance_schedule")
def constant_conditional_schedule(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                                  synthetic_acceptance_length=None):
    """A length becomes one conditional rate p with p + p**2 + ... + p**K = L - 1 (llama.cpp #27711's law)."""

    def schedule(drafts, k):
        p = _solve(drafts, lambda q: sum(q ** (i + 1) for i in range(k)))
        return [p ** (i + 1) for i in range(k)]

    return _rates_or_schedule(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length,
                              schedule)


@register("schedule", "vllm_a_length_becomes_the_minimum_variance_schedule")
def schedule_fraction_rounded(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                              synthetic_acceptance_length=None):
    """The schedule's fractional entry d - floor(d) is rounded to 0 or 1, so the mean length is off."""

    def schedule(drafts, k):
        full = int(drafts)
        return ([1.0] * full + [float(round(drafts - full))] + [0.0] * (k - full - 1))[:k]

    return _rates_or_schedule(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length,
                              schedule)


def _resolved(num_speculative_tokens, rates, length):
    return ref.resolve_synthetic_rates(num_speculative_tokens=num_speculative_tokens, synthetic_acceptance_rates=rates,
                                       synthetic_acceptance_length=length)


@register("rates", "vllm_rates_come_back_as_given")
def rates_rounded_to_float32(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                             synthetic_acceptance_length=None):
    """The rates given are kept as float32 values, so 0.9 comes back as 0.8999999761581421."""
    rates = _resolved(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length)
    if synthetic_acceptance_rates is None:
        return rates
    return [float(p) for p in torch.tensor(rates, dtype=torch.float32).tolist()]


@register("checks", "vllm_exactly_one_knob_is_accepted")
def length_ignored_when_rates_are_given(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                                        synthetic_acceptance_length=None):
    """Given both knobs, it takes the rates and ignores the length instead of raising."""
    if synthetic_acceptance_rates is not None:
        synthetic_acceptance_length = None
    return _resolved(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length)


@register("checks", "vllm_exactly_one_knob_is_accepted")
def knobs_given_by_their_truth(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                               synthetic_acceptance_length=None):
    """Asks whether the length is given by its truth, so rates with a length of 0.0 pass as rates alone."""
    return _resolved(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length or None)


@register("checks", "vllm_rates_of_another_count_than_k_are_rejected")
def rates_cut_to_k(*, num_speculative_tokens, synthetic_acceptance_rates=None, synthetic_acceptance_length=None):
    """Rates of another count than K are cut to K, or padded with zeros, instead of raising."""
    if synthetic_acceptance_rates is not None:
        k = num_speculative_tokens
        synthetic_acceptance_rates = (list(synthetic_acceptance_rates) + [0.0] * k)[:k]
    return _resolved(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length)


@register("checks", "vllm_a_rate_outside_zero_one_is_rejected")
def nan_rate_passes_the_range_check(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                                    synthetic_acceptance_length=None):
    """The range check is `p < 0 or p > 1`, which a NaN rate passes: it is returned as a rate."""
    if synthetic_acceptance_rates is None:
        return _resolved(num_speculative_tokens, None, synthetic_acceptance_length)
    checked, before = [], 1.0
    for p in synthetic_acceptance_rates:
        before = before if math.isnan(p) else p
        checked.append(before)
    _resolved(num_speculative_tokens, checked, synthetic_acceptance_length)  # the other checks
    return [float(p) for p in synthetic_acceptance_rates]


@register("checks", "vllm_increasing_rates_are_rejected")
def increasing_rates_accepted(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                              synthetic_acceptance_length=None):
    """Rates that rise somewhere are returned as given: the check that they never increase is missing."""
    if synthetic_acceptance_rates is None:
        return _resolved(num_speculative_tokens, None, synthetic_acceptance_length)
    _resolved(num_speculative_tokens, sorted(synthetic_acceptance_rates, reverse=True), synthetic_acceptance_length)
    return [float(p) for p in synthetic_acceptance_rates]


@register("checks", "vllm_a_length_outside_one_to_k_plus_one_is_rejected")
def length_clamped_into_range(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                              synthetic_acceptance_length=None):
    """A length outside [1, K + 1] is clamped into it instead of raising."""
    x = synthetic_acceptance_length
    if isinstance(x, float) and not math.isnan(x):
        x = min(max(x, 1.0), num_speculative_tokens + 1.0)
    return _resolved(num_speculative_tokens, synthetic_acceptance_rates, x)


@register("checks", "vllm_a_length_outside_one_to_k_plus_one_is_rejected")
def length_check_with_a_tolerance(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                                  synthetic_acceptance_length=None):
    """The length check tolerates rounding: a length within 1e-9 outside [1, K + 1] is clamped into it instead of raising."""
    x, top = synthetic_acceptance_length, num_speculative_tokens + 1.0
    if isinstance(x, float) and (1.0 - 1e-9 <= x < 1.0 or top < x <= top + 1e-9):
        x = min(max(x, 1.0), top)
    return _resolved(num_speculative_tokens, synthetic_acceptance_rates, x)


@register("correct")
def schedule_as_clamped_remainders(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                                   synthetic_acceptance_length=None):
    """Correct: rate i of a length is d - i clamped into [0, 1], with d = x - 1."""
    rates = _resolved(num_speculative_tokens, synthetic_acceptance_rates, synthetic_acceptance_length)
    if synthetic_acceptance_length is None:
        return rates
    drafts = float(synthetic_acceptance_length) - 1.0
    return [min(1.0, max(0.0, drafts - i)) for i in range(num_speculative_tokens)]


# -- the conversion (§14) -----------------------------------------------------------------------------


@register("rates", "vllm_conditional_rates_are_quotients_of_the_unconditional_ones")
def unconditional_used_as_conditional(*, unconditional_rates, device="cpu"):
    """Returns the unconditional rates p_i as the conditional ones (no division by p_{i-1})."""
    ref.conditional_rates(unconditional_rates=unconditional_rates)  # the same checks
    return torch.tensor([float(p) for p in unconditional_rates], dtype=torch.float32, device=device)


@register("rates", "vllm_conditional_rates_are_quotients_of_the_unconditional_ones")
def zero_rate_divides_to_nan(*, unconditional_rates, device="cpu"):
    """Each rate is divided by the one before without the guard for 0, so a 0 after a 0 becomes NaN."""
    ref.conditional_rates(unconditional_rates=unconditional_rates)  # the same checks
    p = torch.tensor([float(x) for x in unconditional_rates], dtype=torch.float64)
    return (p / torch.cat([p.new_ones(1), p[:-1]])).to(device=device, dtype=torch.float32)


# -- the decision given the uniforms (§15) ----------------------------------------------------------


def _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
              target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    counts = list(num_draft_tokens)
    flat, real = ref.grid(counts, draft_token_ids.device)
    drafts, uniforms = draft_token_ids[flat], uniform_probs[flat]
    rejected = torch.where(is_greedy[:, None], target_argmax[flat], recovered_token_ids[flat])
    return mistake(flat, real, drafts, uniforms, synthetic_conditional_rates, rejected, bonus_token_ids.reshape(-1))


@register("placeholder", "vllm_placeholder_drafts_are_never_accepted")
def accepts_placeholders(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                         target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """A -1 placeholder is accepted like a real draft when its uniform is below the rate, and emitted as token -1 (vLLM #46533)."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        as_tokens = torch.where(drafts < 0, 0, drafts)  # the walk no longer sees the placeholder
        accepted = ref.walk(as_tokens, real, uniforms, rates)
        return ref.emit(accepted, real.sum(1), drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("tokens", "vllm_a_rejection_emits_the_targets_token")
def emits_the_rejected_draft(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                             target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """On a rejection it emits the rejected draft itself instead of the target's argmax or the recovered token."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        accepted = ref.walk(drafts, real, uniforms, rates)
        return ref.emit(accepted, real.sum(1), drafts, drafts, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("tokens", "vllm_accepted_drafts_are_emitted_verbatim")
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


@register("correct")
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


@register("correct")
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


@register("dtype", "vllm_decision_is_exact_given_the_uniforms")
def compares_in_float32(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                        target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Compares u < c in float32, so a float64 uniform just below its rate rounds up to it and is rejected."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        accepted = ref.walk(drafts, real, uniforms.to(torch.float32), rates)
        return ref.emit(accepted, real.sum(1), drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("dtype", "vllm_decision_is_exact_given_the_uniforms")
def compares_in_the_uniforms_dtype(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                                   target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Compares u < c in the uniforms' dtype, not the wider: a float16 uniform just below its rate is rejected where the rate rounds down onto it."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        accepted = ref.walk(drafts, real, uniforms, rates.to(uniforms.dtype))
        return ref.emit(accepted, real.sum(1), drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("tokens", "vllm_one_token_follows_the_accepted_drafts")
def request_without_drafts_emits_nothing(*, draft_token_ids, num_draft_tokens, uniform_probs,
                                         synthetic_conditional_rates, target_argmax, recovered_token_ids,
                                         bonus_token_ids, is_greedy):
    """A request without drafts is skipped before its bonus is written, so its row is all -1."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        n = real.sum(1)
        out = ref.emit(ref.walk(drafts, real, uniforms, rates), n, drafts, rejected, bonus)
        return torch.where((n == 0)[:, None], -1, out).to(torch.int32)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("bonus", "vllm_a_full_acceptance_emits_the_bonus")
def bonus_of_the_wrong_request(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                               target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """After a full acceptance it emits the next request's bonus (the bonus read one row off)."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        accepted = ref.walk(drafts, real, uniforms, rates)
        return ref.emit(accepted, real.sum(1), drafts, rejected, bonus.roll(-1))

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("walk", "vllm_rates_of_one_accept_every_real_draft")
def walk_stops_one_draft_early(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                               target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """The walk's loop ends one draft early, so a request's last draft is never accepted."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        n = real.sum(1)
        last = torch.arange(drafts.shape[1], device=drafts.device) == (n - 1)[:, None]
        accepted = ref.walk(drafts, real & ~last, uniforms, rates)
        return ref.emit(accepted, n, drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("walk", "vllm_rates_of_zero_accept_no_draft")
def accepts_at_the_rate(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                        target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Accepts a draft when u <= c, so a uniform of 0 accepts under a rate of 0."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        ok = real & (drafts >= 0) & (uniforms <= rates[: drafts.shape[1]])
        return ref.emit(ok.to(torch.int64).cumprod(1).sum(1), real.sum(1), drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("rates", "vllm_decision_is_exact_given_the_uniforms", "vllm_decision_a_servers_batch_is_exact")
def rates_from_a_buffer_of_eight(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                                 target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Reads the conditional rates from a buffer of 8 (a kernel's MAX_SPEC_LEN): drafts 8 and on are tested against c_7."""

    def mistake(flat, real, drafts, uniforms, rates, rejected, bonus):
        buffered = rates[torch.arange(drafts.shape[1], device=rates.device).clamp(max=min(7, rates.shape[0] - 1))]
        return ref.emit(ref.walk(drafts, real, uniforms, buffered), real.sum(1), drafts, rejected, bonus)

    return _decision(mistake, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy)


@register("grid", "vllm_decision_a_servers_batch_is_exact")
def chunks_of_512_read_from_the_start(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                                      target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """Runs the requests in chunks of 512 whose flat draft offset restarts at 0: a later chunk reads the first chunk's drafts and uniforms."""
    counts = list(num_draft_tokens)
    width = max(counts, default=0) + 1
    parts = []
    for first in range(0, max(len(counts), 1), 512):
        chunk = counts[first : first + 512]
        flat = slice(0, sum(chunk))  # the chunk's offset sum(counts[:first]) forgotten
        out = ref.decide(chunk, draft_token_ids[flat], uniform_probs[flat], synthetic_conditional_rates,
                         target_argmax[flat], recovered_token_ids[flat], bonus_token_ids[first : first + 512],
                         is_greedy[first : first + 512])
        parts.append(torch.nn.functional.pad(out, (0, width - out.shape[1]), value=-1))
    return torch.cat(parts)[: len(counts)]


# -- V1's sampler with its own draws (§16.2) -----------------------------------------------------------


@register("independence", "vllm_requests_draw_independent_uniforms", level=SEMANTIC)
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


@register("generator", "vllm_v1_makes_v1s_generator_calls")
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


def _v1(counts, draft_token_ids, target_logits, bonus_token_ids, is_greedy, synthetic_conditional_rates, uniforms,
        recovered):
    """V1's decision after its draws: ``recovered()`` the rejection tokens of sampling requests."""
    target_argmax = target_logits.argmax(dim=-1)
    chosen = target_argmax if bool(is_greedy.all()) else recovered()
    return ref.decide(counts, draft_token_ids, uniforms, synthetic_conditional_rates, target_argmax, chosen,
                      bonus_token_ids, is_greedy)


@register("independence", "vllm_accepted_count_follows_the_per_position_rates", level=SEMANTIC)
def uniform_reused_across_positions(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                                    generators, synthetic_conditional_rates):
    """Draws one uniform per request and compares it with every position's rate."""
    counts, device = list(num_draft_tokens), target_logits.device
    owner = torch.repeat_interleave(torch.arange(len(counts), device=device),
                                    torch.tensor(counts, dtype=torch.int64, device=device))
    uniforms = torch.rand((len(counts),), dtype=torch.float64, device=device)[owner]
    return _v1(counts, draft_token_ids, target_logits, bonus_token_ids, is_greedy, synthetic_conditional_rates,
               uniforms, lambda: ref.v1_recovered(counts, draft_token_ids, target_logits,
                                                  ref.v1_exponentials(counts, target_logits.shape[1], generators, device)))


@register("generator", "vllm_a_seeded_request_reproduces_whatever_else_is_in_the_batch", level=SEMANTIC)
def seeded_request_uses_the_default_generator(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids,
                                              is_greedy, generators, synthetic_conditional_rates):
    """Draws every request's uniforms and noise from the default generator, its own generator unused."""
    counts, device = list(num_draft_tokens), target_logits.device
    uniforms = ref.v1_uniforms(counts, {}, device)
    return _v1(counts, draft_token_ids, target_logits, bonus_token_ids, is_greedy, synthetic_conditional_rates,
               uniforms, lambda: ref.v1_recovered(counts, draft_token_ids, target_logits,
                                                  ref.v1_exponentials(counts, target_logits.shape[1], {}, device)))


@register("mask", "vllm_a_token_the_target_forbids_is_never_emitted")
def v1_accepts_refused_drafts(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                              generators, synthetic_conditional_rates):
    """Accepts a draft whose processed target logit is -inf at its rate, as if the target allowed it (vLLM 0.33's V1 kernels, handed a refused draft its scheduler would have cut: --refused-drafts sampler)."""
    counts, device = list(num_draft_tokens), target_logits.device
    uniforms = ref.v1_uniforms(counts, generators, device)
    return _v1(counts, draft_token_ids, target_logits, bonus_token_ids, is_greedy, synthetic_conditional_rates,
               uniforms, lambda: ref.v1_recovered(counts, draft_token_ids, target_logits,
                                                  ref.v1_exponentials(counts, target_logits.shape[1], generators, device)))


@register("sampling", "vllm_a_recovered_token_follows_the_target_without_the_rejected_draft", level=SEMANTIC)
def recovered_is_the_argmax(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                            generators, synthetic_conditional_rates):
    """A sampling request's rejection emits the target's argmax without the rejected draft, not a sample."""
    counts, device = list(num_draft_tokens), target_logits.device
    uniforms = ref.v1_uniforms(counts, generators, device)
    ones = torch.ones((len(counts), target_logits.shape[1]), dtype=torch.float32, device=device)
    return _v1(counts, draft_token_ids, target_logits, bonus_token_ids, is_greedy, synthetic_conditional_rates,
               uniforms, lambda: ref.v1_recovered(counts, draft_token_ids, target_logits, ones))


# -- V2's sampler (§17) ------------------------------------------------------------------------------------


def _v2_per_position(key, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                     synthetic_conditional_rates):
    """V2's sampler a request at a time, each uniform drawn from a torch generator seeded with
    ``key(request's seed, position, 0)``, the noise of a sampled token with ``key(seed, position, 1)``."""
    start = cu_num_logits[:-1].tolist()
    n = (cu_num_logits.diff() - 1).tolist()
    rates = synthetic_conditional_rates.tolist()
    sampled = torch.full((len(n), num_speculative_steps + 1), -1, dtype=torch.int64)
    num_sampled = torch.zeros(len(n), dtype=torch.int32)
    for r, (s, count) in enumerate(zip(start, n)):
        gen = lambda p, lane=0: torch.Generator().manual_seed(key(int(seed[r]), int(p), lane))  # noqa: E731
        row, stop, removed = [], s + count, -1
        for i in range(count):
            draft = int(draft_sampled[s + i + 1])
            allowed = draft >= 0 and float(target_logits[s + i, draft]) > -torch.inf
            if allowed and float(torch.rand((), generator=gen(pos[s + i]))) < rates[i]:
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
            noise = torch.rand(logits.shape, generator=gen(pos[stop], 1)).clamp_min(1e-12)
            token = int((logits - torch.log(-torch.log(noise))).argmax())
        sampled[r, : len(row) + 1] = torch.tensor(row + [token])
        num_sampled[r] = len(row) + 1
    return sampled.to(target_logits.device), num_sampled.to(target_logits.device)


@register("correct")
def v2_with_a_generator_per_position(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                     num_speculative_steps, synthetic_conditional_rates):
    """Correct: draws each uniform from a torch generator seeded with a hash of (seed, position, lane), one request at a time.

    The hash is splitmix64's, folded to 32 bits: torch's CPU generator keeps only the low 32
    bits of its seed, so keys that differ above them would share a stream."""

    def key(s, p, lane):
        h = _splitmix(_splitmix(_splitmix(s & _MASK64) ^ (p & _MASK64)) ^ lane)
        return (h ^ (h >> 32)) & 0xFFFFFFFF

    return _v2_per_position(key, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                            num_speculative_steps, synthetic_conditional_rates)


@register("rank", "ranks_agree_given_the_same_inputs_and_seed")
def v2_keyed_by_pythons_hash(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                             num_speculative_steps, synthetic_conditional_rates):
    """Seeds each position's generator with Python's hash of (seed, position, "accept"): a string's hash differs in every interpreter."""
    return _v2_per_position(lambda s, p, lane: hash((s, p, lane, "accept")) % 2**63, target_logits, draft_sampled, cu_num_logits,
                            pos, temperature, seed, num_speculative_steps, synthetic_conditional_rates)


def _v2_walk_reading_no_logit(target_logits, drafts, start, logit, real, pos, temperature, seed, rates):
    """V2's walk and tokens with the drafts as given: a draft is accepted at its rate whatever
    the target's logit there."""
    accepted = ref.walk(drafts, real, ref2.keyed_uniforms(seed.to(torch.int64)[:, None], pos[logit], 0), rates)
    return ref2.emit(target_logits, drafts, accepted, start, pos, temperature, seed)


@register("mask", "vllm_a_token_the_target_forbids_is_never_emitted")
def v2_accepts_refused_drafts(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                              num_speculative_steps, synthetic_conditional_rates):
    """Accepts any draft >= 0 at its rate, whatever the target's processed logit there: -inf (a grammar's mask) included (vLLM 0.33's and 0.34.0's synthetic mode; 0.34's runner leaves the refused draft to it)."""
    start, logit, real, drafts = ref2.grid(draft_sampled, cu_num_logits, num_speculative_steps)
    return _v2_walk_reading_no_logit(target_logits, drafts, start, logit, real, pos, temperature, seed,
                                     synthetic_conditional_rates)


@register("correct")
def v2_refused_drafts_cut_before_the_walk(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                          num_speculative_steps, synthetic_conditional_rates):
    """Correct: makes each request's drafts from the first the target refuses on -1, then walks reading no logit (vLLM 0.33's runner, then its kernel)."""
    start, logit, real, drafts = ref2.grid(draft_sampled, cu_num_logits, num_speculative_steps)
    refused = (drafts >= 0) & (target_logits[logit, drafts.clamp(min=0)] == -torch.inf)
    cut = drafts.masked_fill(refused.to(torch.int64).cummax(1).values.bool(), -1)
    return _v2_walk_reading_no_logit(target_logits, cut, start, logit, real, pos, temperature, seed,
                                     synthetic_conditional_rates)


@register("independence", "vllm_requests_draw_independent_uniforms")
def v2_one_uniform_per_position(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                num_speculative_steps, synthetic_conditional_rates):
    """Keys every uniform by the position alone, so requests at the same positions share them."""
    return ref2.synthetic_rejection_sample_v2(
        target_logits=target_logits, draft_sampled=draft_sampled, cu_num_logits=cu_num_logits, pos=pos,
        temperature=temperature, seed=torch.zeros_like(seed), num_speculative_steps=num_speculative_steps,
        synthetic_conditional_rates=synthetic_conditional_rates)


@register("dtype", "vllm_results_have_their_layouts_shape_dtype_and_device")
def v2_num_sampled_int64(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                         num_speculative_steps, synthetic_conditional_rates):
    """Returns num_sampled as int64, the dtype of sampled, instead of int32."""
    sampled, num_sampled = ref2.synthetic_rejection_sample_v2(
        target_logits=target_logits, draft_sampled=draft_sampled, cu_num_logits=cu_num_logits, pos=pos,
        temperature=temperature, seed=seed, num_speculative_steps=num_speculative_steps,
        synthetic_conditional_rates=synthetic_conditional_rates)
    return sampled, num_sampled.to(torch.int64)


def _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
             synthetic_conditional_rates):
    """V2's reference, then ``edit(sampled, num_sampled, start, n, greedy)`` on its outputs: the
    one step the mutant gets wrong, after a correct walk."""
    sampled, num_sampled = ref2.synthetic_rejection_sample_v2(
        target_logits=target_logits, draft_sampled=draft_sampled, cu_num_logits=cu_num_logits, pos=pos,
        temperature=temperature, seed=seed, num_speculative_steps=num_speculative_steps,
        synthetic_conditional_rates=synthetic_conditional_rates)
    start = cu_num_logits[:-1].to(torch.int64)
    n = cu_num_logits[1:].to(torch.int64) - start - 1
    return edit(sampled, num_sampled, start, n, temperature == 0)


@register("tokens", "vllm_accepted_drafts_are_emitted_verbatim")
def v2_emits_the_verifying_logits_token(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                        num_speculative_steps, synthetic_conditional_rates):
    """Emits each accepted draft from its verifying logit's place in draft_sampled, one before the draft's own."""

    def edit(sampled, num_sampled, start, n, greedy):
        cols = torch.arange(sampled.shape[1], device=sampled.device)
        accepted = cols < (num_sampled.to(torch.int64) - 1)[:, None]
        shifted = draft_sampled[(start[:, None] + cols).clamp(max=draft_sampled.shape[0] - 1)]
        return torch.where(accepted, shifted, sampled), num_sampled

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


@register("tokens", "vllm_a_rejection_emits_the_targets_token")
def v2_greedy_rejection_from_the_next_logit(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                            num_speculative_steps, synthetic_conditional_rates):
    """A greedy request's rejection at draft i emits the argmax of logit i + 1, not of the logit that verified it."""

    def edit(sampled, num_sampled, start, n, greedy):
        accepted = num_sampled.to(torch.int64) - 1
        rejected = greedy & (accepted < n)
        token = target_logits[(start + accepted + 1).clamp(max=target_logits.shape[0] - 1)].argmax(1)
        rows = torch.arange(sampled.shape[0], device=sampled.device)
        fixed = sampled.clone()
        fixed[rows[rejected], accepted[rejected]] = token[rejected]
        return fixed, num_sampled

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


@register("bonus", "vllm_a_full_acceptance_emits_the_bonus")
def v2_bonus_from_the_last_drafts_logit(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                        num_speculative_steps, synthetic_conditional_rates):
    """A greedy request that accepts all its drafts emits the argmax of its last draft's logit, not of the bonus logit."""

    def edit(sampled, num_sampled, start, n, greedy):
        full = greedy & (num_sampled.to(torch.int64) - 1 == n) & (n > 0)
        token = target_logits[start + (n - 1).clamp(min=0)].argmax(1)
        rows = torch.arange(sampled.shape[0], device=sampled.device)
        fixed = sampled.clone()
        fixed[rows[full], n[full]] = token[full]
        return fixed, num_sampled

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


@register("tokens", "vllm_one_token_follows_the_accepted_drafts")
def v2_counts_the_bonus_twice(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                              num_speculative_steps, synthetic_conditional_rates):
    """After a full acceptance num_sampled is the accepted count plus two: the bonus counted twice."""

    def edit(sampled, num_sampled, start, n, greedy):
        return sampled, num_sampled + (num_sampled.to(torch.int64) - 1 == n).to(torch.int32)

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


def _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                  synthetic_conditional_rates):
    return ref2.synthetic_rejection_sample_v2(
        target_logits=target_logits, draft_sampled=draft_sampled, cu_num_logits=cu_num_logits, pos=pos,
        temperature=temperature, seed=seed, num_speculative_steps=num_speculative_steps,
        synthetic_conditional_rates=synthetic_conditional_rates)


@register("independence", "vllm_requests_draw_independent_uniforms")
def v2_seed_cut_to_int32(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                         synthetic_conditional_rates):
    """Passes each request's seed to its generator as an int32: seeds that differ only above bit 32 share every random number."""
    return _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed.to(torch.int32),
                         num_speculative_steps, synthetic_conditional_rates)


@register("independence", "vllm_requests_draw_independent_uniforms")
def v2_keys_on_seed_plus_position(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                  num_speculative_steps, synthetic_conditional_rates):
    """Keys each random number on seed + position, one integer: a request seeded one more at a position one less draws the same numbers."""
    if not len(pos):
        return _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                             num_speculative_steps, synthetic_conditional_rates)
    first = pos[cu_num_logits[:-1].long().clamp(max=len(pos) - 1)]  # each request's first position
    relative = pos - torch.repeat_interleave(first, cu_num_logits.diff().long())
    return _v2_reference(target_logits, draft_sampled, cu_num_logits, relative, temperature, seed + first,
                         num_speculative_steps, synthetic_conditional_rates)


@register("grid", "vllm_v2_a_servers_batch_emits_each_requests_tokens_in_any_order")
def v2_seeds_read_per_block_of_512(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                   num_speculative_steps, synthetic_conditional_rates):
    """Runs the requests in blocks of 512 and reads each one's seed at its index within the block: request r draws with seed[r % 512]."""
    local = torch.arange(seed.shape[0], device=seed.device) % 512
    return _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed[local],
                         num_speculative_steps, synthetic_conditional_rates)


_PERSISTENT = {}


@register("aliasing", "vllm_v2_a_servers_batch_emits_each_requests_tokens_in_any_order")
def v2_output_buffer_kept_for_large_batches(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                            num_speculative_steps, synthetic_conditional_rates):
    """From 256 requests on, writes sampled into one buffer kept per shape (a CUDA graph's), so the next call overwrites a result still held."""
    sampled, num_sampled = _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                         num_speculative_steps, synthetic_conditional_rates)
    if sampled.shape[0] < 256:
        return sampled, num_sampled
    buffer = _PERSISTENT.setdefault((tuple(sampled.shape), sampled.device), torch.empty_like(sampled))
    return buffer.copy_(sampled), num_sampled


@register("rates", "vllm_accepted_count_follows_the_per_position_rates")
def v2_rates_from_a_block_of_four(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                  num_speculative_steps, synthetic_conditional_rates):
    """Loads the conditional rates into a block of 4 (enough for the usual K): drafts 4 and on are tested against c_3."""
    at = torch.arange(num_speculative_steps, device=synthetic_conditional_rates.device).clamp(max=3)
    return _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                         synthetic_conditional_rates[at])


@register("rates", "vllm_accepted_count_follows_the_per_position_rates")
def v2_rates_past_the_sixth_draft_scaled_down(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                              num_speculative_steps, synthetic_conditional_rates):
    """Takes the conditional rates of drafts 6 and on (below 1) at four fifths, as a schedule tuned for K <= 6."""
    rates = synthetic_conditional_rates.clone()
    late = torch.arange(rates.shape[0], device=rates.device) >= 6
    rates[late & (rates < 1)] *= 0.8
    return _v2_reference(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                         rates)


def _v2_last_token(sample, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                   synthetic_conditional_rates):
    """V2's reference with each request's last token replaced by ``sample(rows, removed, stop)``:
    the token from its stopping logit ``stop`` (``rows``, float32) without the rejected draft
    ``removed`` (-1: none), where the mutant's mistake lies."""

    def edit(sampled, num_sampled, start, n, greedy):
        accepted = num_sampled.to(torch.int64) - 1
        stop = start + accepted
        after = draft_sampled[(stop + 1).clamp(max=draft_sampled.shape[0] - 1)].to(torch.int64)
        fixed = sampled.clone()
        fixed[torch.arange(sampled.shape[0], device=sampled.device), accepted] = sample(
            target_logits[stop].to(torch.float32), torch.where(accepted < n, after, -1), stop)
        return fixed, num_sampled

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


def _gumbel_max(rows, removed, seed, keys, lanes, temperature):
    """A greedy request's argmax of its row, a sampling request's Gumbel-max of it without
    ``removed``, the noise of token ``v`` ``keyed_uniforms(seed, keys, lanes[v])``."""
    vocab = torch.arange(rows.shape[1], device=rows.device)
    noise = -torch.log(-torch.log(ref2.keyed_uniforms(seed.to(torch.int64)[:, None], keys[:, None], lanes)))
    drawn = (torch.where(vocab == removed[:, None], -torch.inf, rows) + noise).argmax(1)
    return torch.where(temperature == 0, rows.argmax(1), drawn)


@register("sampling", "vllm_a_recovered_token_follows_the_target_without_the_rejected_draft",
          "vllm_v2_a_sampled_bonus_follows_the_target")
def v2_logits_divided_by_the_temperature(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                         num_speculative_steps, synthetic_conditional_rates):
    """Divides a sampling request's logits by its temperature before sampling, though they come processed: T applied twice."""

    def sample(rows, removed, stop):
        scaled = rows / torch.where(temperature == 0, 1.0, temperature).to(torch.float32)[:, None]
        return _gumbel_max(scaled, removed, seed, pos[stop], 1 + torch.arange(rows.shape[1]), temperature)

    return _v2_last_token(sample, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                          num_speculative_steps, synthetic_conditional_rates)


@register("sampling", "vllm_a_recovered_token_follows_the_target_without_the_rejected_draft")
def v2_noise_on_the_acceptance_lane(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                    num_speculative_steps, synthetic_conditional_rates):
    """Draws token v's noise on lane v, not 1 + v: token 0's is the acceptance uniform, which a rejection made large."""

    def sample(rows, removed, stop):
        return _gumbel_max(rows, removed, seed, pos[stop], torch.arange(rows.shape[1]), temperature)

    return _v2_last_token(sample, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                          num_speculative_steps, synthetic_conditional_rates)


@register("sampling", "vllm_v2_a_sampled_bonus_follows_the_target")
def v2_bonus_without_the_next_entry(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                    num_speculative_steps, synthetic_conditional_rates):
    """Removes draft_sampled[stop + 1] from the sample even after a full acceptance, where it is the next request's entry, not a draft."""

    def sample(rows, removed, stop):
        after = draft_sampled[(stop + 1).clamp(max=draft_sampled.shape[0] - 1)].to(torch.int64)
        return _gumbel_max(rows, after, seed, pos[stop], 1 + torch.arange(rows.shape[1]), temperature)

    return _v2_last_token(sample, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                          num_speculative_steps, synthetic_conditional_rates)


@register("sampling", "vllm_v2_a_sampled_bonus_follows_the_target")
def v2_bonus_without_the_last_draft(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                    num_speculative_steps, synthetic_conditional_rates):
    """Removes drafts[min(accepted, n - 1)] from the sample, so a full acceptance's bonus is never its last draft."""

    def edit(sampled, num_sampled, start, n, greedy):
        accepted = num_sampled.to(torch.int64) - 1
        stop = start + accepted
        entry = (stop + (accepted < n).long()).clamp(max=draft_sampled.shape[0] - 1)  # the rejected or the last draft
        removed = torch.where(n > 0, draft_sampled[entry].to(torch.int64), -1)
        rows = target_logits[stop].to(torch.float32)
        fixed = sampled.clone()
        fixed[torch.arange(sampled.shape[0], device=sampled.device), accepted] = _gumbel_max(
            rows, removed, seed, pos[stop], 1 + torch.arange(rows.shape[1], device=rows.device), temperature)
        return fixed, num_sampled

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


@register("sampling", "vllm_a_recovered_token_follows_the_target_without_the_rejected_draft",
          "vllm_v2_a_sampled_bonus_follows_the_target")
def v2_greedy_path_for_a_mixed_batch(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                     num_speculative_steps, synthetic_conditional_rates):
    """Takes the greedy path when any request is greedy (.any() for .all()): a mixed batch's sampling requests emit an argmax."""

    def sample(rows, removed, stop):
        if bool((temperature == 0).any()):
            return torch.where(torch.arange(rows.shape[1]) == removed[:, None], -torch.inf, rows).argmax(1)
        return _gumbel_max(rows, removed, seed, pos[stop], 1 + torch.arange(rows.shape[1]), temperature)

    return _v2_last_token(sample, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                          num_speculative_steps, synthetic_conditional_rates)


@register("independence", "vllm_v2_serving_loop_conforms_at_every_step")
def v2_noise_keyed_by_the_accepted_count(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                         num_speculative_steps, synthetic_conditional_rates):
    """Keys a sampled token's noise on the logit's index within its request, not its position: it repeats step after step."""

    def sample(rows, removed, stop):
        within = stop - cu_num_logits[:-1].to(torch.int64)
        return _gumbel_max(rows, removed, seed, within, 1 + torch.arange(rows.shape[1]), temperature)

    return _v2_last_token(sample, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                          num_speculative_steps, synthetic_conditional_rates)


@register("sampling", "vllm_v2_a_sampled_bonus_follows_the_target")
def v2_argmax_without_drafts(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                             num_speculative_steps, synthetic_conditional_rates):
    """A request without drafts emits the argmax of its one logit ("plain decode"), a sampling request's too."""

    def edit(sampled, num_sampled, start, n, greedy):
        fixed = sampled.clone()
        fixed[:, 0] = torch.where(n == 0, target_logits[start].argmax(1), sampled[:, 0])
        return fixed, num_sampled

    return _v2_then(edit, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                    synthetic_conditional_rates)


# V2 ports written from scratch: a counter-based generator of their own, keyed by the request's
# seed and a counter, as V2 keys Philox. The mutant counts from the request's first draft, the
# correct port takes the logit's position in the sequence (§17.3).

_MASK64 = (1 << 64) - 1


def _splitmix(x):
    """splitmix64's finaliser on a 64-bit word."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _uniform(seed, counter, lane):
    """A uniform in (0, 1) from ``(seed, counter, lane)``: splitmix64 over the three in turn."""
    h = 0
    for word in (seed, counter, lane):
        h = _splitmix(h ^ (word & _MASK64))
    return ((h >> 11) + 0.5) / 2.0**53


def _v2_from_counters(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                      synthetic_conditional_rates, counter):
    """V2's walk and tokens, request by request, every random number ``_uniform(seed, counter(start, i), lane)``
    for the request's logit ``start + i`` (lane 0 its acceptance uniform, lane ``1 + v`` token ``v``'s noise)."""
    starts, seeds, drafts = cu_num_logits.tolist(), seed.tolist(), draft_sampled.tolist()
    rates, greedy = synthetic_conditional_rates.tolist(), (temperature == 0).tolist()
    sampled = torch.full((len(starts) - 1, num_speculative_steps + 1), -1, dtype=torch.int64)
    num_sampled = torch.zeros(len(starts) - 1, dtype=torch.int32)
    allowed = lambda i: drafts[i + 1] >= 0 and float(target_logits[i, drafts[i + 1]]) > -math.inf  # noqa: E731 - §15.4
    for r, (start, end) in enumerate(zip(starts, starts[1:])):
        n, a = end - start - 1, 0
        while a < n and allowed(start + a) and _uniform(seeds[r], counter(start, a), 0) < rates[a]:
            a += 1
        scores = target_logits[start + a].double().cpu()
        if not greedy[r]:
            if a < n and drafts[start + a + 1] >= 0:
                scores[drafts[start + a + 1]] = -math.inf
            noise = [_uniform(seeds[r], counter(start, a), 1 + v) for v in range(scores.shape[0])]
            scores = scores - torch.tensor(noise, dtype=torch.float64).log().neg().log()  # Gumbel-max
        sampled[r, :a] = torch.tensor(drafts[start + 1 : start + 1 + a], dtype=torch.int64)
        sampled[r, a] = int(scores.argmax())
        num_sampled[r] = a + 1
    return sampled.to(target_logits.device), num_sampled.to(target_logits.device)


@register("independence", "vllm_v2_serving_loop_conforms_at_every_step")
def v2_counts_from_the_first_draft(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                   num_speculative_steps, synthetic_conditional_rates):
    """Keys each random number on the request's seed and the logit's index within the request, not its position."""
    return _v2_from_counters(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                             synthetic_conditional_rates, lambda start, i: i)


@register("correct")
def v2_counts_by_position(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                          num_speculative_steps, synthetic_conditional_rates):
    """Correct: keys each random number on the request's seed and the logit's position in the sequence."""
    positions = pos.tolist()
    return _v2_from_counters(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                             synthetic_conditional_rates, lambda start, i: positions[start + i])


# -- where the hunt's mutants found the cases narrower than the contract (docs/zoo.md) ------------------


@register("mask", "vllm_rates_of_one_accept_every_real_draft")
def v2_forbidden_test_in_half_precision(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                        num_speculative_steps, synthetic_conditional_rates):
    """Looks for -inf in a float16 copy of the logits: a finite logit past float16's range (a low temperature's) reads as forbidden."""
    start, logit, real, drafts = ref2.grid(draft_sampled, cu_num_logits, num_speculative_steps)
    drafts = ref.forbid(drafts, target_logits.to(torch.float16), logit)
    return _v2_walk_reading_no_logit(target_logits, drafts, start, logit, real, pos, temperature, seed,
                                     synthetic_conditional_rates)


@register("generator", "vllm_v1_makes_v1s_generator_calls")
def v1_seeded_uniforms_redrawn_for_eight_drafts(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids,
                                                is_greedy, generators, synthetic_conditional_rates):
    """A seeded request's own generator redraws only its first 8 uniforms (a slice sized for the usual K); drafts 8 and on keep the default generator's."""
    counts, device = list(num_draft_tokens), target_logits.device
    uniforms = torch.rand((sum(counts),), dtype=torch.float64, device=device)
    first = [sum(counts[:r]) for r in range(len(counts))]
    for r in sorted(generators):
        if counts[r]:
            uniforms[first[r] : first[r] + min(counts[r], 8)].uniform_(generator=generators[r])
    return _v1(counts, draft_token_ids, target_logits, bonus_token_ids, is_greedy, synthetic_conditional_rates,
               uniforms, lambda: ref.v1_recovered(counts, draft_token_ids, target_logits,
                                                  ref.v1_exponentials(counts, target_logits.shape[1], generators, device)))


def _whole_blocks_of_1024(logits):
    """``logits`` with the columns past the last whole block of 1024 tokens made -inf (all kept below 1024)."""
    kept = max(1024, logits.shape[1] // 1024 * 1024)
    return logits.clone().index_fill_(1, torch.arange(kept, logits.shape[1], device=logits.device), -math.inf) \
        if kept < logits.shape[1] else logits


@register("vocabulary", "vllm_a_rejection_emits_the_targets_token")
def v1_vocabulary_in_whole_blocks_of_1024(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids,
                                          is_greedy, generators, synthetic_conditional_rates):
    """Reads the target's vocabulary in whole blocks of 1024 tokens (a floor where a ceiling belongs): tokens past the last whole block are never the argmax."""
    return ref.synthetic_rejection_sample(
        draft_token_ids=draft_token_ids, num_draft_tokens=num_draft_tokens,
        target_logits=_whole_blocks_of_1024(target_logits), bonus_token_ids=bonus_token_ids, is_greedy=is_greedy,
        generators=generators, synthetic_conditional_rates=synthetic_conditional_rates)


@register("vocabulary", "vllm_a_full_acceptance_emits_the_bonus")
def v2_vocabulary_in_whole_blocks_of_1024(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                          num_speculative_steps, synthetic_conditional_rates):
    """Takes the emitted token over whole blocks of 1024 tokens only: a greedy request never emits a token past the last whole block."""
    start, logit, real, drafts = ref2.grid(draft_sampled, cu_num_logits, num_speculative_steps)
    drafts = ref.forbid(drafts, target_logits, logit)
    return _v2_walk_reading_no_logit(_whole_blocks_of_1024(target_logits), drafts, start, logit, real, pos,
                                     temperature, seed, synthetic_conditional_rates)


@register("stride", "vllm_a_rejection_emits_the_targets_token")
def v2_logits_rows_without_their_stride(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                        num_speculative_steps, synthetic_conditional_rates):
    """Addresses logit row i at i * V in the storage, as if the rows were dense: a vocabulary-padded buffer's rows are read shifted."""
    rows, vocab = target_logits.shape
    dense = torch.as_strided(target_logits, (rows, vocab), (vocab, 1), target_logits.storage_offset())
    return _v2_reference(dense, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                         synthetic_conditional_rates)


@register("independence", "vllm_accepted_count_follows_the_per_position_rates")
def v2_positions_through_float32(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                 num_speculative_steps, synthetic_conditional_rates):
    """Stages each position through float32 before keying its random numbers: past 2**24 neighbouring positions share one uniform."""
    return _v2_reference(target_logits, draft_sampled, cu_num_logits, pos.to(torch.float32).to(pos.dtype), temperature,
                         seed, num_speculative_steps, synthetic_conditional_rates)


@register("generator", "vllm_v1_a_servers_batch_makes_v1s_generator_calls")
def v1_generators_for_the_first_256_seeded_requests(*, draft_token_ids, num_draft_tokens, target_logits,
                                                    bonus_token_ids, is_greedy, generators,
                                                    synthetic_conditional_rates):
    """Keeps a table of 256 generators (vLLM's default max_num_seqs): seeded requests past the 256th draw from the default generator."""
    kept = dict(sorted(generators.items())[:256])
    return ref.synthetic_rejection_sample(
        draft_token_ids=draft_token_ids, num_draft_tokens=num_draft_tokens, target_logits=target_logits,
        bonus_token_ids=bonus_token_ids, is_greedy=is_greedy, generators=kept,
        synthetic_conditional_rates=synthetic_conditional_rates)
