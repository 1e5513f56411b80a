"""vLLM: the law of the samplers' draws (CONTRACT.md §16.2, §18.1-§18.3), whatever their generator,
and V1's own generator calls at the exact level.

The statistical properties run batches of many requests, built from fixed seeds (the same
verdict on every run for an implementation that draws from torch's seeded generator), and
compare the empirical distribution with the contract's by
:func:`~simacc.harness.judging.statistics.cdf_test` (CONTRACT.md §9.4) at 1e-6 a property (a
property that checks two batches gives each half): a conforming implementation fails one with
probability at most 1e-6, whatever stream it draws from. V2's requests sit at positions far
apart, each its own (a request's first position is its prompt's length), except where two
requests must share their positions for a uniform shared by position to show. The sizes are
the smallest that keep the mistakes of the zoo (a uniform shared by the batch or across a
request's positions, a recovered token that is not sampled) far past the test's bands, since
vLLM's kernels run a request at a time in Triton's interpreter; the accepted count is also
checked where its law is most sensitive to the mean acceptance length (a length of 2.05: the
second draft accepted 1 time in 20, so a length off by 0.05 doubles or removes it). The
sampled tokens' batches mix greedy requests in and put V2's sampling requests at a temperature
of 1/4: the logits come processed, so the law is theirs at any temperature.
"""

import dataclasses

import torch

from simacc import strategies as sx
from simacc.contract import vllm as ref
from simacc.harness.config import devices
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import TensorArg, seeded
from simacc.properties import support, vllm
from simacc.strategies import vllm as sv

SAMPLERS = (sx.VLLM_V1, sx.VLLM_V2)
LAW_RATES = (0.9, 0.8, 0.7, 0.6, 0.2, 0.15)  # unconditional, K = 6; conditional 0.9, 0.89, 0.88, 0.86, 0.33, 0.75
LAW_RUNS = 500  # a uniform reused across positions moves the CDF by 0.26, c_3 for c_4 and c_5 by 0.31
LONG_LAW_RATES = tuple(0.96 ** (i + 1) for i in range(sv.LONG_K))  # K = 16, every conditional rate 0.96: a rate
LONG_LAW_RUNS = 600  # off past the sixth draft (c_6 to c_15 at 0.77) moves the CDF at 8 by 0.18
SENSITIVE_LENGTH = 2.05  # K = 3: rates (1, 0.05, 0), one or two drafts accepted
SENSITIVE_K = 3
SENSITIVE_RUNS = 2000
PAIRS = 300  # one uniform for the batch moves the CDF of the pairs' outcomes by 0.25
VOCAB = 8
TARGET = (0.4, 0.3, 0.2, 0.1)  # the law batches' target at every logit
DRAFT = 3  # their drafts: not token 0, which a noise lane shared with the acceptance uniform favours
TEMPERATURE = 0.25  # a sampling request's in V2: its logits are processed, so the law stays TARGET's
RECOVERED_RATE = 0.5  # a rejection conditions the acceptance uniform on u >= 1/2
RECOVERED_RUNS = 1000  # 3 in 4 sample: about 375 rejections
RECOVERED_LAW = (4 / 9, 1 / 3, 2 / 9, 0.0)  # TARGET without DRAFT
BONUS_RUNS = 480  # 3 in 4 sample, two of them without drafts: 360 bonuses


def _seed(contract, r):
    """Request ``r``'s seed: V2 seeds every request (distinct seeds); V1's come from the default
    generator."""
    return 7919 * r + 1 if contract == sx.VLLM_V2 else None


LONG_PROMPT = 1 << 26  # every request's prompt is longer: positions where float32 keeps every eighth integer (§17.1 bounds none)


def _position(r):
    """Request ``r``'s first position: far from every other request's, past :data:`LONG_PROMPT`."""
    return LONG_PROMPT + 1009 * r + 17


def _conditional(rates):
    return [p / (rates[i - 1] if i else 1.0) for i, p in enumerate(rates)]


def _accepted_law(rates):
    """``P(accepted + 1 = j)``, ``j = 1..K + 1``, for a request of ``K`` real drafts (§18.1)."""
    p = [1.0, *rates, 0.0]
    return tuple(p[j] - p[j + 1] for j in range(len(rates) + 1))


def _sensitive_rates():
    return ref.resolve_synthetic_rates(num_speculative_tokens=SENSITIVE_K, synthetic_acceptance_length=SENSITIVE_LENGTH)


