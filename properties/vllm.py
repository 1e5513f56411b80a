"""What the vLLM property modules share (CONTRACT.md §15-§18): each request of a case as the
token rules see it, what an implementation emitted for it, and batches built for the
statistical properties, for the decision's layout and both samplers'.

The oracles here read a case the plain way, one request at a time in Python, never through
the reference. A request's emitted tokens are read from V1's layout (``(B, max_n + 1)``, -1
after the tokens) up to its last entry other than -1, so that a -1 inside them, or a token
after one, stays visible; from V2's (``sampled``, ``num_sampled``) up to ``num_sampled`` only:
what lies past it is undefined (§17.2) and never read.
"""

import dataclasses
import functools
from dataclasses import dataclass

import torch

from simacc import strategies as sx
from simacc.harness.judging.assertions import check, describe
from simacc.harness.model.cases import TensorArg
from simacc.strategies import DecisionCase, V1Case, V2Case


@dataclass(frozen=True)
class Request:
    """Request ``index`` of a case: its drafts, whether it is greedy, and what §15.2 says it
    emits after ``a`` accepted drafts: ``rejection[a]`` on a rejection there, ``bonus`` after
    all of them; None where only the law fixes the token (a sampling request of a sampler),
    which must then be a token of the vocabulary of ``vocab`` (None: unknown) and never the
    rejected draft; ``rows``, the row of ``target_logits`` each of its tokens is emitted at."""

    index: int
    drafts: tuple
    greedy: bool
    rejection: tuple
    bonus: int | None
    vocab: int | None
    kind: type  # the case type: what the messages call the token's source
    rows: tuple = ()  # the target logit each token 0..n is emitted at (None: the layout passes none)

    @property
    def real(self):
        """How many drafts come before the first placeholder (all of them when none is -1)."""
        return next((i for i, d in enumerate(self.drafts) if d < 0), len(self.drafts))

    def rejection_role(self, a):
        """What a message says of the token after ``a`` accepted drafts, on a rejection."""
        if self.kind is DecisionCase:
            source = "target_argmax there" if self.greedy else "recovered_token_ids there"
        else:
            source = "the target's argmax" if self.greedy else "a sample of the target without the draft"
        return f"request {self.index}'s token {a} (after {a} accepted drafts, draft {a} rejected: {source})"

    def bonus_role(self):
        """What a message says of the token after a full acceptance."""
        if self.kind is not V2Case:
            source = "bonus_token_ids"
        else:
            source = "the argmax of its last logit" if self.greedy else "a sample of its last logit"
        return f"request {self.index}'s token {len(self.drafts)} (every draft accepted: the bonus, {source})"


def kind(case):
    """The case's type (a serving loop's step answers for the case it holds)."""
    return type(getattr(case, "case", case))


def requests(case):
    """The case's requests (:class:`Request`), in order."""
    kind_ = kind(case)
    greedy = case.greedy.tolist()
    found = []
    if kind_ is V2Case:
        logits, sampled, starts = case.target_logits.values, case.draft_sampled.values.tolist(), case.cu_num_logits.values.tolist()
        argmax = logits.argmax(1).tolist()
        for r, n in enumerate(case.counts):
            start = starts[r]
            known = [argmax[start + i] if greedy[r] else None for i in range(n + 1)]  # logit i verifies draft i
            found.append(Request(r, tuple(sampled[start + 1 : start + 1 + n]), greedy[r], tuple(known[:n]), known[n],
                                 logits.shape[1], kind_, tuple(range(start, start + n + 1))))
        return found
    drafts, bonus = case.draft_token_ids.values.tolist(), case.bonus_token_ids.values[:, 0].tolist()
    if kind_ is DecisionCase:
        given = (case.target_argmax.values.tolist(), case.recovered_token_ids.values.tolist())
        rejection = [given[0][t] if greedy_row else given[1][t] for t, greedy_row in _owners(case, greedy)]
        vocab = None
    else:
        argmax = case.target_logits.values.argmax(1).tolist()
        rejection = [argmax[t] if greedy_row else None for t, greedy_row in _owners(case, greedy)]
        vocab = case.target_logits.values.shape[1]
    start = 0
    for r, n in enumerate(case.counts):
        rows = (*range(start, start + n), None) if vocab is not None else ()  # V1's bonus is given, not a logit's
        found.append(Request(r, tuple(drafts[start : start + n]), greedy[r], tuple(rejection[start : start + n]),
                             bonus[r], vocab, kind_, rows))
        start += n
    return found


def _owners(case, greedy):
    """``(flat index, greedy)`` of each draft of a V1-layout case."""
    return [(t, greedy[r]) for t, r in enumerate(r for r, n in enumerate(case.counts) for _ in range(n))]


