"""vLLM's synthetic acceptance (CONTRACT.md Part II, §13-§18): the records of its keyword-only
layouts, and the strategies of their cases: settings, and coherent batches for the decision
(V1's layout, uniforms given), V1's sampler and V2's.

A case (:mod:`simacc.harness.model.cases`) is plain data, CPU values and a few ints, that builds
fresh keyword arguments on any device (``args(device)``), generators included. As in
:mod:`simacc.strategies.eagle`, a batch makes few draws: the shape of the batch and how its
contents are made (placeholders, greedy rows, seeded requests, uniforms at the edges) are draws,
the contents come from the batch's one ``seed``.
"""

import functools
import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from simacc.contract import vllm as ref
from simacc.contract import vllm_v2 as ref2
from simacc.harness.config.contracts import Contract
from simacc.harness.model.cases import INTEGERS, VLLM_FLOATS, Case, TensorArg, first_problem, seeded, tensor_problem
from simacc.strategies import scalars as sc


# -- the case types --------------------------------------------------------------------------------


_UNIFORM_FLOATS = (torch.float16, torch.bfloat16, *VLLM_FLOATS)  # the decision's uniforms: any float (§16.1)


def _floats(arg):
    """A 1-D float tensor's values as the Python floats a vLLM setting holds."""
    return [float(v) for v in arg.values.tolist()]


@dataclass(frozen=True, eq=False, repr=False)
class SettingsCase(Case):
    """The synthetic knobs of one speculative config (CONTRACT.md §13): ``K``, the rates (a
    float64 tensor, passed as a list of floats) and the length, either or both None."""

    num_speculative_tokens: int
    synthetic_acceptance_rates: TensorArg | None
    synthetic_acceptance_length: float | None = None
    seed: int = 0

    def args(self, device):
        rates = self.synthetic_acceptance_rates
        return {"num_speculative_tokens": self.num_speculative_tokens,
                "synthetic_acceptance_rates": None if rates is None else _floats(rates),
                "synthetic_acceptance_length": self.synthetic_acceptance_length}

    @property
    def knobs(self):
        """The knobs given: ``rates``, ``length``, ``both`` or ``neither``."""
        given = (self.synthetic_acceptance_rates is not None, self.synthetic_acceptance_length is not None)
        return {(True, False): "rates", (False, True): "length", (True, True): "both"}.get(given, "neither")

    variant = knobs

    def length_text(self):
        return f"K={self.num_speculative_tokens}"

    def sizes_text(self):
        return f"{self.knobs} given"

    def size_text(self):
        return f"K={self.num_speculative_tokens}"

    def _arguments_problem(self):
        if self.synthetic_acceptance_rates is None:
            return None
        return tensor_problem(self, "synthetic_acceptance_rates", (None,), VLLM_FLOATS)


@dataclass(frozen=True, eq=False, repr=False)
class ConversionCase(Case):
    """Unconditional rates to convert (CONTRACT.md §14), passed as a list of floats with the
    device the runner calls on."""

    unconditional_rates: TensorArg
    seed: int = 0

    def args(self, device):
        return {"unconditional_rates": _floats(self.unconditional_rates), "device": device}

    knobs = variant = "rates"

    def length_text(self):
        return f"K={self.unconditional_rates.values.numel()}"

    def sizes_text(self):
        return f"rates {_floats(self.unconditional_rates)}"

    def size_text(self):
        return self.length_text()

    def _arguments_problem(self):
        return tensor_problem(self, "unconditional_rates", (None,), VLLM_FLOATS)


class _VllmBatch(Case):
    """What the batches of vLLM's samplers share (CONTRACT.md §15-§17): ``B`` requests, each
    walking its own ``n_r <= K`` drafts with its own uniforms, so no one ``L``; the message
    names ``K`` and the output's width instead. ``mode`` says which requests sample."""

    width_name = "W"

    @property
    def k(self):
        return self.synthetic_conditional_rates.values.numel()

    @property
    def greedy(self):
        """``(B,)`` bool: which requests are greedy."""
        return self.is_greedy.values

    @property
    def requests(self):
        """Which requests sample: ``greedy`` (none), ``random`` (all) or ``mixed``."""
        greedy = self.greedy
        return "greedy" if bool(greedy.all()) else "random" if not bool(greedy.any()) else "mixed"

    variant = requests

    def length_text(self):
        return f"K={self.k}"

    def sizes_text(self):
        return f"{self.width_name}={self.max_len}, B={self.bs}, {self.requests} requests"

    def size_text(self):
        return f"B={self.bs} K={self.k}"

    def _rates_problem(self):
        problem = tensor_problem(self, "synthetic_conditional_rates", (None,), VLLM_FLOATS)
        return problem or (None if self.k >= 1 else "synthetic_conditional_rates must hold K >= 1 rates")