def designs():
    """Each statistical check of this module (:class:`~simacc.properties.support.Design`): what the
    power figures (CONTRACT.md §9.4) and ``benchmarks/power.py`` read."""
    law = "vllm_accepted_count_follows_the_per_position_rates"
    return [support.Design(law, f"rates {list(LAW_RATES)}", LAW_RUNS, _accepted_law(LAW_RATES),
                           statistics.FALSE_ALARM / 3),
            support.Design(law, f"length {SENSITIVE_LENGTH}", SENSITIVE_RUNS, _accepted_law(_sensitive_rates()),
                           statistics.FALSE_ALARM / 3),
            support.Design(law, f"rates 0.96^(i+1), K = {sv.LONG_K}", LONG_LAW_RUNS, _accepted_law(LONG_LAW_RATES),
                           statistics.FALSE_ALARM / 3),
            support.Design("vllm_requests_draw_independent_uniforms", "rate 1/2, each kind of pair", PAIRS,
                           (0.25,) * 4, statistics.FALSE_ALARM / 2),
            support.Design("vllm_a_recovered_token_follows_the_target_without_the_rejected_draft",
                           f"target {list(TARGET)}, draft {DRAFT} rejected", RECOVERED_RUNS * 3 // 8, RECOVERED_LAW,
                           statistics.FALSE_ALARM),
            support.Design("vllm_v2_a_sampled_bonus_follows_the_target", f"target {list(TARGET)}", BONUS_RUNS * 3 // 4,
                           TARGET, statistics.FALSE_ALARM)]


def _accepted(simacc, rates, runs, seed):
    """``accepted + 1`` of ``runs`` requests of ``K`` real drafts at the ``K`` unconditional ``rates``."""
    gen = torch.Generator().manual_seed(seed)
    contract, k = simacc.impl.record, len(rates)
    batch = [vllm.Drafted(tuple(torch.randint(0, VOCAB, (k,), generator=gen).tolist()),
                          torch.randn((k + 1, VOCAB), generator=gen), r % 2 == 0, _seed(contract, r), _position(r))
             for r in range(runs)]
    case = vllm.sampler_case(contract, batch, _conditional(rates), seed=seed)
    return [a + 1 for a in vllm.accepted_counts(case, simacc.run(case))]


@claim(*SAMPLERS)
def test_vllm_accepted_count_follows_the_per_position_rates(simacc):
    """P(accepted >= i + 1) = p_i for requests of K = 6 and K = 16 real drafts, and at a length of 2.05 (§18.1, §9.4)."""
    batches = ((LAW_RATES, LAW_RUNS, 28, f"rates {list(LAW_RATES)}"),
               (_sensitive_rates(), SENSITIVE_RUNS, 31, f"length {SENSITIVE_LENGTH}"),
               (LONG_LAW_RATES, LONG_LAW_RUNS, 33, "rates 0.96^(i+1)"))
    for rates, runs, seed, said in batches:
        support.check_distribution(_accepted(simacc, rates, runs, seed), _accepted_law(rates),
                                   f"accepted + 1 over {runs} requests of {len(rates)} drafts, {said}",
                                   statistics.FALSE_ALARM / len(batches), value="accepted + 1")


@claim(*SAMPLERS)
def test_vllm_requests_draw_independent_uniforms(simacc):
    """Neighbouring requests accept their one draft (rate 1/2) independently: each pair's four outcomes 1/4 each (§18.2, §9.4).

    In V2 the first pairs share their positions, and their seeds differ only above bit 32 (a
    seed cut to 32 bits shares every uniform); in the others the second request's seed is one
    more and its position one less (a uniform keyed on seed + position is shared)."""
    gen = torch.Generator().manual_seed(29)
    contract = simacc.impl.record
    requests = []  # (seed, position) of each, in pairs
    for kind, apart in enumerate((lambda seed, pos: (seed + (1 << 40), pos), lambda seed, pos: (seed + 1, pos - 1))):
        for j in range(kind * PAIRS, (kind + 1) * PAIRS):
            first = (_seed(contract, j), _position(j))
            requests += [first, apart(*first)] if contract == sx.VLLM_V2 else [(None, first[1])] * 2
    batch = [vllm.Drafted((int(torch.randint(0, VOCAB, (), generator=gen)),), torch.randn((2, VOCAB), generator=gen), True,
                          seed, position) for seed, position in requests]
    case = vllm.sampler_case(contract, batch, [0.5], seed=29)
    accepted = vllm.accepted_counts(case, simacc.run(case))
    outcomes = [1 + 2 * first + second for first, second in zip(accepted[0::2], accepted[1::2])]
    for kind, pairs in enumerate(("at one position, seeds apart above bit 32", "seed + position alike")):
        support.check_distribution(outcomes[kind * PAIRS:(kind + 1) * PAIRS], [0.25] * 4,
                                   f"1 + 2 a_2j + a_2j+1 (whether requests 2j and 2j + 1 accepted), {PAIRS} pairs "
                                   f"{pairs}", false_alarm=statistics.FALSE_ALARM / 2, value="outcome")