def counts(case, outcome):
    """How many tokens each request says it emitted: V2's ``num_sampled`` as it is (past the
    row's width too), else the length of what :func:`emitted` reads."""
    if kind(case) is V2Case:
        emitted(case, outcome)  # the same checks of the result's form
        return outcome.returned[1].tolist()
    return [len(tokens) for tokens in emitted(case, outcome)]


def emitted(case, outcome):
    """What each request emitted: a list of token lists, one per request (see the module); a
    V2 count past the row's width reads the whole row (how many is :func:`counts`' business)."""
    got = outcome.returned
    rows = case.bs
    if kind(case) is V2Case:
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
            check(False, "result", _shown(got), "(sampled, num_sampled), two tensors", case)  # shown when it fails only
        sampled, counts = got
        check(sampled.dim() == 2 and sampled.shape[0] == rows and counts.shape == (rows,),
              "(sampled.shape, num_sampled.shape)", (tuple(sampled.shape), tuple(counts.shape)),
              f"({rows}, K + 1) and ({rows},)", case)
        values = sampled.tolist()
        return [row[: max(count, 0)] for row, count in zip(values, counts.tolist())]
    if not (isinstance(got, torch.Tensor) and got.dim() == 2 and got.shape[0] == rows):
        check(False, "result", _shown(got), f"a (B={rows}, W) tensor", case)
    found = []
    for row in got.tolist():
        length = next((j + 1 for j in range(len(row) - 1, -1, -1) if row[j] != -1), 0)
        found.append(row[:length])
    return found


def _shown(value):
    return describe(value) if isinstance(value, torch.Tensor) else repr(value)[:200]


def walked(case, outcome):
    """``[(request, its emitted tokens)]``, the requests that emitted 1 to ``n + 1`` tokens:
    how many tokens a request emits is ``one_token_follows_the_accepted_drafts``'s claim, so
    the other rules judge only the requests that emitted a count they can read."""
    return [(req, tokens) for req, tokens, count in zip(requests(case), emitted(case, outcome), counts(case, outcome))
            if 1 <= count <= len(req.drafts) + 1]


# -- the rules each request's tokens follow, whatever the draws (§15, §17.2) -------------------


def check_layout(case, outcome):
    """V1's layout returns a ``(B, max_n + 1)`` int32 tensor, V2 ``(R, K + 1)`` int64 and
    ``(R,)`` int32, on the inputs' device."""
    __tracebackhide__ = True
    device = outcome.args[case.token_fields[1]].device  # the target's tensor
    for name, got, shape, dtype in _layout(case, outcome):
        check(isinstance(got, torch.Tensor), f"type({name})", type(got).__name__, "Tensor", case)
        check(tuple(got.shape) == shape, f"{name}.shape", tuple(got.shape), shape, case)
        check(got.dtype == dtype, f"{name}.dtype", got.dtype, dtype, case)
        check(got.device == device, f"{name}.device", got.device, f"{device} (the inputs' device)", case)


def _layout(case, outcome):
    """``[(name, tensor, shape, dtype)]``: the results the layout returns, as they should be."""
    if kind(case) is V2Case:
        got = outcome.returned if isinstance(outcome.returned, (tuple, list)) else (outcome.returned,)
        check(len(got) == 2, "the number of results", len(got), "2: (sampled, num_sampled)", case)
        return [("sampled", got[0], (case.bs, case.k + 1), torch.int64), ("num_sampled", got[1], (case.bs,), torch.int32)]
    return [("result", outcome.returned, (case.bs, case.max_len), torch.int32)]


def check_counts(case, outcome):
    """Each request emits 1 to ``n + 1`` tokens: its accepted drafts and exactly one more."""
    __tracebackhide__ = True
    said = "num_sampled" if kind(case) is V2Case else "up to its last entry other than -1"
    for req, count in zip(requests(case), counts(case, outcome)):
        n = len(req.drafts)
        check(1 <= count <= n + 1, f"the number of tokens request {req.index} emitted ({said})", count,
              f"1 to n + 1 = {n + 1}: its accepted drafts, then one token", case)


def check_verbatim(case, outcome):
    """A request's tokens but the last are its first drafts, in order and verbatim."""
    __tracebackhide__ = True
    for req, tokens in walked(case, outcome):
        a = len(tokens) - 1
        check(tokens[:a] == list(req.drafts[:a]), f"request {req.index}'s first {a} tokens (its accepted drafts)",
              tokens[:a], f"{list(req.drafts[:a])}: drafts 0..{a - 1} verbatim", case)


