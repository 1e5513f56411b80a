"""Cases: the inputs of one call, as plain data that replays on any device.

A case holds each tensor's logical values on the CPU plus the name of the memory layout to
build it with, never a live tensor on some device: that is what lets a case found on CUDA
replay on a CPU (and the reverse), print as a short summary, and travel through JSON.
"""

import dataclasses
import functools
from dataclasses import dataclass

import torch

from simacc.contract.sampling import sample_simulated_acc_len

LAYOUTS = ("contiguous", "transposed", "strided", "offset")
DTYPES = {"int32": torch.int32, "int64": torch.int64, "float32": torch.float32, "bool": torch.bool}
_PAD = -7  # fills the gaps of non-contiguous buffers; a wrong stride reads it


@dataclass(frozen=True, eq=False)
class TensorArg:
    """Logical ``values`` (CPU, contiguous) and the ``layout`` to materialise them with.

    ``transposed`` is a ``.t()`` view of a transposed buffer (2-D only), ``strided`` takes
    every other element of the last dimension, ``offset`` starts one element into its
    storage.
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


def _summary(case):
    parts = []
    for name in _names(type(case)):
        value = getattr(case, name)
        if name == "omitted" and not value:
            continue  # the usual case: every argument passed
        shown = value.summary() if isinstance(value, TensorArg) else repr(value)
        parts.append(f"{name}={shown}")
    return f"{type(case).__name__}({', '.join(parts)})"


class _Case:
    """Shared behaviour: tensor fields, materialisation, the sampled length, summaries."""

    _index_field = "accept_index"  # the (bs, W) index whose first column holds the roots

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
                torch.default_generator.manual_seed(self.seed)
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

    @property
    def max_len(self):
        return self.spec_steps + 1

    @property
    def roots(self):
        return self.accept_index.values[:, 0].tolist()


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
    omitted: tuple = ()  # argument names left out of the call, their values being the defaults

    @property
    def max_len(self):
        return self.out_tokens.values.shape[1]

    @property
    def bs(self):
        return self.out_tokens.values.shape[0]


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

    @property
    def bs(self):
        return self.accept_indices.values.shape[0]

    def expected_length(self):
        return self.num_accept_tokens

    @property
    def mode(self):
        return "real-draft-token" if self.real_tokens else "fixed"


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

    @property
    def max_len(self):
        return self.spec_steps + 1

    @property
    def bs(self):
        return self.accept_index.values.shape[0]
