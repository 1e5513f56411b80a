"""Cases: the inputs of one call, as plain data that replays on any device.

A case holds each tensor's logical values on the CPU plus the name of the memory layout to
build it with, never a live tensor on some device: that is what lets a case found on CUDA
replay on a CPU (and the reverse), print as a short summary, and travel through JSON.
Each case type also says what simacc would otherwise branch on its type for: what a
reference can run, how its ``L`` and sizes are said, what its token tensors are called.
"""

import dataclasses
import functools
from dataclasses import dataclass

import torch

from simacc.contract.caller import DEFAULT_METHOD
from simacc.contract.sampling import sample_simulated_acc_len

LAYOUTS = ("contiguous", "transposed", "strided", "offset", "padded")
DTYPES = {"int32": torch.int32, "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float32": torch.float32, "float64": torch.float64, "bool": torch.bool}
_PAD = -7  # fills the gaps of non-contiguous buffers; a wrong stride reads it
PADDED_COLUMNS = 3  # a padded layout's extra columns: odd, so that no row of the buffer starts at a multiple of the view's
_INTEGERS = (torch.int32, torch.int64)
_VLLM_FLOATS = (torch.float32, torch.float64)
_UNIFORM_FLOATS = (torch.float16, torch.bfloat16, *_VLLM_FLOATS)  # the decision's uniforms: any float (§16.1)
_TOKEN_MAX = 2**31  # a fixed token id fits in int32 (CONTRACT.md §2.5)
DRAWN_SINCE_SEEDED = 4  # the draws a generator makes once seeded from a case, before the call (seeded)
_SINKS = {}  # device: where seeded's draws land (one per device: a new tensor each call costs as much as the draws)


def seeded(generator, seed):
    """``generator`` seeded with ``seed`` and then drawn from :data:`DRAWN_SINCE_SEEDED` times:
    a server's generator has drawn since it was seeded (CONTRACT.md §11.2), so a port that
    rewinds it to its seed (``torch.manual_seed(torch.initial_seed())``) draws from another
    state than its caller's. Every generator simacc seeds for a call, and every oracle of what
    a call draws from it, is seeded here."""
    generator.manual_seed(seed)
    sink = _SINKS.get(generator.device)
    if sink is None:
        with torch.inference_mode(False):  # written to in every grad mode
            sink = _SINKS[generator.device] = torch.empty(DRAWN_SINCE_SEEDED, dtype=torch.float32,
                                                           device=generator.device)  # whatever the default
    sink.uniform_(generator=generator)
    return generator


@dataclass(frozen=True, eq=False)
class TensorArg:
    """Logical ``values`` (CPU, contiguous) and the ``layout`` to materialise them with.

    ``transposed`` is a ``.t()`` view of a transposed buffer (2-D only), ``strided`` takes
    every other element of the last dimension, ``offset`` starts one element into its
    storage, ``padded`` is the leading columns of a buffer :data:`PADDED_COLUMNS` wider (a
    row stride past the row's length, column stride 1: a static buffer's slice, logits from a
    vocabulary-padded buffer; in 1-D, the head of a longer storage).
    """

    values: torch.Tensor
    layout: str = "contiguous"

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.layout == "transposed" and self.values.dim() != 2:
            raise ValueError(f"a transposed layout needs a 2-D tensor, got {self.values.dim()}-D")

    def on(self, device):
        """A fresh tensor on ``device`` with these values and this layout."""
        v = self.values.to(device)
        if self.layout == "contiguous":
            return v.clone()
        if self.layout == "transposed":
            return v.t().contiguous().t()
        if self.layout == "strided":
            buf = torch.full((*v.shape[:-1], 2 * v.shape[-1]), _PAD, dtype=v.dtype, device=device)
            view = buf[..., ::2]
        elif self.layout == "padded":
            buf = torch.full((*v.shape[:-1], v.shape[-1] + PADDED_COLUMNS), _PAD, dtype=v.dtype, device=device)
            view = buf[..., : v.shape[-1]]
        else:
            buf = torch.full((v.numel() + 1,), _PAD, dtype=v.dtype, device=device)
            view = buf[1:].view(v.shape)
        view.copy_(v)
        return view

    def summary(self):
        return (
            f"Tensor[size={tuple(self.values.shape)}, dtype={str(self.values.dtype)[6:]}"
            f"{'' if self.layout == 'contiguous' else ', ' + self.layout}]"
        )

    def __repr__(self):
        return self.summary()

    def _repr_pretty_(self, printer, cycle):  # how Hypothesis prints a falsifying example
        printer.text(self.summary())