def check_placeholders(case, outcome):
    """No -1 draft is accepted, nor any draft after one, and no request emits -1."""
    __tracebackhide__ = True
    for req, tokens in walked(case, outcome):
        a, m = len(tokens) - 1, req.real
        check(a <= m, f"the drafts request {req.index} accepted", a, f"at most {m}: draft {m} is a placeholder (-1)",
              case)
        check(-1 not in tokens, f"request {req.index}'s tokens", tokens, "no -1: a placeholder is never emitted", case)


def check_rejection(case, outcome):
    """On a rejection at draft ``i``: the target's argmax there (greedy), the recovered token
    (sampling), never the rejected draft."""
    __tracebackhide__ = True
    for req, tokens in walked(case, outcome):
        a = len(tokens) - 1
        if a == len(req.drafts):
            continue  # a full acceptance: the bonus's rule
        got, known, draft = tokens[a], req.rejection[a], req.drafts[a]
        if known is not None:
            check(got == known, req.rejection_role(a), got, known, case)
            continue
        if not _nothing_left_without(case, req.rows[a], draft):
            check(got != draft or draft < 0, req.rejection_role(a), got, f"not {draft}, the rejected draft", case)
        check(0 <= got < req.vocab, req.rejection_role(a), got, f"a token of the vocabulary [0, {req.vocab})", case)


def _nothing_left_without(case, row, draft):
    """Whether V1's float32 softmax of the target at ``row`` has no mass left once ``draft`` is
    removed (a draft that leads every other logit by more than about 104): V1 then takes the
    argmax of zeros, token 0, the draft itself perhaps, and the law names no token there."""
    if kind(case) is not V1Case or not 0 <= draft < case.target_logits.values.shape[1]:
        return False
    probs = case.target_logits.values[row].softmax(dim=-1, dtype=torch.float32)
    probs[draft] = 0.0
    return not bool(probs.any())


def check_bonus(case, outcome):
    """After all ``n`` drafts are accepted the request emits its bonus token."""
    __tracebackhide__ = True
    for req, tokens in walked(case, outcome):
        if len(tokens) != len(req.drafts) + 1:
            continue  # a rejection: the rejection's rule
        got = tokens[-1]
        if req.bonus is not None:
            check(got == req.bonus, req.bonus_role(), got, req.bonus, case)
        else:
            check(0 <= got < req.vocab, req.bonus_role(), got, f"a token of the vocabulary [0, {req.vocab})", case)


RULES = (check_layout, check_counts, check_verbatim, check_placeholders, check_rejection, check_bonus)


# -- strategies for the implementation under test ------------------------------------------


def cases_for_impl(**options):
    """The cases of the implementation's own vLLM layout with ``options`` (``min_bs``,
    ``rate``...), from the strategy its record holds; masked ones cut as a
    runner that cuts refused drafts passes them on where the implementation is checked so
    (``--refused-drafts runner``, CONTRACT.md §15.4)."""

    def built(impl):
        cut = (("cut", True),) if options.get("masked") and impl.refused_drafts == "runner" else ()
        return _built(impl.record.strategy, tuple(sorted(options.items())) + cut)

    return built


@functools.lru_cache(maxsize=None)
def _built(strategy, options):
    return strategy(**dict(options))


# -- batches for the statistical properties ---------------------------------------------------


@dataclass(frozen=True)
class Drafted:
    """One request of a hand-built batch: its drafts, its target logits (``n + 1`` rows: one
    per draft, then the bonus's), whether it is greedy, its seed (None: a V1 request without a
    generator of its own) and its first position (V2; given always: V2's uniforms are keyed by
    it, and requests that all start at 0 cannot tell a position from a draft's index); a
    sampling request's temperature (V2; its logits are processed, so the law is theirs at any)."""

    drafts: tuple
    logits: torch.Tensor
    greedy: bool
    seed: int | None
    position: int
    temperature: float = 1.0