class _V1Batch(_VllmBatch):
    """V1's layout: flat drafts, ``num_draft_tokens`` a tensor here and a list of ints in the call."""

    @property
    def counts(self):
        return self.num_draft_tokens.values.tolist()

    @property
    def bs(self):
        return self.num_draft_tokens.values.numel()

    @property
    def max_len(self):
        return max(self.counts, default=0) + 1

    def args(self, device):
        values = super().args(device)
        values["num_draft_tokens"] = self.counts
        return values

    def _batch_problem(self, *flat):
        """The counts in ``[0, K]``, then each tensor of ``flat`` ``(T,)``, the bonus and
        ``is_greedy`` per request."""
        problem = self._rates_problem() or tensor_problem(self, "num_draft_tokens", (None,), (torch.int64,))
        if problem:
            return problem
        counts, rows = self.counts, self.bs
        if counts and not 0 <= min(counts) <= max(counts) <= self.k:
            return f"num_draft_tokens must lie in [0, K={self.k}], got {counts}"
        tokens = sum(counts)
        return first_problem(*(tensor_problem(self, name, (tokens, *rest), kinds) for name, rest, kinds in flat),
                             tensor_problem(self, "bonus_token_ids", (rows, 1)),
                             tensor_problem(self, "is_greedy", (rows,), (torch.bool,)))


@dataclass(frozen=True, eq=False, repr=False)
class DecisionCase(_V1Batch):
    """Arguments of the decision given the uniforms, in V1's layout (CONTRACT.md §16.1)."""

    draft_token_ids: TensorArg
    num_draft_tokens: TensorArg
    uniform_probs: TensorArg
    synthetic_conditional_rates: TensorArg
    target_argmax: TensorArg
    recovered_token_ids: TensorArg
    bonus_token_ids: TensorArg
    is_greedy: TensorArg
    seed: int = 0

    token_fields = ("draft_token_ids", "target_argmax")

    def _arguments_problem(self):
        return self._batch_problem(("draft_token_ids", (), INTEGERS), ("uniform_probs", (), _UNIFORM_FLOATS),
                                   ("target_argmax", (), INTEGERS), ("recovered_token_ids", (), INTEGERS))


@dataclass(frozen=True, eq=False, repr=False)
class V1Case(_V1Batch):
    """Arguments of V1's sampler (CONTRACT.md §16.2): ``generator_seeds`` gives each request
    with a generator of its own the seed of a fresh one (-1: none), ``seed`` the default
    generator's."""

    draft_token_ids: TensorArg
    num_draft_tokens: TensorArg
    target_logits: TensorArg
    bonus_token_ids: TensorArg
    is_greedy: TensorArg
    generator_seeds: TensorArg
    synthetic_conditional_rates: TensorArg
    seed: int = 0

    token_fields = ("draft_token_ids", "target_logits")

    def args(self, device):
        values = super().args(device)
        del values["generator_seeds"]
        values["generators"] = {r: seeded(torch.Generator(device), s)
                                for r, s in enumerate(self.generator_seeds.values.tolist()) if s >= 0}
        return values

    def _arguments_problem(self):
        vocab = self.target_logits.values.shape[-1] if self.target_logits.values.dim() == 2 else -1
        if vocab < 1:
            return "target_logits must be (T, V) with V >= 1"
        if self.bs < 1:
            return "V1's sampler needs at least one request (CONTRACT.md §16.2)"
        return self._batch_problem(("draft_token_ids", (), INTEGERS), ("target_logits", (vocab,), VLLM_FLOATS)) \
            or tensor_problem(self, "generator_seeds", (self.bs,), (torch.int64,))


@dataclass(frozen=True, eq=False, repr=False)
class V2Case(_VllmBatch):
    """Arguments of V2's sampler (CONTRACT.md §17); ``request_seeds`` is the call's ``seed``
    (``seed`` seeds torch's generator, which V2 must not need)."""

    target_logits: TensorArg
    draft_sampled: TensorArg
    cu_num_logits: TensorArg
    pos: TensorArg
    temperature: TensorArg
    request_seeds: TensorArg
    num_speculative_steps: int
    synthetic_conditional_rates: TensorArg
    seed: int = 0

    token_fields = ("draft_sampled", "target_logits")

    @property
    def greedy(self):
        return self.temperature.values == 0

    @property
    def counts(self):
        return (self.cu_num_logits.values.diff() - 1).tolist()

    @property
    def bs(self):
        return self.cu_num_logits.values.numel() - 1

    @property
    def max_len(self):
        return self.num_speculative_steps + 1

    def args(self, device):
        values = super().args(device)
        values["seed"] = values.pop("request_seeds")
        return values

    def _arguments_problem(self):
        logits = self.target_logits.values
        if logits.dim() != 2 or logits.shape[1] < 1:
            return "target_logits must be (N, V) with V >= 1"
        problem = self._rates_problem() or tensor_problem(self, "cu_num_logits", (None,))
        if problem:
            return problem
        if self.num_speculative_steps != self.k:
            return f"num_speculative_steps={self.num_speculative_steps} is not K={self.k}, the number of rates"
        cu, rows = self.cu_num_logits.values, self.bs
        sizes = cu.diff()
        if rows < 0 or int(cu[0]) != 0 or int(cu[-1]) != logits.shape[0] \
                or bool(((sizes < 1) | (sizes > self.k + 1)).any()):
            return f"cu_num_logits must run from 0 to {logits.shape[0]} in steps of 1 to K + 1"
        return first_problem(tensor_problem(self, "target_logits", (None, None), VLLM_FLOATS),
                             tensor_problem(self, "draft_sampled", (logits.shape[0],)),
                             tensor_problem(self, "pos", (logits.shape[0],)),
                             tensor_problem(self, "temperature", (rows,), VLLM_FLOATS),
                             tensor_problem(self, "request_seeds", (rows,), (torch.int64,)))


