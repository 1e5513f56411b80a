"""vLLM: the tokens each request emits (CONTRACT.md §15, §16.1, §17.2, §18.4), by rules that hold
whatever the draws, in the decision's layout and in both samplers'; and the decision's whole
output, exact, given its uniforms.

A request emits its accepted drafts verbatim, then exactly one more token: the target's on
a rejection (its argmax for a greedy request, the recovered token for a sampling one, never
the rejected draft, never -1), the bonus after a full acceptance. No placeholder is accepted,
nor anything after one, and in the samplers no token is emitted where the target's logit is
-inf (§15.4). V2's ``sampled`` past ``num_sampled`` is never read.

A server's batch in every run (1025 requests, built once a process; the decision's of up to 12
drafts): the drawn cases stop at 300 requests, so a kernel launched in blocks of 512 that
reads its offsets or seeds per block, or an output buffer kept across calls of one shape,
would pass. Each batch is called twice,
the second time with its requests reversed: the decision's outputs are exact both times; V2's
requests follow the rules and emit the same tokens in either order (§18.3); and the first
result, still held, keeps its values.
"""

import torch

from simacc import strategies as sx
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.properties import support, vllm
from simacc.strategies import vllm as sv

LAYOUTS = (sx.VLLM_DECISION, sx.VLLM_V1, sx.VLLM_V2)
cases = vllm.cases_for_impl()


@claim(*LAYOUTS, case=cases)
def test_vllm_results_have_their_layouts_shape_dtype_and_device(simacc, case):
    """V1's layout returns a (B, max_n + 1) int32 tensor, V2 (R, K + 1) int64 and (R,) int32, on the inputs' device (§16.1, §17.2)."""
    vllm.check_layout(case, simacc.run(case))


@claim(*LAYOUTS, case=cases)
def test_vllm_one_token_follows_the_accepted_drafts(simacc, case):
    """Each request emits 1 to n + 1 tokens: its accepted drafts and exactly one more; -1 after them in V1's layout (§15.2)."""
    vllm.check_counts(case, simacc.run(case))


@claim(*LAYOUTS, case=cases)
def test_vllm_accepted_drafts_are_emitted_verbatim(simacc, case):
    """A request's tokens but the last are its first drafts, in order and verbatim: the walk stops at the first rejection (§15.1)."""
    vllm.check_verbatim(case, simacc.run(case))


@claim(*LAYOUTS, case=cases)
def test_vllm_placeholder_drafts_are_never_accepted(simacc, case):
    """No -1 draft is accepted, nor any draft after one, and no request emits -1 (§15.3; vLLM #46533)."""
    vllm.check_placeholders(case, simacc.run(case))


@claim(*LAYOUTS, case=cases)
def test_vllm_a_rejection_emits_the_targets_token(simacc, case):
    """On a rejection at draft i: the target's argmax there (greedy), the recovered token (sampling), never the rejected draft (§15.2)."""
    vllm.check_rejection(case, simacc.run(case))


@claim(*LAYOUTS, case=cases)
def test_vllm_a_full_acceptance_emits_the_bonus(simacc, case):
    """After all n drafts are accepted the request emits its bonus token, and a request without drafts its bonus alone (§15.2)."""
    vllm.check_bonus(case, simacc.run(case))


@claim(sx.VLLM_V1, sx.VLLM_V2, case=vllm.cases_for_impl(masked=True, rate=1.0))
def test_vllm_a_token_the_target_forbids_is_never_emitted(simacc, case):
    """Every token is one the target allows where it is emitted (a processed logit above -inf): a draft a grammar's mask refuses is never accepted, in synthetic mode too (§15.4).

    Rates of 1, so that every walk reaches the first draft its target refuses. With
    ``--refused-drafts runner`` (vLLM 0.33) the drafts come as that runner passes them on, each
    request's from its first refused one on -1, and the sampler answers for the rest."""
    logits = case.target_logits.values
    for req, tokens in vllm.walked(case, simacc.run(case)):
        for j, (token, row) in enumerate(zip(tokens, req.rows)):
            if row is None:
                continue  # V1's bonus: given, not sampled from a logit here
            allowed = 0 <= token < logits.shape[1] and float(logits[row, token]) > -torch.inf
            role = (f"request {req.index}'s token {j} (draft {j}, accepted)" if j < len(tokens) - 1
                    else req.rejection_role(j) if j < len(req.drafts) else req.bonus_role())
            check(allowed, role, token, f"a token target_logits[{row}] allows"
                  + (f" (target_logits[{row}, {token}] is -inf)" if 0 <= token < logits.shape[1] else ""), case)


