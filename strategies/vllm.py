"""Strategies for vLLM's synthetic acceptance (CONTRACT.md §13-§18): settings, and coherent
batches for the decision (V1's layout, uniforms given), V1's sampler and V2's.

A batch is plain data, CPU values and a few ints, that builds fresh keyword arguments on any
device (``kwargs(device)``), generators included. As in :mod:`simacc.strategies.cases`, a
batch makes few draws: the shape of the batch and how its contents are made (placeholders,
greedy rows, seeded requests, uniforms at the edges) are draws, the contents come from the
batch's one ``seed``.
"""

import functools
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from simacc.contract import vllm as ref
from simacc.strategies import scalars as sc

MAX_K = 8  # vLLM's synthetic knobs are used with a handful of speculative tokens
PLACEHOLDERS = ("none", "first", "middle", "last", "scattered")  # where the -1 drafts go
GREEDY = ("greedy", "random", "mixed")
COUNTS = ("mixed", "full", "none")  # drafts per request: 0..K each, all K, all 0
UNIFORMS = ("random", "edges")  # edges: exactly the rate (rejects), just below it (accepts), 0
SEEDED = ("none", "some", "all")  # V1: which requests have generators of their own

_EDGE_RATES = (0.0, 1.0, 0.5, 0.25, 0.75, 0.9, 0.1)
_FRACTIONS = (0.0, 0.5, 0.25, 0.75, 0.6, 0.1, 0.9)


def _check_k(name, value):
    if not 1 <= value <= MAX_K:
        raise ValueError(f"{name}={value} must lie in [1, {MAX_K}]")


@functools.lru_cache(maxsize=None)
def acceptance_rates(k):
    """Valid unconditional rates ``p_0..p_{k-1}`` (each in [0, 1], non-increasing), as a
    tuple: plain values with 0 and 1 at the edges, or arbitrary floats sorted down. Shrinks
    toward all zeros."""
    _check_k("k", k)
    plain = st.lists(st.sampled_from(_EDGE_RATES), min_size=k, max_size=k)
    arbitrary = st.lists(st.floats(0, 1), min_size=k, max_size=k)
    return st.one_of(plain, arbitrary).map(lambda rates: tuple(sorted(rates, reverse=True)))


@functools.lru_cache(maxsize=None)
def acceptance_lengths(k):
    """Mean acceptance lengths in ``[1, k + 1]``: the integers, an integer plus a plain
    fraction, arbitrary floats, and both ends. Shrinks toward 1."""
    _check_k("k", k)
    whole = st.sampled_from([float(n) for n in range(1, k + 2)])
    fraction = st.sampled_from([n + f for n in range(1, k + 1) for f in _FRACTIONS])
    return st.one_of(whole, fraction, st.floats(1, k + 1))


@dataclass(frozen=True)
class Settings:
    """The synthetic knobs of one speculative config (exactly one of the two is set)."""

    num_speculative_tokens: int
    synthetic_acceptance_rates: tuple | None = None
    synthetic_acceptance_length: float | None = None

    def kwargs(self):
        return {"num_speculative_tokens": self.num_speculative_tokens,
                "synthetic_acceptance_rates": self.synthetic_acceptance_rates,
                "synthetic_acceptance_length": self.synthetic_acceptance_length}


def synthetic_settings(max_k=MAX_K):
    """Valid :class:`Settings` with ``K`` in ``[1, max_k]``: rates or a length. Shrinks
    toward K=1 and rates of 0."""
    _check_k("max_k", max_k)
    return _settings(st.integers(1, max_k))


@st.composite
def _settings(draw, ks):
    k = draw(ks, label="K")
    if draw(st.booleans(), label="by_length"):
        return Settings(k, synthetic_acceptance_length=draw(acceptance_lengths(k), label="length"))
    return Settings(k, synthetic_acceptance_rates=draw(acceptance_rates(k), label="rates"))


def _mode(choices):
    return st.sampled_from(choices)


# -- the contents of a batch, from its seed ------------------------------------------------------


def _counts(gen, mode, rows, k):
    if mode == "full":
        return [k] * rows
    if mode == "none":
        return [0] * rows
    return torch.randint(0, k + 1, (rows,), generator=gen).tolist()


