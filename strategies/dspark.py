"""sglang's DSpark (CONTRACT.md Part III, §19-§21): the records of its layouts (the step's length,
the simulated bonus, drawn from Python's global generator, and the accept under a simulated length;
no fixed mode, so no fixed id) and the strategies of their cases.

As in :mod:`simacc.strategies.eagle`, the case's seed seeds every tensor's contents, so a case
makes few draws. DSpark's Triton kernels address a token row through its row stride only
(CONTRACT.md §20.1, §21.5), so a case's tensors are all contiguous, all one element into their
storage (``offset``), or its 2-D row tensors the leading columns of wider rows (``padded``, the
rest contiguous): one draw. Batches stay small: upstream's kernels run a program a row, and
Triton's interpreter takes milliseconds a program; a server's batch is built once instead
(:func:`dspark_bonus_server_batches`, :func:`dspark_accept_server_batches`).
"""

import functools
import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from simacc.contract import dspark as reference
from simacc.contract.caller import DEFAULT_METHOD
from simacc.contract.sampling import METHODS
from simacc.harness.config.contracts import Contract
from simacc.harness.model.cases import VLLM_FLOATS, Case, TensorArg, first_problem, tensor_problem
from simacc.strategies import scalars as sc
from simacc.strategies import tensors as tn
from simacc.strategies.eagle import _Contents, _logits
from simacc.strategies.vllm import GREEDY, REQUESTS


# -- the case types --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class DsparkLengthCase(Case):
    """Arguments of DSpark's step length (CONTRACT.md §19), plus the generator seed and the
    method, which the call reads at import (``SGLANG_SIMULATE_ACC_METHOD``), not from its
    arguments."""

    simulated_correct_len: TensorArg
    simulate_acc_len: float
    gamma: int
    simulate_acc_method: str
    seed: int

    width_name = "T"

    @property
    def bs(self):
        return 1  # one length for the whole batch

    @property
    def max_len(self):
        return self.gamma + 1

    @property
    def variant(self):
        return self.simulate_acc_method

    def args(self, device):
        values = super().args(device)
        del values["simulate_acc_method"]
        return values

    def sizes_text(self):
        return f"T={self.max_len} (gamma + 1), method {self.simulate_acc_method}"

    def size_text(self):
        return f"T={self.max_len}"

    def _arguments_problem(self):
        if self.gamma < 0:
            return "gamma must be >= 0"
        if self.simulate_acc_method != DEFAULT_METHOD:
            return (f"simulate_acc_method={self.simulate_acc_method!r} is not the method this process reads at import "
                    f"({DEFAULT_METHOD!r}, from SGLANG_SIMULATE_ACC_METHOD)")
        return tensor_problem(self, "simulated_correct_len", (1,), (torch.int64,))


@dataclass(frozen=True, eq=False, repr=False)
class DsparkBonusCase(Case):
    """Arguments of DSpark's simulated bonus (CONTRACT.md §20): ``seed`` seeds Python's global
    generator, which the call draws its one seed from (§20.3), and torch's, which it must not
    need."""

    target_logits: TensorArg
    correct_len: TensorArg
    temperatures: TensorArg
    bs: int
    rows_per_request: int
    seed: int

    width_name = "R"

    @property
    def max_len(self):
        return self.rows_per_request

    @property
    def vocab(self):
        return self.target_logits.values.shape[-1]

    @property
    def requests(self):
        """Which requests sample (temperature > 0): ``greedy``, ``random`` or ``mixed``."""
        sampled = self.temperatures.values.reshape(-1) > 0
        return "greedy" if not bool(sampled.any()) else "random" if bool(sampled.all()) else "mixed"

    variant = requests

    def length_text(self):
        rows = self.correct_len.values.tolist()
        return f"correct_len={rows if len(rows) <= 8 else self.correct_len.summary()}"

    def sizes_text(self):
        return f"R={self.rows_per_request}, bs={self.bs}, V={self.vocab}, {self.requests} requests"

    def size_text(self):
        return f"bs={self.bs} R={self.rows_per_request} V={self.vocab}"

    def _arguments_problem(self):
        if self.bs < 1 or self.rows_per_request < 1:
            return "bs and rows_per_request must be >= 1"
        logit_rows = self.bs * self.rows_per_request
        problem = first_problem(tensor_problem(self, "target_logits", (logit_rows, None), VLLM_FLOATS),
                                tensor_problem(self, "correct_len", (self.bs,), (torch.int64,)),
                                tensor_problem(self, "temperatures", (self.bs, 1), (torch.float32,)))
        if problem or self.vocab < 1:
            return problem or "target_logits must have a vocabulary (V >= 1)"
        rows = self.correct_len.values
        if not 0 <= int(rows.min()) <= int(rows.max()) < self.rows_per_request:
            return f"correct_len must lie in [0, rows_per_request - 1 = {self.rows_per_request - 1}]"
        return None