def sampler_case(contract, batch, rates, seed=0):
    """A case of ``contract``'s sampler (the record ``sx.VLLM_V1`` or ``sx.VLLM_V2``) holding the requests of
    ``batch`` (:class:`Drafted`) and the conditional ``rates``; V1's bonus is the argmax of
    each request's last logit, as V2 would emit for a greedy request."""
    rates = TensorArg(torch.tensor(rates, dtype=torch.float32))
    counts = [len(req.drafts) for req in batch]
    if contract == sx.VLLM_V1:
        return V1Case(
            draft_token_ids=TensorArg(torch.tensor([d for req in batch for d in req.drafts], dtype=torch.int32)),
            num_draft_tokens=TensorArg(torch.tensor(counts, dtype=torch.int64)),
            target_logits=TensorArg(torch.cat([req.logits[:-1] for req in batch]).to(torch.float32)),
            bonus_token_ids=TensorArg(torch.stack([req.logits[-1].argmax() for req in batch])[:, None]),
            is_greedy=TensorArg(torch.tensor([req.greedy for req in batch])),
            generator_seeds=TensorArg(torch.tensor([-1 if req.seed is None else req.seed for req in batch])),
            synthetic_conditional_rates=rates, seed=seed)
    sizes = torch.tensor(counts, dtype=torch.int64) + 1
    return V2Case(
        target_logits=TensorArg(torch.cat([req.logits for req in batch]).to(torch.float32)),
        draft_sampled=TensorArg(torch.tensor([d for req in batch for d in (0, *req.drafts)], dtype=torch.int64)),
        cu_num_logits=TensorArg(torch.cat([torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)]).to(torch.int32)),
        pos=TensorArg(torch.cat([torch.arange(n) + req.position for n, req in zip(sizes.tolist(), batch)])),
        temperature=TensorArg(torch.tensor([0.0 if req.greedy else req.temperature for req in batch])),
        request_seeds=TensorArg(torch.tensor([req.seed for req in batch], dtype=torch.int64)),
        num_speculative_steps=len(rates.values), synthetic_conditional_rates=rates, seed=seed)


def accepted_counts(case, outcome):
    """Each request's accepted count, read as the number of tokens it emitted less one."""
    return [count - 1 for count in counts(case, outcome)]


def with_last_seeded(case, seed):
    """``case`` with its last request sampling with a seed of its own: in V1 only such a
    request has a generator (§16.3); in V2 every request has a seed, kept as drawn."""
    if kind(case) is V2Case:
        return case
    seeds, greedy = case.generator_seeds.values.clone(), case.is_greedy.values.clone()
    seeds[-1], greedy[-1] = seed, False
    return dataclasses.replace(case, generator_seeds=TensorArg(seeds), is_greedy=TensorArg(greedy))


def last_alone(case, seed):
    """The last request of ``case`` alone, the default generator seeded with ``seed``."""
    if kind(case) is V2Case:
        start = int(case.cu_num_logits.values[-2])
        rows = slice(start, None)
        return dataclasses.replace(
            case, target_logits=TensorArg(case.target_logits.values[rows]),
            draft_sampled=TensorArg(case.draft_sampled.values[rows]),
            cu_num_logits=TensorArg(case.cu_num_logits.values[-2:] - start), pos=TensorArg(case.pos.values[rows]),
            temperature=TensorArg(case.temperature.values[-1:]), request_seeds=TensorArg(case.request_seeds.values[-1:]),
            seed=seed)
    n = case.counts[-1]
    flat = slice(sum(case.counts) - n, None)
    return dataclasses.replace(
        case, draft_token_ids=TensorArg(case.draft_token_ids.values[flat]),
        num_draft_tokens=TensorArg(case.num_draft_tokens.values[-1:]),
        target_logits=TensorArg(case.target_logits.values[flat]),
        bonus_token_ids=TensorArg(case.bonus_token_ids.values[-1:]), is_greedy=TensorArg(case.is_greedy.values[-1:]),
        generator_seeds=TensorArg(case.generator_seeds.values[-1:]), seed=seed)


def reordered(case, order):
    """``case`` (the decision's or V2's) with its requests in ``order`` (request ``order[j]``
    becomes request ``j``), each with its own drafts, logits, positions and seed."""
    if kind(case) is V2Case:
        cu = case.cu_num_logits.values.to(torch.int64)
        rows = torch.cat([torch.arange(int(cu[r]), int(cu[r + 1])) for r in order])
        sizes = cu.diff()[order]
        return dataclasses.replace(
            case, target_logits=TensorArg(case.target_logits.values[rows]),
            draft_sampled=TensorArg(case.draft_sampled.values[rows]),
            cu_num_logits=TensorArg(torch.cat([cu.new_zeros(1), sizes.cumsum(0)]).to(case.cu_num_logits.values.dtype)),
            pos=TensorArg(case.pos.values[rows]), temperature=TensorArg(case.temperature.values[order]),
            request_seeds=TensorArg(case.request_seeds.values[order]))
    counts = torch.tensor(case.counts, dtype=torch.int64)
    starts = counts.cumsum(0) - counts
    flat = torch.cat([torch.arange(int(starts[r]), int(starts[r] + counts[r])) for r in order])
    per_draft = ("draft_token_ids", "uniform_probs", "target_argmax", "recovered_token_ids")
    return dataclasses.replace(
        case, **{name: TensorArg(getattr(case, name).values[flat]) for name in per_draft},
        num_draft_tokens=TensorArg(case.num_draft_tokens.values[order]),
        bonus_token_ids=TensorArg(case.bonus_token_ids.values[order]), is_greedy=TensorArg(case.is_greedy.values[order]))