@functools.lru_cache(maxsize=None)
def _names(case_type):
    """The field names of a case type, in order (``dataclasses.fields`` costs microseconds a call)."""
    return tuple(f.name for f in dataclasses.fields(case_type))


_USUAL = (("omitted", ()), ("fixed_token_id", None))  # every argument passed; no fixed id passed: not shown


def _summary(case):
    parts = []
    for name in _names(type(case)):
        value = getattr(case, name)
        if (name, value) in _USUAL:
            continue
        shown = value.summary() if isinstance(value, TensorArg) else repr(value)
        parts.append(f"{name}={shown}")
    return f"{type(case).__name__}({', '.join(parts)})"


class _Case:
    """Shared behaviour: tensor fields, materialisation, the sampled length, summaries, and
    what the rest of simacc asks of every case type, so that it never branches on one: a
    type defines ``_arguments_problem`` (what its reference cannot run, in one line, or None)
    and, where its layout differs, overrides the attributes and methods below."""

    _index_field = "accept_index"  # the (bs, W) index whose first column holds the roots
    token_fields = ("candidates", "target_predict")  # the drafts' and the target's tokens, as the call names them
    width_name = "W"  # what a result row calls ``max_len``
    length_given = False  # the call is given L (the kernel op): the L to hold it to, at every level
    # the argument sets a case may leave out: those some call style of its contracts can (CONTRACT.md §5.1;
    # the records' omissions, which tests/test_strategies.py holds them to)
    omittable = frozenset()

    def problem(self):
        """Why no reference could run this case (one line), or None: a repro file's case
        must pass (CONTRACT.md §2); every case a strategy draws does."""
        return self._omission_problem() or self._arguments_problem()

    def _omission_problem(self):
        omitted = getattr(self, "omitted", ())
        if omitted and tuple(omitted) not in self.omittable:
            return f"no call style can leave out {list(omitted)}"
        return None

    def sizes_text(self):
        """The call's sizes and mode as a failure message says them after its ``L``."""
        return f"{self.width_name}={self.max_len}, bs={self.bs}, mode {self.mode}"

    def size_text(self):
        """The case's size in a few words, for a result row (``bs=2 W=4``)."""
        return f"bs={self.bs} {self.width_name}={self.max_len}"

    def length_text(self):
        """How a failure message says the ``L`` the outputs are held to when it names none:
        the given one, or the documented draw from the case's seed, said as such (a port
        checked at the semantic level may draw another)."""
        if self.length_given:
            return f"L={self.expected_length()}"
        try:
            return f"L={self.expected_length()} by the documented draw"
        except (ValueError, TypeError, RuntimeError):  # a length or method the call must reject
            return "L not drawn (the call must raise first)"

    @property
    def root_values(self):
        """``(bs, 1)``: each request's root position in the flat ``predict``."""
        return getattr(self, self._index_field).values[:, :1]

    def tensors(self):
        return {name: getattr(self, name) for name in _names(type(self)) if isinstance(getattr(self, name), TensorArg)}

    def args(self, device):
        """Keyword arguments of the contract's call, with fresh tensors on ``device``; the
        ``omitted`` ones are left out, so that their defaults apply (CONTRACT.md §5.1)."""
        skipped = ("seed", "omitted", *getattr(self, "omitted", ()))
        values = ((name, getattr(self, name)) for name in _names(type(self)) if name not in skipped)
        return {k: v.on(device) if isinstance(v, TensorArg) else v for k, v in values}

    def expected_length(self):
        """The ``L`` that the documented sampler draws from this case's seed (computed once:
        a property asks for it several times)."""
        length = self.__dict__.get("_expected_length")
        if length is None:
            with torch.random.fork_rng(devices=[]):
                seeded(torch.default_generator, self.seed)
                length = sample_simulated_acc_len(self.simulate_acc_len, self.simulate_acc_method, self.max_len)
            object.__setattr__(self, "_expected_length", length)  # a cache, not a field: the case stays frozen
        return length

    @property
    def mode(self):
        """The token mode the case asks for."""
        return self.simulate_acc_token_mode

    def summary(self):
        return _summary(self)

    def __repr__(self):
        return self.summary()

    def _repr_pretty_(self, printer, cycle):  # how Hypothesis prints a falsifying example
        printer.text(self.summary())