@dataclass(frozen=True, eq=False, repr=False)
class DsparkAcceptCase(Case):
    """Arguments of DSpark's accept under a simulated length (CONTRACT.md §21), the layout of
    ``static_accept_tail``: ``part_val``, ``part_idx`` and ``vocab`` are passed as its
    ``bonus_parts`` (None without ``part_val``); ``seed`` seeds the generator it must not need."""

    candidates: TensorArg
    target_predict: TensorArg | None
    seq_lens: TensorArg
    verify_lens: TensorArg
    gate: TensorArg
    correct_len_out: TensorArg
    bonus_out: TensorArg
    cap_trim_lens_out: TensorArg
    commit_lens_out: TensorArg
    new_seq_lens_out: TensorArg
    out_tokens_out: TensorArg
    simulated_correct_len: TensorArg | None
    bonus_in: TensorArg | None
    part_val: TensorArg | None
    part_idx: TensorArg | None
    vocab: int
    gated_commit_lens_out: TensorArg | None
    seed: int = 0

    width_name = "T"
    length_given = True
    token_fields = ("candidates", "target_predict")

    @property
    def bs(self):
        return self.candidates.values.shape[0]

    @property
    def max_len(self):
        return self.candidates.values.shape[1]

    @property
    def simulated(self):
        """The simulated correct count (``L - 1``), or None: the real greedy accept."""
        return None if self.simulated_correct_len is None else int(self.simulated_correct_len.values[0])

    def expected_length(self):
        return None if self.simulated is None else self.simulated + 1

    def length_text(self):
        if self.simulated is None:
            return "L not simulated (each row's own greedy accept)"
        return f"L={self.simulated + 1} given (simulated_correct_len={self.simulated})"

    @property
    def bonus_source(self):
        """Where the bonus comes from: ``target``, ``bonus_in`` or ``bonus_parts``."""
        return "bonus_parts" if self.part_val is not None else "bonus_in" if self.bonus_in is not None else "target"

    variant = bonus_source

    def args(self, device):
        values = super().args(device)
        part_val, part_idx, vocab = values.pop("part_val"), values.pop("part_idx"), values.pop("vocab")
        values["bonus_parts"] = None if part_val is None else (part_val, part_idx, vocab)
        return values

    def sizes_text(self):
        return f"T={self.max_len}, bs={self.bs}, bonus from {self.bonus_source}"

    def _buffer_problem(self, name, dtypes, columns=(), optional=False):
        """``name`` holds at least ``bs`` rows (a static buffer may have more) of ``dtypes``."""
        arg = getattr(self, name)
        if arg is None and optional:
            return None
        return tensor_problem(self, name, (None, *columns), dtypes) or (
                              arg.values.shape[0] < self.bs and f"{name} has fewer than bs = {self.bs} rows")

    def _arguments_problem(self):
        bs, width = self.candidates.values.shape if self.candidates.values.dim() == 2 else (0, 0)
        if bs < 1 or width < 1:
            return "candidates must be (bs, gamma + 1) with bs >= 1"
        wide, narrow = (torch.int64,), (torch.int32,)
        problem = first_problem(
            tensor_problem(self, "candidates", (bs, width), wide),
            self.target_predict is not None and tensor_problem(self, "target_predict", (bs * width,), wide),
            *(self._buffer_problem(name, wide) for name in ("seq_lens", "verify_lens", "correct_len_out", "bonus_out",
                                                            "new_seq_lens_out")),
            self._buffer_problem("cap_trim_lens_out", narrow),
            self._buffer_problem("commit_lens_out", narrow),
            self._buffer_problem("out_tokens_out", wide, (width,)),
            tensor_problem(self, "gate", (1,), narrow),
            self._buffer_problem("gated_commit_lens_out", narrow, optional=True),
            self.simulated_correct_len is not None and tensor_problem(self, "simulated_correct_len", (1,), wide),
            self._buffer_problem("bonus_in", wide, optional=True),
        )
        if problem:
            return problem
        if self.simulated is not None and not 0 <= self.simulated < width:
            return f"simulated_correct_len={self.simulated} is not in [0, gamma = {width - 1}]"
        parts = self.part_val is not None
        if parts != (self.part_idx is not None) or (parts and self.bonus_in is not None):
            return "bonus_parts needs part_val and part_idx, and excludes bonus_in"
        if self.target_predict is None and (self.simulated is None or self.bonus_source == "target"):
            return "target_predict may be missing only with a simulated length and a supplied bonus"
        if not parts:
            return None
        splits = self.part_val.values.shape[-1]
        return first_problem(self._buffer_problem("part_val", (torch.float32,), (splits,)),
                             tensor_problem(self, "part_idx", tuple(self.part_val.values.shape), narrow),
                             self.vocab < 1 and "vocab must be >= 1",
                             not _power_of_two(splits) and f"bonus_parts has {splits} splits, not a power of two")