MAX_K = 8  # vLLM's synthetic knobs are used with a handful of speculative tokens
LONG_K = 16  # the decision's K reaches past MAX_K now and then: a kernel sized for 8 drafts shows
MAX_BS = 300  # past vLLM's default of 256 running requests: a full batch and then some
PLACEHOLDERS = ("none", "first", "middle", "last", "scattered")  # where the -1 drafts go
REQUESTS = "requests"  # what a batch's cases vary: which of its requests sample
GREEDY = ("greedy", "random", "mixed")  # their variants
KNOBS = ("rates", "length", "both", "neither")  # the synthetic knobs a settings case gives: its variants
COUNTS = ("mixed", "full", "none")  # drafts per request: 0..K each, all K, all 0
REFUSED = PLACEHOLDERS[1:]  # masked cases: where the refused drafts go (some always are)
FILLED = ("full", "mixed")  # masked cases: drafts per request (some request always has drafts)
# edges, in two cases of three: at the rate or the next value up (rejects), just below it (accepts), 0
UNIFORMS = ("edges", "random", "edges")
# the uniforms' dtype: V1's float64, or a narrower one, compared with the float32 rates in the wider (§16.1)
UNIFORM_DTYPES = (torch.float64, torch.float16, torch.bfloat16, torch.float32)
SEEDED = ("none", "some", "all")  # V1: which requests have generators of their own

_EDGE_RATES = (0.0, 1.0, 0.5, 0.25, 0.75, 0.9, 0.1)
TEMPERATURES = torch.tensor((1.0, 0.25, 0.7, 1.5, 4.0))  # a sampling request's (processed logits: no effect)
_FRACTIONS = (0.0, 0.5, 0.25, 0.75, 0.6, 0.1, 0.9)


def _check_k(name, value, most=MAX_K):
    if not 1 <= value <= most:
        raise ValueError(f"{name}={value} must lie in [1, {most}]")


@functools.lru_cache(maxsize=None)
def acceptance_rates(k):
    """Valid unconditional rates ``p_0..p_{k-1}`` (each in [0, 1], non-increasing), as a
    tuple: plain values with 0 and 1 at the edges, or arbitrary floats sorted down. Shrinks
    toward all zeros."""
    _check_k("k", k, LONG_K)
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


@functools.lru_cache(maxsize=None)
def _given_lengths(k):
    return acceptance_lengths(k) | st.just(0.0)


def _rates_arg(rates):
    return TensorArg(torch.tensor([float(p) for p in rates], dtype=torch.float64))


def synthetic_settings(max_k=MAX_K):
    """Valid settings (:class:`~simacc.harness.model.cases.SettingsCase`) with ``K`` in
    ``[1, max_k]``: rates or a length. Shrinks toward K=1 and rates of 0."""
    _check_k("max_k", max_k)
    return _settings(st.integers(1, max_k))


@st.composite
def _settings(draw, ks):
    k = draw(ks, label="K")
    if draw(st.booleans(), label="by_length"):
        return SettingsCase(k, None, draw(acceptance_lengths(k), label="length"))
    return SettingsCase(k, _rates_arg(draw(acceptance_rates(k), label="rates")))


BAD_SETTINGS = ("knobs", "count", "range", "increasing", "length")


def bad_settings(defect, max_k=MAX_K):
    """Settings with one ``defect`` of :data:`BAD_SETTINGS` (§13.2): neither knob or both
    (``knobs``; both now and then with a length of 0.0, given though false), rates of another
    count than ``K`` (``count``), a rate outside [0, 1] or NaN (``range``), rates that rise
    somewhere (``increasing``), a length outside ``[1, K + 1]``, NaN, the infinities and one
    float64 step outside either end included (``length``). Each is otherwise valid."""
    _check_k("max_k", max_k)
    if defect not in BAD_SETTINGS:
        raise ValueError(f"defect={defect!r} must be one of {BAD_SETTINGS}")
    return _bad_settings(defect, st.integers(1, max_k))


_OUTSIDE = (-0.1, 1.5, math.nan, -math.inf, math.inf, 1.0000001, -1e-300)