@dataclass(frozen=True, eq=False, repr=False)
class EagleCase(_Case):
    """Arguments of ``generate_simulated_accept_index``, plus the generator seed."""

    accept_index: TensorArg
    predict: TensorArg
    num_correct_drafts: TensorArg
    candidates: TensorArg | None
    target_predict: TensorArg | None
    bs: int
    spec_steps: int
    simulate_acc_len: float
    simulate_acc_method: str
    simulate_acc_token_mode: str
    seed: int
    omitted: tuple = ()  # argument names left out of the call, their values being the defaults

    omittable = frozenset({("simulate_acc_method",), ("simulate_acc_token_mode",),
                           ("simulate_acc_method", "simulate_acc_token_mode")})

    @property
    def max_len(self):
        return self.spec_steps + 1

    @property
    def roots(self):
        return self.accept_index.values[:, 0].tolist()

    def _arguments_problem(self):
        width = self.spec_steps + 1
        if self.spec_steps < 0 or self.bs < 0:
            return "bs and spec_steps must be >= 0"
        real = self.simulate_acc_token_mode == "real-draft-token"
        return _first(_tensor_problem(self, "accept_index", (self.bs, width), (torch.int32,)),
                      _tensor_problem(self, "predict", (None,)),
                      _tensor_problem(self, "num_correct_drafts", (self.bs,)),
                      _chain_problem(self, self.bs, width, real),
                      _ranges_problem(self.accept_index, width, self.predict.values.numel()))


@dataclass(frozen=True, eq=False, repr=False)
class DflashCase(_Case):
    """Arguments of ``apply_dflash_simulated_acceptance``, plus the generator seed."""

    candidates: TensorArg
    target_predict: TensorArg | None
    accept_len: TensorArg
    commit_lens: TensorArg
    bonus: TensorArg
    out_tokens: TensorArg
    simulate_acc_len: float
    simulate_acc_method: str
    simulate_acc_token_mode: str
    next_token_logits: TensorArg | None
    seed: int
    fixed_token_id: int | None = None  # None: not passed (sglang's caller never does), its default applies
    omitted: tuple = ()  # argument names left out of the call, their values being the defaults

    width_name = "B"
    omittable = frozenset({("next_token_logits",)})

    def args(self, device):
        args = super().args(device)
        if self.fixed_token_id is None:
            del args["fixed_token_id"]
        return args

    @property
    def max_len(self):
        return self.out_tokens.values.shape[1]

    @property
    def bs(self):
        return self.out_tokens.values.shape[0]

    def _arguments_problem(self):
        bs, block = self.out_tokens.values.shape if self.out_tokens.values.dim() == 2 else (-1, -1)
        if block < 1:
            return "out_tokens must be (bs, B) with B >= 1"
        logits = self.next_token_logits
        if self.simulate_acc_token_mode == "real-draft-token" and self.target_predict is None and logits is None:
            return "real mode needs target_predict or next_token_logits"
        return _first(_tensor_problem(self, "candidates", (bs, block)),
                      self.target_predict is not None and _tensor_problem(self, "target_predict", (bs, block)),
                      _tensor_problem(self, "accept_len", (bs,)),
                      _tensor_problem(self, "commit_lens", (bs,)),
                      _tensor_problem(self, "bonus", (bs,)),
                      logits is not None
                      and _tensor_problem(self, "next_token_logits", (bs * block, None), (torch.float32,)))