@claim(*LAYOUTS, case=vllm.cases_for_impl(rate=1.0))
def test_vllm_rates_of_one_accept_every_real_draft(simacc, case):
    """With every rate 1, each request accepts all its drafts up to its first placeholder (§15.1: u < 1 always)."""
    for req, tokens in vllm.walked(case, simacc.run(case)):
        check(len(tokens) - 1 == req.real, f"the drafts request {req.index} accepted, every rate 1", len(tokens) - 1,
              f"{req.real}: every draft before its first placeholder" if req.real < len(req.drafts)
              else f"all {req.real}", case)


@claim(*LAYOUTS, case=vllm.cases_for_impl(rate=0.0))
def test_vllm_rates_of_zero_accept_no_draft(simacc, case):
    """With every rate 0, no request accepts a draft, whatever its uniforms (§15.1: u < 0 never)."""
    for req, tokens in vllm.walked(case, simacc.run(case)):
        check(len(tokens) == 1, f"the drafts request {req.index} accepted, every rate 0", len(tokens) - 1, 0, case)


@claim(sx.VLLM_DECISION, case=vllm.cases_for_impl(min_bs=1))
def test_vllm_decision_is_exact_given_the_uniforms(simacc, case):
    """The decision's output, every byte: draft i accepted while real and u_i < c_i, compared in float64 (§16.1)."""
    _check_decision(case, simacc.run(case))


def _check_decision(case, outcome):
    """The decision's whole output against §16.1's walk, a request at a time."""
    __tracebackhide__ = True
    uniforms = case.uniform_probs.values.double().tolist()
    rates = case.synthetic_conditional_rates.values.double().tolist()
    rows, roles, start = [], [], 0
    for req in vllm.requests(case):
        a = 0
        while a < len(req.drafts) and req.drafts[a] >= 0 and uniforms[start + a] < rates[a]:
            a += 1
        last = req.rejection[a] if a < len(req.drafts) else req.bonus
        rows.append([*req.drafts[:a], last] + [-1] * (case.max_len - a - 1))
        roles.append((a, req))
        start += len(req.drafts)

    def role(index):
        r, j = index
        a, req = roles[r]
        if j < a:
            return f"request {r}'s token {j}: draft {j}, accepted (u={uniforms[sum(case.counts[:r]) + j]!r} < c_{j})"
        if j == a:
            return req.rejection_role(a) if a < len(req.drafts) else req.bonus_role()
        return f"request {r}'s column {j}: padding after its {a + 1} tokens, -1"

    device = outcome.args["target_argmax"].device
    check_equal("result", outcome.returned, torch.tensor(rows, dtype=torch.int32, device=device).reshape(case.bs, case.max_len),
                case, role=role)


def _reversed(case):
    return vllm.reordered(case, list(range(case.bs - 1, -1, -1)))


@claim(sx.VLLM_DECISION, case=sv.decision_server_batches())
def test_vllm_decision_a_servers_batch_is_exact(simacc, case):
    """A batch of 1025 requests of up to 12 drafts, and the same reversed, get §16.1's whole output; the first still holds its values after the second call (§16.1)."""
    first = simacc.run(case)
    _check_decision(case, first)
    held = support.held(first.returned)
    backwards = _reversed(case)
    _check_decision(backwards, simacc.run(backwards))
    support.check_intact("the first call's result", held, case)


@claim(sx.VLLM_V2, case=sv.v2_server_batches())
def test_vllm_v2_a_servers_batch_emits_each_requests_tokens_in_any_order(simacc, case):
    """A batch of 1025 requests follows §15's rules and, reversed, each request emits the same tokens; the first result keeps its defined entries after the second call (§17.2, §18.3)."""
    first = simacc.run(case)
    for rule in vllm.RULES:
        rule(case, first)
    tokens = vllm.emitted(case, first)
    counts = torch.tensor(vllm.counts(case, first))
    held = support.held(first.returned[0]), support.held(first.returned[1])
    backwards = _reversed(case)
    again = vllm.emitted(backwards, simacc.run(backwards))[::-1]
    for r, (got, expected) in enumerate(zip(again, tokens)):
        check(got == expected, f"request {r}'s tokens with the batch reversed (it is request {case.bs - 1 - r} there)",
              got, f"{expected}, as in the batch's order: its seed, positions and logits are the same", case)
    defined = torch.arange(case.k + 1) < counts[:, None]
    support.check_intact("the first call's sampled", held[0], case, defined)
    support.check_intact("the first call's num_sampled", held[1], case)