def _target_batch(contract, runs, shape):
    """``runs`` requests whose every logit is :data:`TARGET`'s; ``shape(r)`` says request ``r``'s
    drafts and whether it is greedy. Sampling requests are at :data:`TEMPERATURE` (V2)."""
    target = torch.tensor(TARGET).log()
    batch = []
    for r in range(runs):
        drafts, greedy = shape(r)
        batch.append(vllm.Drafted(drafts, target.repeat(len(drafts) + 1, 1), greedy, _seed(contract, r), _position(r),
                                  TEMPERATURE))
    return batch


@claim(*SAMPLERS)
def test_vllm_a_recovered_token_follows_the_target_without_the_rejected_draft(simacc):
    """A sampling request's rejection emits a sample of the target without the rejected draft, at a rate of 1/2, in a batch with greedy requests (§15.2, §18.1, §9.4).

    Target (0.4, 0.3, 0.2, 0.1), draft 3 rejected: 0, 1, 2 with 4/9, 1/3, 2/9, from about 375
    rejections. The argmax instead of a sample (a greedy path taken for the whole batch) moves
    the CDF by 0.56, a noise that reuses the acceptance uniform (u >= 1/2) for token 0 by 0.26,
    logits divided by V2's temperature 1/4 once more by 0.28; the test sees 0.23."""
    contract = simacc.impl.record
    batch = _target_batch(contract, RECOVERED_RUNS, lambda r: ((DRAFT,), r % 4 == 3))
    case = vllm.sampler_case(contract, batch, [RECOVERED_RATE], seed=30)
    tokens = [row[0] for req, row in zip(batch, vllm.emitted(case, simacc.run(case))) if not req.greedy and len(row) == 1]
    support.check_distribution([t + 1 for t in tokens], RECOVERED_LAW,
                               f"1 + the token a sampling request emitted after draft {DRAFT} was rejected, "
                               f"{len(tokens)} rejections", value="1 + token")


@claim(sx.VLLM_V2)
def test_vllm_v2_a_sampled_bonus_follows_the_target(simacc):
    """A sampling request's bonus, after a full acceptance or without drafts, is a sample of the whole last logit, in a batch with greedy requests (§15.2, §17.1, §18.1, §9.4).

    Target (0.4, 0.3, 0.2, 0.1) at temperature 1/4 (processed), rate 1, 360 bonuses (240 of
    requests without drafts), each request's one draft token 0. The argmax moves the CDF by 0.6
    (by 0.4 for requests without drafts alone), a token removed that is not a rejected draft
    (token 0) by 0.4, logits divided by the temperature once more by 0.32; the test sees 0.2.
    The 120 bonuses after a draft alone: the accepted draft removed from the bonus's logit moves
    their CDF at token 0 by 0.4, and the test sees 0.23 there (each test at half the budget)."""
    batch = _target_batch(sx.VLLM_V2, BONUS_RUNS, lambda r: (() if r % 2 else (0,), r % 4 == 2))
    case = vllm.sampler_case(sx.VLLM_V2, batch, [1.0], seed=32)
    bonuses = [(row[-1], bool(req.drafts)) for req, row in zip(batch, vllm.emitted(case, simacc.run(case)))
               if not req.greedy and len(row) == len(req.drafts) + 1]
    for after, drafted_only in (("", False), (" after its draft", True)):
        tokens = [t + 1 for t, drafted in bonuses if drafted or not drafted_only]
        support.check_distribution(tokens, TARGET, f"1 + a sampling request's bonus{after}, {len(tokens)} full "
                                   "acceptances", false_alarm=statistics.FALSE_ALARM / 2, value="1 + token")


@claim(*SAMPLERS, case=vllm.cases_for_impl(min_bs=2))
def test_vllm_a_seeded_request_reproduces_whatever_else_is_in_the_batch(simacc, case):
    """A request with a seed of its own emits the same tokens alone, under another default seed, as in its batch (§18.3)."""
    case = vllm.with_last_seeded(case, case.seed + 1)
    alone = vllm.last_alone(case, case.seed + 2)
    in_batch = vllm.emitted(case, simacc.run(case))[-1]
    by_itself = vllm.emitted(alone, simacc.run(alone))[0]
    check(by_itself == in_batch, f"the last request's tokens alone (default seed {alone.seed})", by_itself,
          f"{in_batch}, as in its batch of {case.bs}", case)