@dataclass(frozen=True, eq=False, repr=False)
class KernelCase(_Case):
    """Arguments of the kernel op (CONTRACT.md §8): the length is an input
    (``num_accept_tokens``), so ``seed`` only seeds the generator the op must not need."""

    accept_indices: TensorArg
    predict_tokens: TensorArg
    num_correct_drafts: TensorArg
    candidate_tokens: TensorArg
    target_tokens: TensorArg
    width: int
    num_accept_tokens: int
    real_tokens: bool
    seed: int

    @property
    def max_len(self):
        return self.width

    _index_field = "accept_indices"
    token_fields = ("candidate_tokens", "target_tokens")
    length_given = True

    @property
    def bs(self):
        return self.accept_indices.values.shape[0]

    def expected_length(self):
        return self.num_accept_tokens

    @property
    def mode(self):
        return "real-draft-token" if self.real_tokens else "fixed"

    def _arguments_problem(self):
        bs, width = self.accept_indices.values.shape[0], self.width
        if not 1 <= self.num_accept_tokens <= width:
            return f"num_accept_tokens={self.num_accept_tokens} is not in [1, width={width}]"
        return _first(_tensor_problem(self, "accept_indices", (bs, width), (torch.int32,)),
                      _tensor_problem(self, "predict_tokens", (None,)),
                      _tensor_problem(self, "num_correct_drafts", (bs,)),
                      _chain_problem(self, bs, width, self.real_tokens),
                      _ranges_problem(self.accept_indices, width, self.predict_tokens.values.numel()))


@dataclass(frozen=True, eq=False, repr=False)
class FunctionalCase(_Case):
    """Arguments of the functional contract (:mod:`simacc.contract.functional`): ``seed`` is passed as
    ``rng`` (the call style makes it a JAX key), or None when ``omitted`` names ``rng``."""

    accept_index: TensorArg
    predict: TensorArg
    candidates: TensorArg | None
    target_predict: TensorArg | None
    valid_mask: TensorArg
    spec_steps: int
    simulate_acc_len: float
    simulate_acc_method: str
    simulate_acc_token_mode: str
    fixed_token_id: int
    seed: int
    omitted: tuple = ()  # ("rng",): the call passes rng=None

    def args(self, device):
        return {**super().args(device), "rng": None if "rng" in self.omitted else self.seed}

    omittable = frozenset({("rng",)})

    @property
    def max_len(self):
        return self.spec_steps + 1

    @property
    def bs(self):
        return self.accept_index.values.shape[0]

    def length_text(self):
        return "L drawn by the implementation"  # a JAX key, not torch's generator: no documented draw

    def _arguments_problem(self):
        width = self.spec_steps + 1
        bs = self.accept_index.values.shape[0] if self.accept_index.values.dim() else -1
        if self.spec_steps < 0:
            return "spec_steps must be >= 0"
        if not 0 <= self.fixed_token_id < _TOKEN_MAX:
            return f"fixed_token_id={self.fixed_token_id} does not fit int32"
        real = self.simulate_acc_token_mode == "real-draft-token"  # too few columns is a case the contract rejects
        return _first(_tensor_problem(self, "accept_index", (bs, width), (torch.int32,)),
                      _tensor_problem(self, "predict", (None,)),
                      _tensor_problem(self, "valid_mask", (bs,), (torch.bool,)),
                      _chain_problem(self, bs, width, real, exact_width=True),
                      _ranges_problem(self.accept_index, width, self.predict.values.numel()))


