"""Each engine's law of simulated acceptance at one mean acceptance length (CONTRACT.md §23-§27):
its knob in its own unit and what the engine makes of a value of it, the exact law of one
request's accepted drafts, whether a step's requests draw on their own or in lockstep, and a
run drawn the engine's way (the walk over draft positions, the batch's one draw, the pool).

``AL`` counts the target's token (accepted drafts + 1); ``K`` is the number of drafts each
request carries per step, and every law here assumes all ``K`` are real (§23.1). sglang's and
vLLM's facts are this package's code (:mod:`simacc.contract.sampling`, :mod:`simacc.contract.vllm`,
which ATOM shares): only their exact distributions are new here. torch (and those modules) are
imported where a law needs them, so that the engines' names cost nothing to import (``--help``).
"""

import functools
import math
import re
from dataclasses import dataclass
from typing import Callable

INDEPENDENT = "independent"  # each request draws its own length
LOCKSTEP = "lockstep"  # one draw for the whole batch: every request the same length
DETERMINISTIC = "deterministic"  # no draw: every request the same length, always
JOINT = {INDEPENDENT: "own draws", LOCKSTEP: "lockstep", DETERMINISTIC: "fixed"}  # as a table says it

POOL_SIZE, POOL_SEED = 65536, 0xACCE9D  # TensorRT-LLM's uniforms (§27.4)
POOL_STEP, POOL_SLOT = 6007, 1009  # index = (counter * POOL_STEP + row * POOL_SLOT) & (POOL_SIZE - 1)


@dataclass(frozen=True)
class Reading:
    """What an engine makes of a knob's text: ``value`` in the knob's unit while forcing is on,
    else None and ``why`` (forcing stays off, or the value is rejected)."""

    value: float | None
    why: str = ""


@dataclass(frozen=True)
class Engine:
    """One engine's forced acceptance (§23): ``setting`` formats the knob's text as a user
    writes it; ``read(text, K)`` is the engine's parsing; ``to_unit(AL, K)`` the value that
    asks for ``AL``; ``law(value, K)`` the exact ``P(accepted = a)``, ``a = 0..K``, and
    ``draw(value, K, steps, batch, generator)`` a run's accepted drafts, a list per step;
    ``notes(value, K, batch)`` the facts a reader of the law needs beside it."""

    id: str
    title: str
    section: str
    setting: str
    unit: str
    joint: str
    read: Callable
    to_unit: Callable
    law: Callable
    draw: Callable
    notes: Callable = lambda value, k, batch: []


def text(value):
    """A knob value as a user writes it: 12 significant digits (2.6 - 1 prints as 1.6)."""
    return f"{value:.12g}"


# -- the laws given conditional rates: vLLM, ATOM, llama.cpp (§25, §26) ------------------------------


def walk_law(conditional):
    """``P(accepted = a)``, ``a = 0..K``, of the walk that accepts draft ``i`` with
    probability ``conditional[i]`` once drafts ``0..i-1`` are accepted (§15.1)."""
    c = [float(x) for x in conditional]
    law, reached = [], 1.0
    for rate in c:
        law.append(reached * (1.0 - rate))
        reached *= rate
    return [*law, reached]


def walk_draws(conditional, steps, batch, generator):
    """The walk with a fresh uniform for every request, position and step."""
    import torch

    c = torch.tensor([float(x) for x in conditional], dtype=torch.float64)
    u = torch.rand((steps, batch, c.numel()), dtype=torch.float64, generator=generator)
    return (u < c).to(torch.int64).cumprod(-1).sum(-1).tolist()


def _float(value):
    """Python's ``float`` of a knob's text, or None where it raises."""
    try:
        return float(value)
    except ValueError:
        return None


def vllm_conditional(length, k):
    """vLLM's (and ATOM's) conditional rates for a mean length (§13.3, §14)."""
    from simacc.contract import vllm

    rates = vllm.resolve_synthetic_rates(num_speculative_tokens=k, synthetic_acceptance_length=length)
    return vllm.conditional_rates(unconditional_rates=rates).tolist()


def _read_vllm(value, k):
    from simacc.contract import vllm

    x = _float(value)
    if x is None:
        return Reading(None, "is not a number: the config is refused")
    try:
        vllm.resolve_synthetic_rates(num_speculative_tokens=k, synthetic_acceptance_length=x)
    except ValueError as e:
        return Reading(None, f"is refused when the config is built: {e}")
    return Reading(x)