@st.composite
def _bad_settings(draw, defect, ks):
    k = draw(ks, label="K")
    if defect == "knobs":
        if draw(st.booleans(), label="neither"):
            return SettingsCase(k, None)
        # a length of 0.0 is given too: a port that asks whether a knob is given by its truth misses it
        return SettingsCase(k, _rates_arg(draw(acceptance_rates(k))), draw(_given_lengths(k)))
    if defect == "length":
        hairs = (math.nextafter(k + 1, math.inf), math.nextafter(1, 0))  # one float64 step outside
        outside = st.one_of(st.sampled_from((0.999, 0.0, -1.0, k + 1.001, k + 2.0, math.nan, math.inf, -math.inf, *hairs)),
                            st.floats(k + 1, allow_infinity=False, exclude_min=True), st.floats(max_value=1, exclude_max=True))
        return SettingsCase(k, None, draw(outside, label="length"))
    if defect == "count":
        count = draw(st.integers(0, MAX_K), label="count")
        count += count >= k  # 0..MAX_K + 1 but k
        rates = draw(st.lists(st.sampled_from(_EDGE_RATES), min_size=count, max_size=count), label="rates")
        return SettingsCase(k, _rates_arg(sorted(rates, reverse=True)))
    if defect == "range":
        rates = list(draw(acceptance_rates(k), label="rates"))
        rates[draw(st.integers(0, k - 1), label="at")] = draw(st.sampled_from(_OUTSIDE), label="outside")
        return SettingsCase(k, _rates_arg(rates))
    k = max(k, 2)  # one rate cannot rise
    rates = list(draw(acceptance_rates(k), label="rates"))
    at = draw(st.integers(1, k - 1), label="at")
    low = rates[at - 1] = min(rates[at - 1], 0.5)
    rates[at] = draw(st.floats(low, 1, exclude_min=True), label="higher")
    return SettingsCase(k, _rates_arg(rates))


def conversion_cases(max_k=MAX_K):
    """Valid unconditional rates to convert (:class:`~simacc.harness.model.cases.ConversionCase`),
    ``K`` in ``[1, max_k]``, zeros after ones included. Shrinks toward one rate of 0."""
    _check_k("max_k", max_k)
    return st.integers(1, max_k).flatmap(acceptance_rates).map(lambda rates: ConversionCase(_rates_arg(rates)))


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


def _refuse(gen, logits, row_draft, refused):
    """``logits`` masked as a grammar's bitmask writes it (-inf, §15.4): about half of the
    tokens of about half of the rows, then each row's draft (``row_draft``, -1 where the row
    verifies none) refused where ``refused`` says and allowed elsewhere, and one other token
    of every row allowed, so that a rejection has a token to emit."""
    rows, vocab = logits.shape
    mask = (torch.rand(rows, generator=gen) < 0.5)[:, None] & (torch.rand((rows, vocab), generator=gen) < 0.5)
    at = torch.arange(rows)
    has = row_draft >= 0
    mask[at[has], row_draft[has]] = refused[has]
    keep = torch.randint(0, vocab - 1, (rows,), generator=gen)
    mask[at, torch.where(has & (keep >= row_draft), keep + 1, keep)] = False
    return logits.masked_fill(mask, -torch.inf)


def _refused(gen, drafts, counts, mode):
    """Which of the flat ``drafts`` the target refuses: each request's first, middle or last
    draft, or about one in four, as the placeholders go (never a placeholder itself)."""
    return (_place_holes(gen, drafts, counts, mode) == -1) & (drafts >= 0)


def _cut(drafts, refused, counts):
    """The flat ``drafts`` as vLLM 0.33's runner hands them to the sampler (CONTRACT.md §15.4):
    each request's from its first ``refused`` one on -1 (V1's scheduler's padding, V2's
    ``grammar_invalid_drafts``)."""
    owner = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts, dtype=torch.int64))
    start = torch.tensor(counts, dtype=torch.int64).cumsum(0) - torch.tensor(counts, dtype=torch.int64)
    index = torch.arange(drafts.shape[0]) - start[owner]
    first = torch.tensor(counts, dtype=torch.int64).scatter_reduce(0, owner[refused], index[refused], "amin")
    return torch.where(index >= first[owner], -1, drafts)


def _uniforms(gen, counts, conditional, mode, dtype):
    """One uniform in ``[0, 1)`` of ``dtype`` for each draft: random, or at its rate's edge.

    At the edge, each is the smallest ``dtype`` value at or above its rate (rejected, the test
    being ``u < c``), the largest below it (accepted where the rate is above 0), or 0. In a
    dtype narrower than the rates' float32, the rate itself is often not a value: a port that
    compares in the uniforms' dtype rounds it onto one of them. Never 1, which no uniform takes."""
    if mode == "random":
        chosen = torch.rand(sum(counts), generator=gen, dtype=torch.float64).to(dtype)
    else:
        cols = torch.cat([torch.arange(n) for n in counts]) if sum(counts) else torch.zeros(0, dtype=torch.int64)
        rate = conditional.to(torch.float64)[cols]
        at = rate.to(dtype)
        at = torch.where(at.to(torch.float64) < rate, torch.nextafter(at, torch.ones_like(at)), at)
        below = torch.nextafter(at, torch.zeros_like(at))
        pick = torch.randint(0, 3, rate.shape, generator=gen)
        chosen = torch.where(pick == 0, at, torch.where(pick == 1, below, torch.zeros_like(at)))
    one = torch.ones((), dtype=dtype)
    return chosen.clamp(max=torch.nextafter(one, torch.zeros_like(one)))