# -- vLLM's layouts (CONTRACT.md §13-§18) ---------------------------------------------------------


def _floats(arg):
    """A 1-D float tensor's values as the Python floats a vLLM setting holds."""
    return [float(v) for v in arg.values.tolist()]


@dataclass(frozen=True, eq=False, repr=False)
class SettingsCase(_Case):
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
    def mode(self):
        """The knobs given: ``rates``, ``length``, ``both`` or ``neither``."""
        given = (self.synthetic_acceptance_rates is not None, self.synthetic_acceptance_length is not None)
        return {(True, False): "rates", (False, True): "length", (True, True): "both"}.get(given, "neither")

    def length_text(self):
        return f"K={self.num_speculative_tokens}"

    def sizes_text(self):
        return f"{self.mode} given"

    def size_text(self):
        return f"K={self.num_speculative_tokens}"

    def _arguments_problem(self):
        if self.synthetic_acceptance_rates is None:
            return None
        return _tensor_problem(self, "synthetic_acceptance_rates", (None,), _VLLM_FLOATS)


@dataclass(frozen=True, eq=False, repr=False)
class ConversionCase(_Case):
    """Unconditional rates to convert (CONTRACT.md §14), passed as a list of floats with the
    device the runner calls on."""

    unconditional_rates: TensorArg
    seed: int = 0

    def args(self, device):
        return {"unconditional_rates": _floats(self.unconditional_rates), "device": device}

    mode = "rates"

    def length_text(self):
        return f"K={self.unconditional_rates.values.numel()}"

    def sizes_text(self):
        return f"rates {_floats(self.unconditional_rates)}"

    def size_text(self):
        return self.length_text()

    def _arguments_problem(self):
        return _tensor_problem(self, "unconditional_rates", (None,), _VLLM_FLOATS)


class _VllmBatch(_Case):
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
    def mode(self):
        greedy = self.greedy
        return "greedy" if bool(greedy.all()) else "random" if not bool(greedy.any()) else "mixed"

    def length_text(self):
        return f"K={self.k}"

    def sizes_text(self):
        return f"{self.width_name}={self.max_len}, B={self.bs}, {self.mode} requests"

    def size_text(self):
        return f"B={self.bs} K={self.k}"

    def _rates_problem(self):
        problem = _tensor_problem(self, "synthetic_conditional_rates", (None,), _VLLM_FLOATS)
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
        problem = self._rates_problem() or _tensor_problem(self, "num_draft_tokens", (None,), (torch.int64,))
        if problem:
            return problem
        counts, rows = self.counts, self.bs
        if counts and not 0 <= min(counts) <= max(counts) <= self.k:
            return f"num_draft_tokens must lie in [0, K={self.k}], got {counts}"
        tokens = sum(counts)
        return _first(*(_tensor_problem(self, name, (tokens, *rest), kinds) for name, rest, kinds in flat),
                      _tensor_problem(self, "bonus_token_ids", (rows, 1)),
                      _tensor_problem(self, "is_greedy", (rows,), (torch.bool,)))


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
        return self._batch_problem(("draft_token_ids", (), _INTEGERS), ("uniform_probs", (), _UNIFORM_FLOATS),
                                   ("target_argmax", (), _INTEGERS), ("recovered_token_ids", (), _INTEGERS))


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
        return self._batch_problem(("draft_token_ids", (), _INTEGERS), ("target_logits", (vocab,), _VLLM_FLOATS)) \
            or _tensor_problem(self, "generator_seeds", (self.bs,), (torch.int64,))


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
        problem = self._rates_problem() or _tensor_problem(self, "cu_num_logits", (None,))
        if problem:
            return problem
        if self.num_speculative_steps != self.k:
            return f"num_speculative_steps={self.num_speculative_steps} is not K={self.k}, the number of rates"
        cu, rows = self.cu_num_logits.values, self.bs
        sizes = cu.diff()
        if rows < 0 or int(cu[0]) != 0 or int(cu[-1]) != logits.shape[0] or bool(((sizes < 1) | (sizes > self.k + 1)).any()):
            return f"cu_num_logits must run from 0 to {logits.shape[0]} in steps of 1 to K + 1"
        return _first(_tensor_problem(self, "target_logits", (None, None), _VLLM_FLOATS),
                      _tensor_problem(self, "draft_sampled", (logits.shape[0],)),
                      _tensor_problem(self, "pos", (logits.shape[0],)),
                      _tensor_problem(self, "temperature", (rows,), _VLLM_FLOATS),
                      _tensor_problem(self, "request_seeds", (rows,), (torch.int64,)))