def _power_of_two(n):
    return n >= 1 and n & (n - 1) == 0


DSPARK_ACCEPT_PARAMS = ("candidates", "target_predict", "seq_lens", "verify_lens", "gate", "correct_len_out",
                        "bonus_out", "cap_trim_lens_out", "commit_lens_out", "new_seq_lens_out", "out_tokens_out")
BONUSES = ("target", "bonus_in", "bonus_parts")  # where an accept case's bonus comes from (§21.2): its variants
MAX_GAMMA = 8  # a server's usual draft count; the cases reach past it (LONG_GAMMA) in about one in two
LONG_GAMMA = 16  # as vLLM's LONG_K: a kernel, count or length sized for a block of 8 drafts shows past 8
_ROW_LAYOUTS = st.sampled_from(("contiguous", "offset", "padded"))
_BUFFER_LAYOUTS = st.sampled_from(("contiguous", "strided", "offset"))  # the length's buffer: any one-element view
_BOOLEANS = st.booleans()
_NAN = st.integers(0, 0).map(lambda _: math.nan)  # a branch with a draw of its own, as in strategies.eagle
# a toy vocabulary, or now and then one that the upstream kernels split into blocks of 4096 (one, two, three)
_VOCABS = st.sampled_from((*range(1, 65), 4096, 4097, 8193))
# or, for a property that needs one, a vocabulary split into blocks in about a quarter of the cases: a mistake per
# block (a seed a block) shows in a run of 50 examples but for a chance near 1e-7 (larger vocabularies cost time)
_SPLIT_VOCABS = st.integers(1, 64) | st.sampled_from((4097, 8193))
_SPARE_ROWS = st.integers(0, 3)  # a static buffer's rows past the batch (a CUDA graph's, sized for the largest)
_SPLITS = st.sampled_from((1, 2, 4))  # a power of two, as the partials kernel makes them (§21.1)
_TEMPERATURES = (0.05, 4.0)  # a sampling request's temperature, uniform in this range
HOT_TEMPERATURES = (4.0, 100.0)  # or, for about one sampling request in 8, log-uniform in this range: past any cap
_HOT_SHARE = 0.125
TINY_TEMPERATURES = (1e-6, 1e-3)  # or, in some cases, log-uniform in this range: below the kernel's floor of 1e-5 too
_SERVER_BS = 1025  # a server's batch: past blocks of 256, 512 and 1024 requests
_SERVER_VOCAB = 4097  # two blocks of 4096, the second of one token
_BONUS_ROWS = ("target_logits",)  # §20.1: only the logits' row stride is free
_ACCEPT_ROWS = ("candidates", "out_tokens_out", "part_val", "part_idx")  # §21.1, §21.5: column stride 1