def _place_holes(gen, drafts, counts, mode):
    """-1 placeholders in the flat ``drafts``: at each request's first, middle or last draft,
    or at about one draft in four."""
    if mode == "none" or not counts:
        return drafts
    n = torch.tensor(counts)
    start = n.cumsum(0) - n
    if mode == "scattered":
        return torch.where(torch.rand(drafts.shape, generator=gen) < 0.25, -1, drafts)
    at = {"first": start, "middle": start + n // 2, "last": start + n - 1}[mode][n > 0]
    drafts = drafts.clone()
    drafts[at] = -1
    return drafts


def _greedy(gen, mode, rows):
    if mode != "mixed":
        return torch.full((rows,), mode == "greedy")
    return torch.rand(rows, generator=gen) < 0.5


def _edge_uniforms(gen, counts, conditional):
    """For each draft: exactly its rate (rejected, the test being ``u < c``), the float64 just
    below it (accepted where the rate is above 0), or 0."""
    cols = torch.cat([torch.arange(n) for n in counts]) if sum(counts) else torch.zeros(0, dtype=torch.int64)
    rate = conditional.to(torch.float64)[cols]
    below = torch.nextafter(rate, torch.zeros_like(rate))
    pick = torch.randint(0, 3, rate.shape, generator=gen)
    return torch.where(pick == 0, rate, torch.where(pick == 1, below, 0.0))


# -- the decision, given the uniforms (§15.1, §16.1) ----------------------------------------------


@dataclass(frozen=True, eq=False)
class DecisionBatch:
    """The arguments of ``synthetic_accept``: CPU values, the rates as unconditional floats."""

    num_draft_tokens: tuple
    draft_token_ids: torch.Tensor
    uniform_probs: torch.Tensor
    rates: tuple
    target_argmax: torch.Tensor
    recovered_token_ids: torch.Tensor
    bonus_token_ids: torch.Tensor
    is_greedy: torch.Tensor

    def kwargs(self, device="cpu"):
        tensors = ("draft_token_ids", "uniform_probs", "target_argmax", "recovered_token_ids", "bonus_token_ids",
                   "is_greedy")
        return {"num_draft_tokens": list(self.num_draft_tokens),
                "synthetic_conditional_rates": ref.conditional_rates(unconditional_rates=self.rates, device=device),
                **{name: getattr(self, name).to(device) for name in tensors}}


def decision_batches(*, min_bs=0, max_bs=sc.MAX_BS, max_k=MAX_K):
    """Decision batches (:class:`DecisionBatch`): ``B`` in ``[min_bs, max_bs]`` (a server's sizes past 256
    included), ``K`` in ``[1, max_k]``, 0..K drafts per request, -1 placeholders first, in the
    middle, last or scattered, greedy, random or mixed rows, uniforms random or at the rates'
    edges, token ids up to int32's. Shrinks toward B=1, K=1, rates of 0, no placeholders,
    greedy rows, random uniforms, small ids."""
    _check_k("max_k", max_k)
    return _decision_batches(sc.batch_sizes(min_bs, max_bs), st.integers(1, max_k))


@st.composite
def _decision_batches(draw, batch_sizes, ks):
    rows = draw(batch_sizes, label="B")
    k = draw(ks, label="K")
    rates = draw(acceptance_rates(k), label="rates")
    counts_mode = draw(_mode(COUNTS), label="counts")
    holes = draw(_mode(PLACEHOLDERS), label="placeholders")
    greedy = draw(_mode(GREEDY), label="greedy")
    uniforms = draw(_mode(UNIFORMS), label="uniforms")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    gen = torch.Generator().manual_seed(draw(sc.seeds(), label="seed"))
    counts = _counts(gen, counts_mode, rows, k)
    tokens = sum(counts)
    conditional = ref.conditional_rates(unconditional_rates=rates)
    drafts = torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).to(torch.int32)
    return DecisionBatch(
        num_draft_tokens=tuple(counts),
        draft_token_ids=_place_holes(gen, drafts, counts, holes),
        uniform_probs=(torch.rand(tokens, generator=gen, dtype=torch.float64) if uniforms == "random"
                       else _edge_uniforms(gen, counts, conditional)),
        rates=rates,
        target_argmax=torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64),
        recovered_token_ids=torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).to(torch.int32),
        bonus_token_ids=torch.randint(0, vocab, (rows, 1), generator=gen, dtype=torch.int64),
        is_greedy=_greedy(gen, greedy, rows),
    )


# -- the samplers, with their own random numbers (§16.2, §17) ----------------------------------------


_VOCABS = st.sampled_from((16, 2, 5, 64))  # sampler cases carry (tokens, V) logits: small vocabularies


@dataclass(frozen=True, eq=False)
class V1Batch:
    """The arguments of V1's ``synthetic_rejection_sample``; ``generator_seeds`` seeds a
    fresh generator per seeded request, ``seed`` the default generator before the call."""

    num_draft_tokens: tuple
    draft_token_ids: torch.Tensor
    target_logits: torch.Tensor
    bonus_token_ids: torch.Tensor
    is_greedy: torch.Tensor
    generator_seeds: dict
    rates: tuple
    seed: int

    def kwargs(self, device="cpu"):
        return {"num_draft_tokens": list(self.num_draft_tokens),
                "draft_token_ids": self.draft_token_ids.to(device), "target_logits": self.target_logits.to(device),
                "bonus_token_ids": self.bonus_token_ids.to(device), "is_greedy": self.is_greedy.to(device),
                "generators": {r: torch.Generator(device).manual_seed(s) for r, s in self.generator_seeds.items()},
                "synthetic_conditional_rates": ref.conditional_rates(unconditional_rates=self.rates, device=device)}