# -- sglang's DSpark (CONTRACT.md §19-§21) --------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class DsparkLengthCase(_Case):
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
    def mode(self):
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
        return _tensor_problem(self, "simulated_correct_len", (1,), (torch.int64,))


@dataclass(frozen=True, eq=False, repr=False)
class DsparkBonusCase(_Case):
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
    def mode(self):
        """Which requests sample (temperature > 0): ``greedy``, ``random`` or ``mixed``."""
        sampled = self.temperatures.values.reshape(-1) > 0
        return "greedy" if not bool(sampled.any()) else "random" if bool(sampled.all()) else "mixed"

    def length_text(self):
        rows = self.correct_len.values.tolist()
        return f"correct_len={rows if len(rows) <= 8 else self.correct_len.summary()}"

    def sizes_text(self):
        return f"R={self.rows_per_request}, bs={self.bs}, V={self.vocab}, {self.mode} requests"

    def size_text(self):
        return f"bs={self.bs} R={self.rows_per_request} V={self.vocab}"

    def _arguments_problem(self):
        if self.bs < 1 or self.rows_per_request < 1:
            return "bs and rows_per_request must be >= 1"
        problem = _first(_tensor_problem(self, "target_logits", (self.bs * self.rows_per_request, None), _VLLM_FLOATS),
                         _tensor_problem(self, "correct_len", (self.bs,), (torch.int64,)),
                         _tensor_problem(self, "temperatures", (self.bs, 1), (torch.float32,)))
        if problem or self.vocab < 1:
            return problem or "target_logits must have a vocabulary (V >= 1)"
        rows = self.correct_len.values
        if not 0 <= int(rows.min()) <= int(rows.max()) < self.rows_per_request:
            return f"correct_len must lie in [0, rows_per_request - 1 = {self.rows_per_request - 1}]"
        return None