def _placed(values, layout, rows=()):
    """Each tensor as a :class:`TensorArg` of ``layout``; ``padded`` applies to the tensors
    named in ``rows`` (2-D, their row stride left free by the contract), the others contiguous."""
    def layout_of(name):
        return "contiguous" if layout == "padded" and name not in rows else layout

    return {name: None if v is None else TensorArg(v, layout_of(name)) for name, v in values.items()}


def dspark_length_cases(*, max_gamma=LONG_GAMMA, methods=None):
    """Cases for DSpark's step length: ``gamma`` in ``[0, max_gamma]`` (past :data:`MAX_GAMMA`
    in about one case in two), lengths in and out of
    ``[1, gamma + 1]``, zero and negatives included (no ``> 0`` check, §19.2), NaN with
    ``match-expected``. ``methods`` replaces the method, which is otherwise the one this
    process reads at import (the call reads it there, not from its arguments). Shrinks toward
    gamma=0, a length of 1, contiguous.
    """
    sc._check_range("min_gamma", 0, "max_gamma", max_gamma)
    return _dspark_length_cases(_gammas(0, max_gamma), st.just(DEFAULT_METHOD) if methods is None else methods)


def _gammas(min_gamma, max_gamma):
    """``gamma`` in ``[min_gamma, max_gamma]``: up to :data:`MAX_GAMMA` in about one draw in two, past it
    (a server's longer drafts, where a block of 8 runs out) in the other; shrinks toward ``min_gamma``."""
    if max_gamma <= MAX_GAMMA or min_gamma > MAX_GAMMA:
        return sc.spec_steps(min_gamma, max_gamma)
    return sc.spec_steps(min_gamma, MAX_GAMMA) | sc.spec_steps(MAX_GAMMA + 1, max_gamma)


@functools.lru_cache(maxsize=None)
def _lengths(width, nan):
    lengths = sc.acc_lens(width, positive=False)
    return lengths | _NAN if nan else lengths


@st.composite
def _dspark_length_cases(draw, gammas, methods):
    gamma = draw(gammas, label="gamma")
    method = draw(methods, label="method")
    seed = draw(sc.seeds(), label="seed")
    buffer = _Contents(DsparkLengthCase, seed).ints("simulated_correct_len", (1,), torch.int64, *tn.WIDE)
    return DsparkLengthCase(
        simulated_correct_len=TensorArg(buffer, draw(_BUFFER_LAYOUTS, label="layout")),
        simulate_acc_len=draw(_lengths(gamma + 1, method == "match-expected"), label="simulate_acc_len"),
        gamma=gamma,
        simulate_acc_method=method,
        seed=seed,
    )


def dspark_bonus_cases(*, modes=GREEDY, min_bs=1, max_bs=8, max_rows=MAX_GAMMA + 1, split_vocabularies=False):
    """Cases for DSpark's simulated bonus: ``bs`` requests of ``rows_per_request`` verify rows
    each, logits with one maximum a row (integer scores below it, so the greedy bonus is one
    token on every device), ``correct_len`` one row for the batch (as DSpark passes it) or one
    a request. ``modes`` says which requests sample (``greedy``: temperatures 0 or negative;
    ``random``: in [0.05, 4]; ``mixed``), about one sampling request in 8 a hot temperature
    instead (:data:`HOT_TEMPERATURES`, up to 100: past a sampler's cap), and in some cases half
    the sampling requests a tiny temperature (:data:`TINY_TEMPERATURES`), whose sample is the
    argmax but for a chance of at most ``V exp(-1000)``. ``split_vocabularies`` draws a
    vocabulary past 4096 in about a quarter of the cases instead of now and then. Shrinks toward bs=1, one row, greedy, a small
    vocabulary, no tiny temperature.
    """
    if not modes or set(modes) - set(GREEDY):
        raise ValueError(f"{modes=} must be a non-empty subset of {GREEDY}")
    sc._check_range("min_bs", max(min_bs, 1), "max_bs", max_bs)
    sc._check_range("min_rows", 1, "max_rows", max_rows)
    return _dspark_bonus_cases(st.sampled_from(tuple(modes)), st.integers(max(min_bs, 1), max_bs),
                               st.integers(1, max_rows), _SPLIT_VOCABS if split_vocabularies else _VOCABS)