def v1_draws(case, device):
    """§16.2's calls, by hand, from the device's default generator seeded from ``case.seed`` as for a call:
    ``(uniforms, exponentials or None, generators, the default generator's state after)``;
    the generator's state is put back."""
    default = devices.default_generator(device)
    before = default.get_state()
    seeded(default, case.seed)
    counts = case.counts
    uniforms = torch.rand((sum(counts),), dtype=torch.float64, device=device)
    generators = {r: seeded(torch.Generator(device), s) for r, s in enumerate(case.generator_seeds.values.tolist())
                  if s >= 0}
    starts = [sum(counts[:r]) for r in range(len(counts))]
    for r, g in generators.items():
        if counts[r]:
            uniforms[starts[r] : starts[r] + counts[r]].uniform_(generator=g)
    exponentials = None
    if not bool(case.is_greedy.values.all()):
        exponentials = torch.empty((case.bs, case.target_logits.values.shape[1]), dtype=torch.float32,
                                   device=device).exponential_()
        for r, g in generators.items():
            if counts[r]:
                exponentials[r].exponential_(generator=g)
    after = default.get_state()
    default.set_state(before)
    return uniforms, exponentials, generators, after


@claim(sx.VLLM_V1, levels=("exact",), case=vllm.cases_for_impl())
def test_vllm_v1_makes_v1s_generator_calls(simacc, case):
    """V1 exactly: its uniforms and exponentials from the calls §16.2 names, each generator left as those calls leave it (§16.2)."""
    _check_v1_draws(simacc, case)


@claim(sx.VLLM_V1, levels=("exact",), case=sv.v1_server_batches())
def test_vllm_v1_a_servers_batch_makes_v1s_generator_calls(simacc, case):
    """V1 exactly, in a batch of 1025 sampling requests each with a generator of its own: every one of them draws from its own (§16.2)."""
    _check_v1_draws(simacc, case)


@claim(sx.VLLM_V1, levels=("exact",), case=vllm.cases_for_impl())
def test_vllm_v1_compares_each_uniform_with_its_rate_in_float64(simacc, case):
    """V1 exactly, its first rate set onto a uniform that float32 rounds up to it: u < c compared in the uniforms' float64, not in the logits' float32 (§16.1, §16.2)."""
    _check_v1_draws(simacc, _first_rate_at_a_uniform(case, simacc.device))


def _first_rate_at_a_uniform(case, device):
    """``case`` with its first rate the float32 value just above the uniform of the first
    request whose first draft is a token the target allows and whose uniform float32 rounds
    up (by half a float32 step at most: about one draft in 2**25 by chance); ``case`` itself
    where no first draft's uniform rounds up."""
    uniforms = v1_draws(case, device)[0].tolist()
    logits, start = case.target_logits.values, 0
    for n, req in zip(case.counts, vllm.requests(case)):
        if n and req.drafts[0] >= 0 and logits[start, req.drafts[0]] > -torch.inf:
            rate = torch.tensor(uniforms[start], dtype=torch.float32)
            if rate.item() > uniforms[start]:
                rates = case.synthetic_conditional_rates.values.clone()
                rates[0] = rate
                return dataclasses.replace(case, synthetic_conditional_rates=TensorArg(rates))
        start += n
    return case


def _check_v1_draws(simacc, case):
    """The call's result and generators against §16.2's calls made by hand."""
    __tracebackhide__ = True
    device = simacc.device
    uniforms, exponentials, generators, after = v1_draws(case, device)
    outcome = simacc.run(case)  # the runner seeds the device's default generator with case.seed
    state = outcome.rng_after if torch.device(device).type == "cpu" else devices.default_generator(device).get_state()
    check(torch.equal(state, after), f"the default generator of {device} after the call", "in another state",
          "in the state §16.2's calls leave it", case)
    for r, g in generators.items():
        same = torch.equal(outcome.args["generators"][r].get_state(), g.get_state())
        check(same, f"request {r}'s generator after the call ({case.counts[r]} drafts)", "in another state",
              "in the state §16.2's calls leave it" + ("" if case.counts[r] else ": untouched, having no drafts"), case)
    u, c = uniforms.tolist(), case.synthetic_conditional_rates.values.double().tolist()
    inv_q = None if exponentials is None else exponentials.reciprocal()
    probs = case.target_logits.values.to(device).softmax(dim=-1, dtype=torch.float32)  # on the device: its bits
    rows, start = [], 0
    for req in vllm.requests(case):
        a, n = 0, len(req.drafts)
        while a < n and req.drafts[a] >= 0 and u[start + a] < c[a]:
            a += 1
        if a == n:
            last = req.bonus
        elif req.greedy:
            last = req.rejection[a]
        else:
            kept = probs[start + a].clone()
            if req.drafts[a] >= 0:
                kept[req.drafts[a]] = 0.0
            last = int((kept * inv_q[req.index]).argmax())
        rows.append([*req.drafts[:a], last] + [-1] * (case.max_len - a - 1))
        start += n
    expected = torch.tensor(rows, dtype=torch.int32).reshape(case.bs, case.max_len).to(outcome.args["target_logits"].device)
    check_equal("result", outcome.returned, expected, case,
                role=lambda index: f"request {index[0]}'s column {index[1]}, with V1's draws")