@dataclass(frozen=True, eq=False, repr=False)
class DsparkAcceptCase(_Case):
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
    def mode(self):
        """Where the bonus comes from: ``target``, ``bonus_in`` or ``bonus_parts``."""
        return "bonus_parts" if self.part_val is not None else "bonus_in" if self.bonus_in is not None else "target"

    def args(self, device):
        values = super().args(device)
        part_val, part_idx, vocab = values.pop("part_val"), values.pop("part_idx"), values.pop("vocab")
        values["bonus_parts"] = None if part_val is None else (part_val, part_idx, vocab)
        return values

    def sizes_text(self):
        return f"T={self.max_len}, bs={self.bs}, bonus from {self.mode}"

    def _buffer_problem(self, name, dtypes, columns=(), optional=False):
        """``name`` holds at least ``bs`` rows (a static buffer may have more) of ``dtypes``."""
        arg = getattr(self, name)
        if arg is None and optional:
            return None
        return _tensor_problem(self, name, (None, *columns), dtypes) or (
            arg.values.shape[0] < self.bs and f"{name} has fewer than bs = {self.bs} rows")

    def _arguments_problem(self):
        bs, width = self.candidates.values.shape if self.candidates.values.dim() == 2 else (0, 0)
        if bs < 1 or width < 1:
            return "candidates must be (bs, gamma + 1) with bs >= 1"
        wide, narrow = (torch.int64,), (torch.int32,)
        problem = _first(
            _tensor_problem(self, "candidates", (bs, width), wide),
            self.target_predict is not None and _tensor_problem(self, "target_predict", (bs * width,), wide),
            *(self._buffer_problem(name, wide) for name in ("seq_lens", "verify_lens", "correct_len_out", "bonus_out",
                                                            "new_seq_lens_out")),
            self._buffer_problem("cap_trim_lens_out", narrow),
            self._buffer_problem("commit_lens_out", narrow),
            self._buffer_problem("out_tokens_out", wide, (width,)),
            _tensor_problem(self, "gate", (1,), narrow),
            self._buffer_problem("gated_commit_lens_out", narrow, optional=True),
            self.simulated_correct_len is not None and _tensor_problem(self, "simulated_correct_len", (1,), wide),
            self._buffer_problem("bonus_in", wide, optional=True),
        )
        if problem:
            return problem
        if self.simulated is not None and not 0 <= self.simulated < width:
            return f"simulated_correct_len={self.simulated} is not in [0, gamma = {width - 1}]"
        parts = self.part_val is not None
        if parts != (self.part_idx is not None) or (parts and self.bonus_in is not None):
            return "bonus_parts needs part_val and part_idx, and excludes bonus_in"
        if self.target_predict is None and (self.simulated is None or self.mode == "target"):
            return "target_predict may be missing only with a simulated length and a supplied bonus"
        if not parts:
            return None
        splits = self.part_val.values.shape[-1]
        return _first(self._buffer_problem("part_val", (torch.float32,), (splits,)),
                      _tensor_problem(self, "part_idx", tuple(self.part_val.values.shape), narrow),
                      self.vocab < 1 and "vocab must be >= 1",
                      not _power_of_two(splits) and f"bonus_parts has {splits} splits, not a power of two")


# -- what a reference can run (the checks behind ``problem``) ----------------------------------


def _tensor_problem(case, name, shape, dtypes=_INTEGERS):
    """``name`` must be a tensor of ``shape`` (``None``: any size there) and one of ``dtypes``."""
    arg = getattr(case, name)
    if arg is None:
        return f"{name} is missing"
    got = tuple(arg.values.shape)
    if len(got) != len(shape) or any(want is not None and g != want for g, want in zip(got, shape)):
        return f"{name} has shape {list(got)}, but should be {['*' if w is None else w for w in shape]}"
    if arg.values.dtype not in dtypes:
        return f"{name} is {str(arg.values.dtype).removeprefix('torch.')}, but should be one of " \
               f"{[str(d).removeprefix('torch.') for d in dtypes]}"
    return None


def _power_of_two(n):
    return n >= 1 and n & (n - 1) == 0


def _first(*problems):
    return next((p for p in problems if p), None)


def _ranges_problem(index, width, buffer):
    """Each row's accepted range, ``root + 0..width-1``, inside ``buffer`` slots and apart."""
    roots = sorted(index.values[:, 0].tolist())
    if roots and (roots[0] < 0 or roots[-1] + width > buffer):
        return f"a root's range of {width} slots leaves the {buffer}-slot buffer"
    if any(b - a < width for a, b in zip(roots, roots[1:])):
        return f"two requests' ranges of {width} slots overlap"
    return None


def _chain_problem(case, bs, width, real, exact_width=False):
    """The case's token tensors (``token_fields``): both absent (fixed mode only) or ``(bs, D)``
    token ids, with ``D >= width`` in real mode."""
    names = case.token_fields
    first, second = (getattr(case, n) for n in names)
    if first is None and second is None and not real:
        return None
    problem = _first(_tensor_problem(case, names[0], (bs, None)),
                     _tensor_problem(case, names[1], (bs, None)))
    if problem:
        return problem
    if first.values.shape[1] != second.values.shape[1] or first.values.shape[1] < 1:
        return f"{names[0]} and {names[1]} have different widths"
    if real and exact_width is False and first.values.shape[1] < width:
        return f"{names[0]} has {first.values.shape[1]} columns, fewer than the width {width} real mode needs"
    return None