@st.composite
def _dspark_bonus_cases(draw, modes, batch_sizes, row_counts, vocabs):
    mode = draw(modes, label="mode")
    bs = draw(batch_sizes, label="bs")
    rows = draw(row_counts, label="rows_per_request")
    vocab = draw(vocabs, label="vocab")
    shared = draw(_BOOLEANS, label="one_correct_len")
    tiny = mode != "greedy" and draw(_BOOLEANS, label="tiny_temperatures")
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(DsparkBonusCase, seed)
    correct_len = contents.ints("correct_len", (1 if shared else bs,), torch.int64, 0, rows).expand(bs).clone()
    gen = contents.generator("temperatures")
    low, high = _TEMPERATURES
    temperatures = torch.rand((bs, 1), generator=gen) * (high - low) + low
    greedy = {"greedy": torch.ones(bs, 1, dtype=torch.bool), "random": torch.zeros(bs, 1, dtype=torch.bool),
              "mixed": torch.rand((bs, 1), generator=gen) < 0.5}[mode]
    if mode == "mixed" and bs > 1:
        greedy[0], greedy[-1] = True, False  # both kinds
    if tiny:
        temperatures = torch.where(torch.rand((bs, 1), generator=gen) < 0.5, _tiny(torch.rand((bs, 1), generator=gen)),
                                   temperatures)
    negative = temperatures > 3.5
    # now and then a hot one, drawn last so that every other value stays what it was
    hot = torch.rand((bs, 1), generator=gen) < _HOT_SHARE
    temperatures = torch.where(hot & (temperatures >= low), _log_uniform(torch.rand((bs, 1), generator=gen),
                                                                         HOT_TEMPERATURES), temperatures)
    # a greedy request's temperature: 0, or now and then a negative one (any T <= 0 is greedy, §20.2)
    temperatures = torch.where(greedy, torch.where(negative, -1.0, 0.0), temperatures)
    values = {"target_logits": _logits(contents.generator("target_logits"), bs * rows, vocab),
              "correct_len": correct_len, "temperatures": temperatures}
    return DsparkBonusCase(**_placed(values, draw(_ROW_LAYOUTS, label="layout"), _BONUS_ROWS), bs=bs,
                           rows_per_request=rows, seed=seed)


def _tiny(uniforms):
    return _log_uniform(uniforms, TINY_TEMPERATURES)


def _log_uniform(uniforms, bounds):
    low, high = (math.log(t) for t in bounds)
    return (uniforms.double() * (high - low) + low).exp().clamp(*bounds).float()


def dspark_bonus_server_batches():
    """A server's batch for DSpark's bonus, built whole (the drawn cases stop at 8 requests and
    72 rows): 1025 requests (past launches of 256, 512 or 1024) of one verify row each over a
    vocabulary of 4097 (two blocks of 4096), every other request greedy, the others at a
    temperature in [0.05, 4]; contiguous; seed 0. Built once a process, at its first draw."""
    return st.deferred(lambda: st.sampled_from([_server_bonus_case()]))


@functools.lru_cache(maxsize=None)
def _server_bonus_case():
    contents = _Contents(DsparkBonusCase, 0)
    gen = contents.generator("temperatures")
    low, high = _TEMPERATURES
    temperatures = torch.rand((_SERVER_BS, 1), generator=gen) * (high - low) + low
    temperatures[::2] = 0.0
    return DsparkBonusCase(
        target_logits=TensorArg(_logits(contents.generator("target_logits"), _SERVER_BS, _SERVER_VOCAB)),
        correct_len=TensorArg(torch.zeros(_SERVER_BS, dtype=torch.int64)), temperatures=TensorArg(temperatures),
        bs=_SERVER_BS, rows_per_request=1, seed=0)