def _rates(draw, k, rate):
    """The conditional float32 rates of ``K`` unconditional ones (all ``rate`` when given)."""
    rates = (float(rate),) * k if rate is not None else draw(acceptance_rates(k), label="rates")
    return ref.conditional_rates(unconditional_rates=rates)


def _check_rate(rate):
    if rate is not None and not 0 <= rate <= 1:
        raise ValueError(f"rate={rate} must lie in [0, 1]")


def _counts_arg(counts):
    return TensorArg(torch.tensor(counts, dtype=torch.int64))


# -- the decision, given the uniforms (§15.1, §16.1) ----------------------------------------------


def decision_cases(*, min_bs=0, max_bs=MAX_BS, max_k=LONG_K, rate=None):
    """Arguments of the decision (:class:`~simacc.harness.model.cases.DecisionCase`): ``B`` in
    ``[min_bs, max_bs]`` (a server's sizes past 256 included), ``K`` in ``[1, max_k]`` (past
    :data:`MAX_K` in about one case in two, so that a kernel sized for 8 drafts shows), 0..K
    drafts per request, -1 placeholders first, in the middle, last or scattered, greedy, random
    or mixed rows, uniforms random or at the rates' edges (float64 as V1's, or a narrower float),
    token ids up to int32's; every unconditional rate ``rate`` when given. Shrinks toward B=1,
    K=1, rates of 0, no placeholders, greedy rows, float64 uniforms at the edges, small ids."""
    _check_k("max_k", max_k, LONG_K)
    _check_rate(rate)
    return _decision_cases(sc.batch_sizes(min_bs, max_bs), _ks(max_k), rate)


def _ks(max_k):
    """``K`` in ``[1, max_k]``, past :data:`MAX_K` in about one case in two when ``max_k`` is."""
    return st.integers(1, max_k) if max_k <= MAX_K else st.integers(1, MAX_K) | st.integers(MAX_K + 1, max_k)


_UNIFORM_DTYPES = st.just(UNIFORM_DTYPES[0]) | st.sampled_from(UNIFORM_DTYPES[1:])  # V1's in half the cases


@st.composite
def _decision_cases(draw, batch_sizes, ks, rate):
    rows = draw(batch_sizes, label="B")
    k = draw(ks, label="K")
    conditional = _rates(draw, k, rate)
    counts_mode = draw(_mode(COUNTS), label="counts")
    holes = draw(_mode(PLACEHOLDERS), label="placeholders")
    greedy = draw(_mode(GREEDY), label="greedy")
    uniforms = draw(_mode(UNIFORMS), label="uniforms")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    seed = draw(sc.seeds(), label="seed")
    return _decision_case(rows, conditional, counts_mode, holes, greedy, uniforms, vocab, seed,
                          draw(_UNIFORM_DTYPES, label="uniform_dtype"))