def v1_batches(*, min_bs=0, max_bs=sc.MAX_BS, max_k=MAX_K):
    """V1 batches (:class:`V1Batch`), drawn like :func:`decision_batches`, with float32 target logits
    over a small vocabulary instead of the uniforms and rejection tokens, and no, some or
    every request seeded. Shrinks toward B=1, K=1, rates of 0, greedy rows, none seeded."""
    _check_k("max_k", max_k)
    return _v1_batches(sc.batch_sizes(min_bs, max_bs), st.integers(1, max_k))


@st.composite
def _v1_batches(draw, batch_sizes, ks):
    rows = draw(batch_sizes, label="B")
    k = draw(ks, label="K")
    rates = draw(acceptance_rates(k), label="rates")
    counts_mode = draw(_mode(COUNTS), label="counts")
    holes = draw(_mode(PLACEHOLDERS), label="placeholders")
    greedy = draw(_mode(GREEDY), label="greedy")
    seeded = draw(_mode(SEEDED), label="seeded")
    vocab = draw(_VOCABS, label="vocab")
    seed = draw(sc.seeds(), label="seed")
    gen = torch.Generator().manual_seed(seed)
    counts = _counts(gen, counts_mode, rows, k)
    tokens = sum(counts)
    drafts = torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).to(torch.int32)
    chosen = {"none": [], "all": range(rows), "some": torch.randperm(rows, generator=gen)[: rows // 2].tolist()}
    return V1Batch(
        num_draft_tokens=tuple(counts),
        draft_token_ids=_place_holes(gen, drafts, counts, holes),
        target_logits=torch.randn((tokens, vocab), generator=gen),
        bonus_token_ids=torch.randint(0, vocab, (rows, 1), generator=gen, dtype=torch.int64),
        is_greedy=_greedy(gen, greedy, rows),
        generator_seeds={r: seed + 1 + r for r in sorted(chosen[seeded])},
        rates=rates,
        seed=seed,
    )


@dataclass(frozen=True, eq=False)
class V2Batch:
    """The arguments of ``synthetic_rejection_sample_v2`` (CPU values, unconditional rates)."""

    target_logits: torch.Tensor
    draft_sampled: torch.Tensor
    cu_num_logits: torch.Tensor
    pos: torch.Tensor
    temperature: torch.Tensor
    seed: torch.Tensor
    rates: tuple

    @property
    def num_draft_tokens(self):
        return (self.cu_num_logits.diff() - 1).tolist()

    def kwargs(self, device="cpu"):
        tensors = ("target_logits", "draft_sampled", "cu_num_logits", "pos", "temperature", "seed")
        return {**{name: getattr(self, name).to(device) for name in tensors},
                "num_speculative_steps": len(self.rates),
                "synthetic_conditional_rates": ref.conditional_rates(unconditional_rates=self.rates, device=device)}


def v2_batches(*, min_bs=0, max_bs=sc.MAX_BS, max_k=MAX_K):
    """V2 batches (:class:`V2Batch`): ``R`` requests of 0..K drafts (``n + 1`` logits each, the drafts
    one place after their logit), placeholders and greedy rows as in
    :func:`decision_batches`, positions from an arbitrary start per request, distinct int64
    seeds (vLLM draws one per request from the whole range). Shrinks toward R=1, K=1, rates
    of 0, greedy rows."""
    _check_k("max_k", max_k)
    return _v2_batches(sc.batch_sizes(min_bs, max_bs), st.integers(1, max_k))


@st.composite
def _v2_batches(draw, batch_sizes, ks):
    rows = draw(batch_sizes, label="R")
    k = draw(ks, label="K")
    rates = draw(acceptance_rates(k), label="rates")
    counts_mode = draw(_mode(COUNTS), label="counts")
    holes = draw(_mode(PLACEHOLDERS), label="placeholders")
    greedy = draw(_mode(GREEDY), label="greedy")
    vocab = draw(_VOCABS, label="vocab")
    gen = torch.Generator().manual_seed(draw(sc.seeds(), label="seed"))
    counts = _counts(gen, counts_mode, rows, k)
    sizes = torch.tensor(counts, dtype=torch.int64) + 1
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)]).to(torch.int32)
    logits = int(sizes.sum())
    owner = torch.repeat_interleave(torch.arange(rows), sizes)
    local = torch.arange(logits) - cu[:-1].to(torch.int64)[owner]
    sampled = torch.randint(0, vocab, (logits,), generator=gen, dtype=torch.int64)
    is_draft = local > 0  # draft i of a request sits one place after its logit
    drafts = _place_holes(gen, sampled[is_draft], counts, holes)
    sampled[is_draft] = drafts
    starts = torch.randint(0, 1 << 20, (rows,), generator=gen, dtype=torch.int64)
    seeds = torch.randint(-(2**62), 2**62, (rows,), generator=gen, dtype=torch.int64)  # distinct but 1 in 1e11
    return V2Batch(
        target_logits=torch.randn((logits, vocab), generator=gen),
        draft_sampled=sampled,
        cu_num_logits=cu,
        pos=starts[owner] + local,
        temperature=torch.where(_greedy(gen, greedy, rows), 0.0, 1.0),
        seed=seeds,
        rates=rates,
    )