def dspark_accept_cases(*, bonuses=BONUSES, min_bs=1, max_bs=64, min_gamma=0, max_gamma=LONG_GAMMA,
                        simulated=None, gated=None):
    """Cases for DSpark's accept (the layout of ``static_accept_tail``): ``bs`` rows of an anchor
    and ``gamma`` drafts (past :data:`MAX_GAMMA` in about one case in two), each row's target
    agreeing with its first ``k`` drafts (``k`` from the seed, so the real count differs from
    the simulated one), static output buffers with spare
    rows, prefilled, and sometimes ``seq_lens`` and ``verify_lens`` with the same spare rows (a
    graph's static inputs). ``bonuses`` says where the bonus may come from (``target``,
    ``bonus_in``, ``bonus_parts``: split maxima that tie or differ by less than a bfloat16 ulp);
    ``simulated`` True or False asks for a simulated length or none, ``gated`` for
    ``gated_commit_lens_out`` or none (None: either). A supplied bonus sometimes comes without
    ``target_predict``, as the fold passes it.
    Shrinks toward bs=1, gamma=min_gamma, a simulated length of 0, the target's bonus, contiguous.
    """
    if not bonuses or set(bonuses) - set(BONUSES):
        raise ValueError(f"{bonuses=} must be a non-empty subset of {BONUSES}")
    sc._check_range("min_bs", max(min_bs, 1), "max_bs", max_bs)
    sc._check_range("min_gamma", max(min_gamma, 0), "max_gamma", max_gamma)
    simulations = _BOOLEANS.map(lambda real: not real) if simulated is None else st.just(simulated)
    gatings = _BOOLEANS if gated is None else st.just(gated)
    return _dspark_accept_cases(st.sampled_from(tuple(bonuses)), sc.batch_sizes(max(min_bs, 1), max_bs),
                                _gammas(max(min_gamma, 0), max_gamma), simulations, gatings)


@functools.lru_cache(maxsize=None)
def _counts(gamma):
    return st.integers(0, gamma)


def _agreeing(contents, bs, gamma, vocab):
    """``(candidates, target)``: random tokens, then each row's target made to agree with its
    first ``k`` drafts and to differ at draft ``k + 1`` (``k`` in ``[0, gamma]``, from the seed)."""
    width = gamma + 1
    candidates = contents.ints("candidates", (bs, width), torch.int64, 0, vocab)
    target = contents.ints("target_predict", (bs, width), torch.int64, 0, vocab)
    agree = torch.randint(0, width, (bs,), generator=contents.generator("seed")).tolist()  # the field no tensor uses
    for row, k in enumerate(agree):
        target[row, :k] = candidates[row, 1 : k + 1]
        if k < gamma:
            target[row, k] = (candidates[row, k + 1] + 1) % max(vocab, 2)
    return candidates, target


def _split_maxima(contents, rows, splits):
    """``(rows, splits)`` float32 values: an integer in [-2, 2) plus 0, 1 or 2 times 2**-10, so
    that splits often tie and often differ by less than a bfloat16 ulp (2**-7 at 1)."""
    gen = contents.generator("part_val")
    whole = torch.randint(-2, 2, (rows, splits), generator=gen)
    return (whole + torch.randint(0, 3, (rows, splits), generator=gen) * 2.0**-10).float()


@st.composite
def _dspark_accept_cases(draw, bonuses, batch_sizes, gammas, simulations, gatings):
    bonus = draw(bonuses, label="bonus")
    bs = draw(batch_sizes, label="bs")
    gamma = draw(gammas, label="gamma")
    simulated = draw(simulations, label="simulated")
    sim = draw(_counts(gamma), label="simulated_correct_len") if simulated else None
    spare = draw(_SPARE_ROWS, label="spare_rows")
    static = draw(_BOOLEANS, label="static_seq_lens")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    keeps_target = bonus == "target" or not simulated or draw(_BOOLEANS, label="passes_target_predict")
    gated = draw(gatings, label="gated")
    splits = draw(_SPLITS, label="splits") if bonus == "bonus_parts" else None
    seed = draw(sc.seeds(), label="seed")
    values = _accept_values(_Contents(DsparkAcceptCase, seed), bs, gamma, sim, bs + spare, static, vocab,
                            keeps_target, gated, bonus, splits)
    return DsparkAcceptCase(**_placed(values, draw(_ROW_LAYOUTS, label="layout"), _ACCEPT_ROWS),
                            vocab=max(vocab, 1), seed=seed)


