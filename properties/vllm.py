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
from simacc.harness.model.cases import TensorArg, V1Case, V2Case


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
    kind: str  # the case type's name: what the messages call the token's source
    rows: tuple = ()  # the target logit each token 0..n is emitted at (None: the layout passes none)

    @property
    def real(self):
        """How many drafts come before the first placeholder (all of them when none is -1)."""
        return next((i for i, d in enumerate(self.drafts) if d < 0), len(self.drafts))

    def rejection_role(self, a):
        """What a message says of the token after ``a`` accepted drafts, on a rejection."""
        if self.kind == "DecisionCase":
            source = "target_argmax there" if self.greedy else "recovered_token_ids there"
        else:
            source = "the target's argmax" if self.greedy else "a sample of the target without the draft"
        return f"request {self.index}'s token {a} (after {a} accepted drafts, draft {a} rejected: {source})"

    def bonus_role(self):
        """What a message says of the token after a full acceptance."""
        if self.kind != "V2Case":
            source = "bonus_token_ids"
        else:
            source = "the argmax of its last logit" if self.greedy else "a sample of its last logit"
        return f"request {self.index}'s token {len(self.drafts)} (every draft accepted: the bonus, {source})"


def requests(case):
    """The case's requests (:class:`Request`), in order."""
    kind = type(case).__name__
    greedy = case.greedy.tolist()
    found = []
    if kind == "V2Case":
        logits, sampled, starts = case.target_logits.values, case.draft_sampled.values.tolist(), case.cu_num_logits.values.tolist()
        argmax = logits.argmax(1).tolist()
        for r, n in enumerate(case.counts):
            start = starts[r]
            known = [argmax[start + i] if greedy[r] else None for i in range(n + 1)]  # logit i verifies draft i
            found.append(Request(r, tuple(sampled[start + 1 : start + 1 + n]), greedy[r], tuple(known[:n]), known[n],
                                 logits.shape[1], kind, tuple(range(start, start + n + 1))))
        return found
    drafts, bonus = case.draft_token_ids.values.tolist(), case.bonus_token_ids.values[:, 0].tolist()
    if kind == "DecisionCase":
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
                             bonus[r], vocab, kind, rows))
        start += n
    return found


def _owners(case, greedy):
    """``(flat index, greedy)`` of each draft of a V1-layout case."""
    return [(t, greedy[r]) for t, r in enumerate(r for r, n in enumerate(case.counts) for _ in range(n))]


def counts(case, outcome):
    """How many tokens each request says it emitted: V2's ``num_sampled`` as it is (past the
    row's width too), else the length of what :func:`emitted` reads."""
    if type(case).__name__ == "V2Case":
        emitted(case, outcome)  # the same checks of the result's form
        return outcome.returned[1].tolist()
    return [len(tokens) for tokens in emitted(case, outcome)]


def emitted(case, outcome):
    """What each request emitted: a list of token lists, one per request (see the module); a
    V2 count past the row's width reads the whole row (how many is :func:`counts`' business)."""
    got = outcome.returned
    rows = case.bs
    if type(case).__name__ == "V2Case":
        shaped = isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)
        check(shaped, "result", _shown(got), "(sampled, num_sampled), two tensors", case)
        sampled, counts = got
        check(sampled.dim() == 2 and sampled.shape[0] == rows and counts.shape == (rows,),
              "(sampled.shape, num_sampled.shape)", (tuple(sampled.shape), tuple(counts.shape)),
              f"({rows}, K + 1) and ({rows},)", case)
        values = sampled.tolist()
        return [row[: max(count, 0)] for row, count in zip(values, counts.tolist())]
    check(isinstance(got, torch.Tensor) and got.dim() == 2 and got.shape[0] == rows, "result", _shown(got),
          f"a (B={rows}, W) tensor", case)
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


# -- strategies for the implementation under test ------------------------------------------


def cases_for_impl(**options):
    """The cases of the implementation's own vLLM layout with ``options`` (``min_bs``,
    ``rate``...), from the strategy ``sx.BY_CONTRACT`` registers for it."""
    frozen = tuple(sorted(options.items()))
    return lambda impl: _built(sx.BY_CONTRACT[impl.contract][0], frozen)


@functools.lru_cache(maxsize=None)
def _built(strategy, options):
    return strategy(**dict(options))


# -- batches for the statistical properties ---------------------------------------------------


@dataclass(frozen=True)
class Drafted:
    """One request of a hand-built batch: its drafts, its target logits (``n + 1`` rows: one
    per draft, then the bonus's), whether it is greedy, its seed (None: a V1 request without a
    generator of its own) and its first position (V2)."""

    drafts: tuple
    logits: torch.Tensor
    greedy: bool
    seed: int | None = None
    position: int = 0


def sampler_case(contract, batch, rates, seed=0):
    """A case of ``contract``'s sampler (``vllm_v1`` or ``vllm_v2``) holding the requests of
    ``batch`` (:class:`Drafted`) and the conditional ``rates``; V1's bonus is the argmax of
    each request's last logit, as V2 would emit for a greedy request."""
    rates = TensorArg(torch.tensor(rates, dtype=torch.float32))
    counts = [len(req.drafts) for req in batch]
    if contract == "vllm_v1":
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
        temperature=TensorArg(torch.tensor([0.0 if req.greedy else 1.0 for req in batch])),
        request_seeds=TensorArg(torch.tensor([req.seed for req in batch], dtype=torch.int64)),
        num_speculative_steps=len(rates.values), synthetic_conditional_rates=rates, seed=seed)


def accepted_counts(case, outcome):
    """Each request's accepted count, read as the number of tokens it emitted less one."""
    return [count - 1 for count in counts(case, outcome)]


def with_last_seeded(case, seed):
    """``case`` with its last request sampling with a seed of its own: in V1 only such a
    request has a generator (§16.3); in V2 every request has a seed, kept as drawn."""
    if type(case).__name__ == "V2Case":
        return case
    seeds, greedy = case.generator_seeds.values.clone(), case.is_greedy.values.clone()
    seeds[-1], greedy[-1] = seed, False
    return dataclasses.replace(case, generator_seeds=TensorArg(seeds), is_greedy=TensorArg(greedy))


def last_alone(case, seed):
    """The last request of ``case`` alone, the default generator seeded with ``seed``."""
    if type(case).__name__ == "V2Case":
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