def _decision_case(rows, conditional, counts_mode, holes, greedy, uniforms, vocab, seed, uniform_dtype=torch.float64):
    """The decision's batch of these draws, its contents from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    counts = _counts(gen, counts_mode, rows, len(conditional))
    tokens = sum(counts)
    drafts = torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).to(torch.int32)
    return DecisionCase(
        draft_token_ids=TensorArg(_place_holes(gen, drafts, counts, holes)),
        num_draft_tokens=_counts_arg(counts),
        uniform_probs=TensorArg(_uniforms(gen, counts, conditional, uniforms, uniform_dtype)),
        synthetic_conditional_rates=TensorArg(conditional),
        target_argmax=TensorArg(torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64)),
        recovered_token_ids=TensorArg(torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).int()),
        bonus_token_ids=TensorArg(torch.randint(0, vocab, (rows, 1), generator=gen, dtype=torch.int64)),
        is_greedy=TensorArg(_greedy(gen, greedy, rows)),
    )


# -- a server's batch, built once (§16.1, §17) ----------------------------------------------------

SERVER_BS = 1025  # two blocks of 512 requests and a tail of one, as the EAGLE layout's server batch
_SERVER_RATES = (0.9, 0.6, 0.4, 0.2)  # V2's, unconditional, K = 4: each walk's end depends on its uniforms
# the decision's, conditional, K = 12: two in three walks reach draft 8, whose rate is not c_7's
_LONG_SERVER_RATES = (0.95,) * 8 + (0.5, 0.8, 0.3, 0.6)


def decision_server_batches():
    """The decision's server batch: :data:`SERVER_BS` requests of 0..12 drafts at the
    conditional rates 0.95 (8 times), 0.5, 0.8, 0.3, 0.6, placeholders scattered, greedy and
    sampling rows mixed, random uniforms, token ids up to int32's; seed 0. Built once a
    process, at its first draw."""
    return st.deferred(lambda: st.sampled_from([_decision_server_case()]))


@functools.lru_cache(maxsize=None)
def _decision_server_case():
    return _decision_case(SERVER_BS, torch.tensor(_LONG_SERVER_RATES, dtype=torch.float32), "mixed", "scattered",
                          "mixed", "random", 2**31 - 1, 0)


def v2_server_batches():
    """V2's server batch: :data:`SERVER_BS` requests of 0..4 drafts at the rates
    ``(0.9, 0.6, 0.4, 0.2)``, placeholders scattered, greedy and sampling rows mixed, a
    vocabulary of 16; seed 0. Built once a process, at its first draw."""
    return st.deferred(lambda: st.sampled_from([_v2_server_case()]))


@functools.lru_cache(maxsize=None)
def _v2_server_case():
    return _v2_case(SERVER_BS, ref.conditional_rates(unconditional_rates=_SERVER_RATES), "mixed", "scattered", "mixed",
                    16, 0)


def v1_server_batches():
    """V1's sampler's server batch: :data:`SERVER_BS` requests, every one sampling with a
    generator of its own, of 0..4 drafts at the rates ``(0.9, 0.6, 0.4, 0.2)``, no
    placeholders, a vocabulary of 16; seed 0. Built once a process, at its first draw."""
    return st.deferred(lambda: st.sampled_from([_v1_server_case()]))


@functools.lru_cache(maxsize=None)
def _v1_server_case():
    gen = torch.Generator().manual_seed(0)
    counts = _counts(gen, "mixed", SERVER_BS, len(_SERVER_RATES))
    tokens, vocab = sum(counts), 16
    return V1Case(
        draft_token_ids=TensorArg(torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).to(torch.int32)),
        num_draft_tokens=_counts_arg(counts),
        target_logits=TensorArg(torch.randn((tokens, vocab), generator=gen)),
        bonus_token_ids=TensorArg(torch.randint(0, vocab, (SERVER_BS, 1), generator=gen, dtype=torch.int64)),
        is_greedy=TensorArg(torch.zeros(SERVER_BS, dtype=torch.bool)),
        generator_seeds=TensorArg(torch.arange(1, SERVER_BS + 1, dtype=torch.int64)),
        synthetic_conditional_rates=TensorArg(ref.conditional_rates(unconditional_rates=_SERVER_RATES)),
        seed=0,
    )


# -- the samplers, with their own random numbers (§16.2, §17) ----------------------------------------


_VOCABS = st.sampled_from((16, 2, 5, 64, 1500, 2500))  # sampler cases carry (tokens, V) logits: small vocabularies, or
# now and then one past 1024 that is no multiple of it (a kernel's last vocabulary block partly filled), for a batch
# of at most WIDE_VOCAB_BS requests of WIDE_VOCAB_K drafts, so that it costs little
WIDE_VOCAB_BS = 2
WIDE_VOCAB_K = 2
VOCAB_BLOCK = 1024  # a vocabulary past it ends in a partly filled block (_target_logits)
LOGIT_SCALES = st.sampled_from((1.0, 1e5))  # standard-normal logits, or as large as a low temperature makes them
_LOGIT_LAYOUTS = st.sampled_from(("contiguous", "padded"))  # V2's logits: dense, or a vocabulary-padded buffer's rows
LARGE_POSITION = 1 << 24  # V2's positions: below 2**20 from the start, or now and then past float32's exact integers
_POSITIONS = st.sampled_from((0, LARGE_POSITION))


def v1_cases(*, min_bs=1, max_bs=MAX_BS, max_k=LONG_K, rate=None, masked=False, cut=False):
    """Arguments of V1's sampler (:class:`~simacc.harness.model.cases.V1Case`), at least one request
    (V1 never samples an empty batch, and fails an assertion on one), drawn like
    :func:`decision_cases`, with float32 target logits over a small vocabulary instead of the
    uniforms and rejection tokens, and no, some or every request seeded. ``masked``: logits
    that refuse tokens (-inf, §15.4), each request's first, middle or last draft among them or
    about one in four, and every request or some with drafts; ``cut`` (masked only): the drafts
    as vLLM 0.33's runner passes them on, each request's from its first refused one on -1
    (CONTRACT.md §15.4). Shrinks toward B=1, K=1, rates of 0, greedy rows, none seeded (masked:
    full requests, the first draft refused)."""
    _check_k("max_k", max_k, LONG_K)
    _check_rate(rate)
    if min_bs < 1:
        raise ValueError(f"min_bs={min_bs}: V1's sampler is never asked an empty batch")
    _check_cut(cut, masked)
    return _v1_cases(sc.batch_sizes(min_bs, max_bs), min_bs, _ks(max_k), _wide_ks(max_k), rate, masked, cut)


def _check_cut(cut, masked):
    if cut and not masked:
        raise ValueError(f"{cut=} without masked: only a masked case has drafts its target refuses")


@st.composite
def _v1_cases(draw, batch_sizes, min_bs, ks, wide_ks, rate, masked, cut):
    rows = draw(batch_sizes, label="B")
    vocab = draw(_VOCABS, label="vocab")
    rows, ks = _within_wide_vocab(rows, ks, wide_ks, vocab, min_bs)
    k = draw(ks, label="K")
    conditional = _rates(draw, k, rate)
    counts_mode = draw(_mode(FILLED if masked else COUNTS), label="counts")
    holes = draw(_mode(PLACEHOLDERS), label="placeholders")
    greedy = draw(_mode(GREEDY), label="greedy")
    seeded = draw(_mode(SEEDED), label="seeded")
    scale = draw(LOGIT_SCALES, label="logit_scale")
    seed = draw(sc.seeds(), label="seed")
    gen = torch.Generator().manual_seed(seed)
    counts = _counts(gen, counts_mode, rows, k)
    tokens = sum(counts)
    drafts = torch.randint(0, vocab, (tokens,), generator=gen, dtype=torch.int64).to(torch.int32)
    chosen = {"none": [], "all": range(rows), "some": torch.randperm(rows, generator=gen)[: rows // 2].tolist()}
    generator_seeds = torch.full((rows,), -1, dtype=torch.int64)
    for r in chosen[seeded]:
        generator_seeds[r] = seed + 1 + r
    drafts = _place_holes(gen, drafts, counts, holes)
    logits = _target_logits(gen, tokens, vocab, scale)
    bonus = torch.randint(0, vocab, (rows, 1), generator=gen, dtype=torch.int64)
    is_greedy = _greedy(gen, greedy, rows)
    if masked:  # drawn last: the rest of the batch is the one an unmasked case of this seed holds
        refused = _refused(gen, drafts, counts, draw(_mode(REFUSED), label="refused"))
        logits = _refuse(gen, logits, drafts.to(torch.int64), refused)
        if cut:
            drafts = _cut(drafts, refused, counts)
    return V1Case(
        draft_token_ids=TensorArg(drafts),
        num_draft_tokens=_counts_arg(counts),
        target_logits=TensorArg(logits),
        bonus_token_ids=TensorArg(bonus),
        is_greedy=TensorArg(is_greedy),
        generator_seeds=TensorArg(generator_seeds),
        synthetic_conditional_rates=TensorArg(conditional),
        seed=seed,
    )


def v2_cases(*, min_bs=0, max_bs=MAX_BS, max_k=MAX_K, rate=None, masked=False, cut=False):
    """Arguments of V2's sampler (:class:`~simacc.harness.model.cases.V2Case`): ``R`` requests of
    0..K drafts (``n + 1`` logits each, the drafts one place after their logit), placeholders
    and greedy rows as in :func:`decision_cases`, positions from an arbitrary start per
    request, distinct int64 seeds (vLLM draws one per request from the whole range), a
    sampling request's temperature 1 or another (its logits are processed: it changes nothing).
    ``masked``: logits that refuse tokens (-inf), and ``cut``, as :func:`v1_cases`. Shrinks toward R=1,
    K=1, rates of 0, greedy rows (masked: full requests, the first draft refused)."""
    _check_k("max_k", max_k)
    _check_rate(rate)
    _check_cut(cut, masked)
    return _v2_cases(sc.batch_sizes(min_bs, max_bs), max(min_bs, min(1, max_bs)), st.integers(1, max_k), _wide_ks(max_k),
                     rate, masked, cut)


@st.composite
def _v2_cases(draw, batch_sizes, min_bs, ks, wide_ks, rate, masked, cut):
    rows = draw(batch_sizes, label="R")
    vocab = draw(_VOCABS, label="vocab")
    rows, ks = _within_wide_vocab(rows, ks, wide_ks, vocab, min_bs)
    k = draw(ks, label="K")
    conditional = _rates(draw, k, rate)
    counts_mode = draw(_mode(FILLED if masked else COUNTS), label="counts")
    holes = draw(_mode(PLACEHOLDERS), label="placeholders")
    greedy = draw(_mode(GREEDY), label="greedy")
    scale = draw(LOGIT_SCALES, label="logit_scale")
    layout = draw(_LOGIT_LAYOUTS, label="logits_layout")
    first = draw(_POSITIONS, label="first_position")
    seed = draw(sc.seeds(), label="seed")
    refused = draw(_mode(REFUSED), label="refused") if masked else None
    return _v2_case(rows, conditional, counts_mode, holes, greedy, vocab, seed, refused, scale, layout, first, cut)


def _target_logits(gen, rows, vocab, scale):
    """``(rows, vocab)`` standard-normal logits times ``scale``. Past a whole block of
    :data:`VOCAB_BLOCK` tokens, about half the rows have their largest logit swapped into the
    last, partly filled block: by chance a third or a fifth of them would put it there, too few
    in a check's few wide cases for a port that reads whole blocks only to emit a token it
    should not."""
    logits = torch.randn((rows, vocab), generator=gen) * scale
    last = vocab // VOCAB_BLOCK * VOCAB_BLOCK
    if not VOCAB_BLOCK <= last < vocab or not rows:
        return logits
    moved = torch.nonzero(torch.rand(rows, generator=gen) < 0.5).flatten()
    into = torch.randint(last, vocab, (rows,), generator=gen)[moved]
    top = logits[moved].argmax(dim=1)
    logits[moved, top], logits[moved, into] = logits[moved, into], logits[moved, top]
    return logits


def _within_wide_vocab(rows, ks, wide_ks, vocab, min_bs):
    """``(rows, ks)``; for a vocabulary past 64 at most :data:`WIDE_VOCAB_BS` requests (or
    ``min_bs``) of ``wide_ks`` drafts (:func:`_wide_ks`), so that its logits stay small (a repro
    file writes every one), and at least ``min_bs`` (the callers ask one where they may: an
    empty batch has no logits to be wide)."""
    return (rows, ks) if vocab <= 64 else (max(min(rows, WIDE_VOCAB_BS), min_bs), wide_ks)


@functools.lru_cache(maxsize=None)
def _wide_ks(max_k):
    """``K`` for a wide vocabulary: at most :data:`WIDE_VOCAB_K`, and at most ``max_k``."""
    return st.integers(1, min(WIDE_VOCAB_K, max_k))


def _v2_case(rows, conditional, counts_mode, holes, greedy, vocab, seed, refused=None, scale=1.0, layout="contiguous",
             first=0, cut=False):
    """V2's batch of these draws, its contents from ``seed``; ``refused``: where the target
    refuses drafts (None: nowhere), ``cut``: those drafts as vLLM 0.33's runner passes them on;
    its logits times ``scale``, in ``layout``; each request's first position ``first`` plus a
    draw below 2**20."""
    k = len(conditional)
    gen = torch.Generator().manual_seed(seed)
    counts = _counts(gen, counts_mode, rows, k)
    sizes = torch.tensor(counts, dtype=torch.int64) + 1
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)]).to(torch.int32)
    logits = int(sizes.sum())
    owner = torch.repeat_interleave(torch.arange(rows), sizes)
    local = torch.arange(logits) - cu[:-1].to(torch.int64)[owner]
    sampled = torch.randint(0, vocab, (logits,), generator=gen, dtype=torch.int64)
    is_draft = local > 0  # draft i of a request sits one place after its logit
    sampled[is_draft] = _place_holes(gen, sampled[is_draft], counts, holes)
    starts = first + torch.randint(0, 1 << 20, (rows,), generator=gen, dtype=torch.int64)
    seeds = torch.randint(-(2**62), 2**62, (rows,), generator=gen, dtype=torch.int64)  # distinct but 1 in 1e11
    target = _target_logits(gen, logits, vocab, scale)
    is_greedy = _greedy(gen, greedy, rows)
    temperature = torch.where(is_greedy, 0.0, TEMPERATURES[torch.randint(0, len(TEMPERATURES), (rows,), generator=gen)])
    if refused is not None:  # drawn last, as in V1's
        refusing = torch.zeros(logits, dtype=torch.bool)
        refusing[is_draft] = _refused(gen, sampled[is_draft], counts, refused)
        row_draft = torch.where(is_draft, sampled, -1).roll(-1)  # the row before a draft verifies it
        target = _refuse(gen, target, row_draft, refusing.roll(-1))
        if cut:
            sampled[is_draft] = _cut(sampled[is_draft], refusing[is_draft], counts)
    return V2Case(
        target_logits=TensorArg(target, layout),
        draft_sampled=TensorArg(sampled),
        cu_num_logits=TensorArg(cu),
        pos=TensorArg(starts[owner] + local),
        temperature=TensorArg(temperature),
        request_seeds=TensorArg(seeds),
        num_speculative_steps=k,
        synthetic_conditional_rates=TensorArg(conditional),
        seed=seed,
    )


# -- the records: keyword-only layouts, their cases' variants the knobs given or which requests sample

VLLM_SETTINGS = Contract(
    "vllm_settings", ("num_speculative_tokens", "synthetic_acceptance_rates", "synthetic_acceptance_length"),
    ref.resolve_synthetic_rates, SettingsCase, synthetic_settings, "knobs given", KNOBS, draws=(), server_env=(),
)
VLLM_CONVERSION = Contract("vllm_conversion", ("unconditional_rates", "device"), ref.conditional_rates,
                           ConversionCase, conversion_cases, "knobs given", ("rates",), draws=(), server_env=())
VLLM_DECISION = Contract(
    "vllm_decision",
    ("draft_token_ids", "num_draft_tokens", "uniform_probs", "synthetic_conditional_rates", "target_argmax",
     "recovered_token_ids", "bonus_token_ids", "is_greedy"),
    ref.synthetic_accept, DecisionCase, decision_cases, REQUESTS, GREEDY, draws=(), server_env=(),
)
VLLM_V1 = Contract(
    "vllm_v1",
    ("draft_token_ids", "num_draft_tokens", "target_logits", "bonus_token_ids", "is_greedy", "generators",
     "synthetic_conditional_rates"),
    ref.synthetic_rejection_sample, V1Case, v1_cases, REQUESTS, GREEDY, server_env=(),
)
VLLM_V2 = Contract(
    "vllm_v2",
    ("target_logits", "draft_sampled", "cu_num_logits", "pos", "temperature", "seed", "num_speculative_steps",
     "synthetic_conditional_rates"),
    ref2.synthetic_rejection_sample_v2, V2Case, v2_cases, REQUESTS, GREEDY, level="semantic", draws=("inputs",),
    server_env=(),
)