def _read_atom(value, k):
    x = _float(value)
    if x is None or not 1.0 <= x <= k + 1:  # `not` also refuses NaN and the infinities
        return Reading(None, f"is refused when the config is built (ValueError): it must lie in [1, {k + 1}]")
    return Reading(x)


def atom_1850_schedule(rate, k):
    """``(a0, g)`` of ATOM #1850's conditional rates ``a0 * g^i`` (§25.3), searched as #1850
    searches them: ``g`` the smallest value in [0.85, 1] with which ``a0 = 1`` reaches the mean
    ``rate``, then ``a0`` so that the mean of the unconditional rates ``a0^(i+1) g^(i(i+1)/2)``
    is ``rate``, each by bisection to a width of 1e-9; a rate of 1 or more takes ``a0 = 1``."""

    def mean(a0, g):
        return sum(a0 ** (i + 1) * g ** (i * (i + 1) // 2) for i in range(k)) / k  # in order, as #1850 adds

    g = 0.85 if mean(1.0, 0.85) >= rate else _bisect(lambda x: mean(1.0, x) < rate, 0.85, 1.0)
    if rate <= 0 or rate >= 1:
        return (0.0 if rate <= 0 else 1.0), g
    return _bisect(lambda x: mean(x, g) < rate, 0.0, 1.0), g


def atom_1850_conditional(rate, k):
    a0, g = atom_1850_schedule(rate, k)
    return [a0 * g**i for i in range(k)]


def _bisect(below, low, high, width=1e-9):
    """The upper end of the interval, ``width`` wide at most, where the monotone ``below``
    turns false (ATOM #1850's search: its tolerance, the end it returns)."""
    while high - low > width:
        middle = (low + high) / 2
        low, high = (middle, high) if below(middle) else (low, middle)
    return high


def _read_atom_1850(value, k):
    r = _float(value)
    if r is None or not 0.0 <= r <= 1.0:
        return Reading(None, "is refused (ValueError): the rate must lie in [0, 1]")
    return Reading(r)


C_DOUBLE = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|\s*[+-]?(inf|infinity|nan)", re.IGNORECASE)


def llama_rate(length, k):
    """llama.cpp's one conditional rate ``p`` with ``p + p^2 + ... + p^K = length - 1`` (§26.3):
    0 and 1 at the ends, else the midpoint after 32 halvings of [0, 1]."""
    if length == 1:
        return 0.0
    if length == k + 1:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(32):
        middle = (low + high) / 2
        low, high = (middle, high) if math.fsum(middle**j for j in range(1, k + 1)) < length - 1 else (low, middle)
    return (low + high) / 2


def _read_llama(value, k):
    if not C_DOUBLE.fullmatch(value):
        return Reading(None, "is not a number: the argument parser refuses it")
    x = float(value)
    if not 1.0 <= x <= k + 1:
        return Reading(None, f"is refused at start-up: it must be finite and lie in [1, {k + 1}]")
    return Reading(x)


# -- sglang and sglang-jax: one length for the whole batch (§24) ---------------------------------------


def match_expected_law(x, k):
    """``P(L - 1 = a)`` under ``match-expected`` with ``max_len = K + 1`` (§9.2)."""
    width = k + 1
    c = width if math.isnan(x) else max(1.0, min(width, x))
    lo = math.floor(c)
    law = [0.0] * width
    law[lo - 1] = 1.0 - (c - lo)
    if lo < width:
        law[lo] = c - lo
    return law


def gaussian_law(mean, k):
    """``P(L - 1 = a)`` for ``L = round(clamp(N(mean, 1), 1, K + 1))`` (§9.3)."""
    cdf = lambda z: 0.5 * (1 + math.erf((z - mean) / math.sqrt(2)))  # noqa: E731
    edges = [-math.inf, *(j + 0.5 for j in range(1, k + 1)), math.inf]
    return [cdf(b) - cdf(a) for a, b in zip(edges, edges[1:])]


def _sglang_reader(not_a_number):
    """A reader of sglang's (or a port's) length knob: off at or below 0, and ``not_a_number``
    what the engine does with a value ``float`` cannot read."""

    def read(value, k):
        x = _float(value)
        if x is None:
            return Reading(None, f"is not a number: {not_a_number}")
        if not x > 0:
            return Reading(None, "is not > 0: simulation stays off")
        return Reading(x)

    return read


_read_sglang = _sglang_reader("sglang warns and leaves simulation off")
_read_sglang_jax = _sglang_reader("sglang-jax raises ValueError when it imports the knob (§24.4)")


def _batch_draws(length_of_a_step, steps, batch, generator):
    """One length per step, every request of the step the same (accepted = L - 1)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        # the CPU's only: fork_rng(devices=[]) puts back no other (torch.manual_seed would seed CUDA's for good)
        torch.default_generator.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
        return [[length_of_a_step() - 1] * batch for _ in range(steps)]


def _sglang_draws(method):
    def draw(x, k, steps, batch, generator):
        from simacc.contract import sampling

        return _batch_draws(lambda: sampling.sample_simulated_acc_len(x, method, k + 1), steps, batch, generator)
    return draw


def _clamped_mean_draws(x, k, steps, batch, generator):
    import torch

    width = k + 1
    mean = max(1.0, min(width, x))
    return _batch_draws(lambda: int(torch.round(torch.clamp(torch.normal(mean, 1.0, (1,)), 1, width))), steps,
                        batch, generator)


# -- TensorRT-LLM: a forced count of accepted drafts (§27) ----------------------------------------------


@functools.cache
def pool():
    """TensorRT-LLM's 65,536 float32 uniforms: ``torch.rand`` on a CPU generator seeded 0xACCE9D."""
    import torch

    return torch.rand(POOL_SIZE, dtype=torch.float32, generator=torch.Generator().manual_seed(POOL_SEED))


def pool_fraction(fraction):
    """How often the extra draft comes, over the pool's whole period: the share of its entries
    below ``fraction`` rounded to float32 (0.6 gives 0.60028, not 0.6)."""
    import torch

    return int((pool() < torch.tensor(fraction, dtype=torch.float32)).sum()) / POOL_SIZE


def pool_reuse(batch):
    """``(lag, rows)``: in a batch of ``batch`` rows, the fewest steps after which a row reads
    the pool entry that a row ``rows`` away read (``rows`` 0: the row itself, once a period):
    168 steps and 104 rows from 105 rows on."""
    inverse = pow(POOL_STEP, -1, POOL_SIZE)
    best = (POOL_SIZE, 0)
    for rows in range(-(batch - 1), batch):
        lag = (rows * POOL_SLOT * inverse) % POOL_SIZE  # lag * STEP == rows * SLOT (mod SIZE)
        if rows and (lag, abs(rows)) < best:
            best = (lag, abs(rows))
    return best


def _read_trtllm(value, k):
    v = _float(value)
    if v is None:
        return Reading(None, "is not a float: TensorRT-LLM warns and reads 0, which turns forcing off")
    if v == 0:
        return Reading(None, "is 0, which turns forcing off")
    if not math.isfinite(v):
        return Reading(None, "parses, then int() of it raises at the first forced step (read, not run)")
    if v <= -1:
        return Reading(None, f"forces int(v) + 1 = {int(v) + 1} tokens, fewer than 1")
    return Reading(v)


def _trtllm_split(v, k):
    """``(accepted always, chance of one more)`` for the one-model path (§27.3)."""
    whole = int(v)  # truncation, as TensorRT-LLM's int()
    fraction = v - whole
    if whole >= k or fraction <= 0:
        return min(whole, k), 0.0
    return whole, pool_fraction(fraction)


def _trtllm_law(v, k):
    whole, extra = _trtllm_split(v, k)
    law = [0.0] * (k + 1)
    law[whole] = 1.0 - extra
    if extra:
        law[whole + 1] = extra
    return law


def _trtllm_draws(v, k, steps, batch, generator):
    """The pool's own schedule: the counter bumped before each step's draw, a row's index in
    the batch as its slot, from a counter a random number of steps into the period."""
    import torch

    whole, _ = _trtllm_split(v, k)
    if whole >= k or v - int(v) <= 0:
        return [[whole] * batch for _ in range(steps)]
    start = int(torch.randint(0, POOL_SIZE, (1,), generator=generator))
    counter = torch.arange(start + 1, start + steps + 1)[:, None]
    index = (counter * POOL_STEP + torch.arange(batch)[None, :] * POOL_SLOT) & (POOL_SIZE - 1)
    extra = pool()[index] < torch.tensor(v - int(v), dtype=torch.float32)
    return (extra.to(torch.int64) + whole).tolist()


def _read_trtllm_two_model(value, k):
    try:
        v = int(value)
    except ValueError:
        return Reading(None, "is not an integer: int() raises, TensorRT-LLM warns and reads 0, which turns forcing off")
    if v == 0:
        return Reading(None, "is 0, which turns forcing off")
    if v < 0:
        return Reading(None, f"is negative: the drafts are sliced from the end ({v} accepts n{v} of n drafts)")
    return Reading(v)


def _fixed_draws(law):
    def draw(value, k, steps, batch, generator):
        return [[law(value, k).index(1.0)] * batch for _ in range(steps)]
    return draw


def _trtllm_two_model_law(v, k):
    return [1.0 if a == min(v, k) else 0.0 for a in range(k + 1)]


# -- the engines ---------------------------------------------------------------------------------------


def _walk_engine(conditional):
    """``(law, draw)`` of an engine whose knob value gives conditional rates."""
    return (lambda value, k: walk_law(conditional(value, k)),
            lambda value, k, steps, batch, generator: walk_draws(conditional(value, k), steps, batch, generator))


def _sglang_notes(x, k, batch):
    return [f"x > K + 1 is clamped: it delivers {k + 1}"] if x > k + 1 else []


def _vllm_notes(length, k, batch):
    from simacc.contract import vllm

    rates = vllm.resolve_synthetic_rates(num_speculative_tokens=k, synthetic_acceptance_length=length)
    return [f"or synthetic_acceptance_rates=[{', '.join(text(p) for p in rates)}] (with "
            "rejection_sample_method=synthetic either way)"]


def _atom_1850_notes(rate, k, batch):
    a0, g = atom_1850_schedule(rate, k)
    return [f"conditional rates a0 * g^i with a0 = {a0:.6g}, g = {g:.6g}: vLLM's mean, a wider spread"]


def _trtllm_notes(v, k, batch):
    notes = []
    whole, extra = _trtllm_split(v, k)
    if v == 1e-05:
        notes.append("0 turns forcing off: 1e-05 lies below every pool entry (the smallest is 2.03e-05), so the "
                     "extra draft never comes")
    elif v >= k:
        notes.append(f"capped: {k} drafts, whatever the fraction")
    elif extra:
        lag, rows = pool_reuse(batch)
        notes.append(f"the extra draft comes as often as the pool has entries below {v - whole:.6g}: {extra:.6g} "
                     f"over its period of {POOL_SIZE:,} steps, not {v - whole:.6g}")
        notes.append(f"rows {rows} apart read the same pool entry {lag} steps apart" if rows else
                     f"a row reads its pool entries again after {lag:,} steps")
    return [*notes, "sets the count whatever the request drafted (§27.3)"]


def _trtllm_two_model_notes(v, k, batch):
    return ["min(v, n) drafts, whatever the request drafted, for the requests it applies to: those verified "
            "greedily along a chain (greedy ones, and sampled ones without draft logits, as n-gram's)",
            "it does not apply to a sampled request with draft logits (real rejection sampling) nor to a draft "
            "tree (EAGLE-3's tree verification): there the count is the real one (§27.5)",
            "read with int(): 2.0 turns it off too"]


ENGINES = {e.id: e for e in (
    Engine("sglang", "sglang match-expected", "§24.2", "SGLANG_SIMULATE_ACC_LEN={}", "AL", LOCKSTEP, _read_sglang,
           lambda al, k: al, match_expected_law, _sglang_draws("match-expected"), _sglang_notes),
    Engine("sglang-multinomial", "sglang multinomial", "§24.3",
           "SGLANG_SIMULATE_ACC_LEN={} SGLANG_SIMULATE_ACC_METHOD=multinomial", "AL", LOCKSTEP, _read_sglang,
           lambda al, k: al, gaussian_law, _sglang_draws("multinomial"),
           lambda x, k, batch: ["L = round(clamp(N(x, 1), 1, K + 1)): its mean is not x"]),
    Engine("sglang-jax-multinomial", "sglang-jax multinomial", "§24.4",
           "SIMULATE_ACC_LEN={} SIMULATE_ACC_METHOD=multinomial", "AL", LOCKSTEP, _read_sglang_jax,
           lambda al, k: al, lambda x, k: gaussian_law(max(1.0, min(k + 1, x)), k), _clamped_mean_draws,
           lambda x, k, batch: ["clamps the Gaussian's mean to [1, K + 1]: sglang's law for x inside it",
                                "an unparsable SIMULATE_ACC_LEN, or with simulation on an unknown SIMULATE_ACC_METHOD "
                                "or SIMULATE_ACC_TOKEN_MODE, raises ValueError at import, where sglang warns"]),
    Engine("vllm", "vLLM", "§25.1", "synthetic_acceptance_length={}", "AL", INDEPENDENT, _read_vllm,
           lambda al, k: al, *_walk_engine(vllm_conditional), _vllm_notes),
    Engine("atom", "ATOM (#1948 on)", "§25.2", "--spec-decode-acceptance-length {}", "AL", INDEPENDENT, _read_atom,
           lambda al, k: al, *_walk_engine(vllm_conditional),
           lambda al, k, batch: [f"or --spec-decode-acceptance-rate {text((al - 1) / k)} ((AL - 1) / K); "
                                 "the schedule is vLLM's"]),
    Engine("atom-1850", "ATOM (#1850)", "§25.3", "--spec-decode-acceptance-rate {}", "(AL - 1) / K", INDEPENDENT,
           _read_atom_1850, lambda al, k: (al - 1) / k, *_walk_engine(atom_1850_conditional), _atom_1850_notes),
    Engine("llama.cpp", "llama.cpp", "§26", "--spec-synth-len {}", "AL", INDEPENDENT, _read_llama,
           lambda al, k: al, *_walk_engine(lambda length, k: [llama_rate(length, k)] * k),
           lambda al, k, batch: [f"one conditional rate p = {llama_rate(al, k):.6g} at every position "
                                 "(p + ... + p^K = AL - 1); a drafted end-of-generation is never accepted"]),
    Engine("trtllm", "TensorRT-LLM one-model", "§27.3", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={}",
           "AL - 1 (accepted drafts)", INDEPENDENT, _read_trtllm,
           lambda al, k: al - 1 if al != 1 else 1e-05,  # 0 is off; 1e-05 lies below every pool entry
           _trtllm_law, _trtllm_draws, _trtllm_notes),
    Engine("trtllm-two-model", "TensorRT-LLM two-model", "§27.5", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={}",
           "AL - 1 (accepted drafts), an integer", DETERMINISTIC, _read_trtllm_two_model, lambda al, k: al - 1,
           _trtllm_two_model_law, _fixed_draws(_trtllm_two_model_law), _trtllm_two_model_notes),
)}


def spread(accepted):
    """``(mean length, sd)`` of a law or the shares of a run: ``accepted[a]`` for ``a`` accepted drafts."""
    mean = math.fsum(a * p for a, p in enumerate(accepted))
    return 1.0 + mean, math.sqrt(max(math.fsum(a * a * p for a, p in enumerate(accepted)) - mean * mean, 0.0))


def step_mean_sd(sd, joint, batch):
    """The standard deviation of a step's mean length over ``batch`` requests: one request's in
    lockstep, ``1 / sqrt(batch)`` of it for independent draws."""
    return sd if joint != INDEPENDENT else sd / math.sqrt(batch)


@dataclass(frozen=True)
class Law:
    """An engine asked for ``length`` at ``K = steps``: the setting it takes (``knob``), or
    why it cannot take it (``cannot``); the exact ``accepted`` law (``P(accepted = a)``,
    ``a = 0..K``) at the value it reads."""

    engine: Engine
    length: float
    steps: int
    knob: str
    cannot: str
    value: float | None
    accepted: tuple

    @property
    def mean(self):
        """The mean acceptance length it delivers."""
        return spread(self.accepted)[0]

    @property
    def sd(self):
        """The standard deviation of one request's acceptance length."""
        return spread(self.accepted)[1]

    def notes(self, batch):
        """What a reader of this law needs beside it, for a batch of ``batch`` requests."""
        return self.engine.notes(self.value, self.steps, batch) if not self.cannot else []

    def draw(self, steps, batch, seed):
        """A run of ``steps`` steps of ``batch`` requests drawn the engine's way: each step's
        acceptance lengths (accepted + 1)."""
        import torch

        generator = torch.Generator().manual_seed(seed)
        runs = self.engine.draw(self.value, self.steps, steps, batch, generator)
        return [[a + 1 for a in step] for step in runs]


def law(engine_id, length, steps):
    """The :class:`Law` of engine ``engine_id`` asked for mean length ``length`` at ``K = steps``."""
    engine = ENGINES[engine_id]
    written = text(engine.to_unit(length, steps))
    knob = engine.setting.format(written)
    reading = engine.read(written, steps)
    if reading.value is None:
        return Law(engine, length, steps, "", f"{knob} {reading.why}", None, ())
    return Law(engine, length, steps, knob, "", reading.value, tuple(engine.law(reading.value, steps)))