def _accept_values(contents, bs, gamma, sim, rows, static, vocab, keeps_target, gated, bonus, splits):
    """The accept case's tensors: static buffers of ``rows`` rows (``seq_lens`` and
    ``verify_lens`` too where ``static``), prefilled."""
    width = gamma + 1
    lens = rows if static else bs
    candidates, target = _agreeing(contents, bs, gamma, vocab)
    values = {
        "candidates": candidates,
        "target_predict": target.reshape(-1) if keeps_target else None,
        "seq_lens": contents.ints("seq_lens", (lens,), torch.int64, 0, 2**20),
        "verify_lens": contents.ints("verify_lens", (lens,), torch.int64, 0, width + 2),
        "gate": contents.ints("gate", (1,), torch.int32, 0, 2),
        "simulated_correct_len": None if sim is None else torch.tensor([sim], dtype=torch.int64),
        "bonus_in": contents.ints("bonus_in", (rows,), torch.int64, 0, vocab) if bonus == "bonus_in" else None,
        "part_val": None,
        "part_idx": None,
        "gated_commit_lens_out": None,
    }
    for name in ("correct_len_out", "bonus_out", "new_seq_lens_out"):
        values[name] = contents.ints(name, (rows,), torch.int64, *tn.WIDE)
    for name in ("cap_trim_lens_out", "commit_lens_out"):
        values[name] = contents.ints(name, (rows,), torch.int32, *tn.INT32)
    values["out_tokens_out"] = contents.ints("out_tokens_out", (rows, width), torch.int64, *tn.WIDE)
    if gated:
        values["gated_commit_lens_out"] = contents.ints("gated_commit_lens_out", (rows,), torch.int32, *tn.INT32)
    if bonus == "bonus_parts":
        values["part_val"] = _split_maxima(contents, rows, splits)
        values["part_idx"] = contents.ints("part_idx", (rows, splits), torch.int32, 0, min(max(vocab, 1), 2**31 - 1))
    return values


def dspark_accept_server_batches():
    """A server's batch for DSpark's accept, built whole (the drawn cases stop at 64 rows):
    1025 requests (past blocks of 128, 256, 512 or 1024 rows) of 8 drafts over a vocabulary of
    151,936, with static buffers of 1032 rows, ``seq_lens`` and ``verify_lens`` included, and
    gated commits; once with a simulated count of 4 and the target's bonus, once the real
    accept; contiguous; seed 0. Built once a process, at its first draw."""
    return st.deferred(lambda: st.sampled_from([_server_accept_case(sim) for sim in (4, None)]))


@functools.lru_cache(maxsize=None)
def _server_accept_case(sim):
    values = _accept_values(_Contents(DsparkAcceptCase, 0), _SERVER_BS, MAX_GAMMA, sim, _SERVER_BS + 7, True,
                            151_936, True, True, "target", None)
    return DsparkAcceptCase(**_placed(values, "contiguous"), vocab=151_936, seed=0)


# -- the records: a length case's variant is the method read at import (§19), a bonus case's which requests
# sample, an accept case's where its bonus comes from

DSPARK_LENGTH = Contract("dspark_length", ("simulated_correct_len", "simulate_acc_len", "gamma"),
                         reference.begin_simulated_step, DsparkLengthCase, dspark_length_cases, "method", METHODS)
DSPARK_BONUS = Contract(
    "dspark_bonus", ("target_logits", "correct_len", "temperatures", "bs", "rows_per_request"),
    reference.simulated_bonus_sample, DsparkBonusCase, dspark_bonus_cases, REQUESTS, GREEDY, draws=("random",),
)
DSPARK_ACCEPT = Contract("dspark_accept", DSPARK_ACCEPT_PARAMS, reference.static_accept_tail, DsparkAcceptCase,
                         dspark_accept_cases, "bonus source", BONUSES, draws=())
