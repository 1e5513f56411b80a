"""Cases: the inputs of one call, as plain data that replays on any device.

A case holds each tensor's logical values on the CPU plus the name of the memory layout to
build it with, never a live tensor on some device: that is what lets a case found on CUDA
replay on a CPU (and the reverse), print as a short summary, and travel through JSON.
Each case type also says what simacc would otherwise branch on its type for: what a
reference can run, how its ``L`` and sizes are said, what its token tensors are called. The
case types themselves live with their contracts' records, one module per family of
``simacc.strategies``; here is what they share (:class:`Case`, :class:`TensorArg`, the
checks behind ``problem``).
"""

import dataclasses
import functools
from dataclasses import dataclass

import torch

from simacc.contract.sampling import sample_simulated_acc_len

LAYOUTS = ("contiguous", "transposed", "strided", "offset", "padded")
DTYPES = {"int32": torch.int32, "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float32": torch.float32, "float64": torch.float64, "bool": torch.bool}
_PAD = -7  # fills the gaps of non-contiguous buffers; a wrong stride reads it
PADDED_COLUMNS = 3  # a padded layout's extra columns: odd, so that no row of the buffer starts at a multiple of the view's
INTEGERS = (torch.int32, torch.int64)
VLLM_FLOATS = (torch.float32, torch.float64)
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


class Case:
    """Shared behaviour: tensor fields, materialisation, the sampled length, summaries, and
    what the rest of simacc asks of every case type, so that it never branches on one: a
    type defines ``_arguments_problem`` (what its reference cannot run, in one line, or None)
    and, where its layout differs, overrides the attributes and methods below."""

    _index_field = "accept_index"  # the (bs, W) index whose first column holds the roots
    token_fields = ("candidates", "target_predict")  # the drafts' and the target's tokens, as the call names them
    width_name = "W"  # what a result row calls ``max_len``
    length_given = False  # the call is given L (the kernel op): the L to hold it to, at every level
    # the argument sets a case may leave out: those some call style of its contracts can (CONTRACT.md §5.1;
    # the records' omissions, which tests/contract/test_strategies.py holds them to)
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
        return f"{self.width_name}={self.max_len}, bs={self.bs}, mode {self.token_mode}"

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
    def token_mode(self):
        """The token mode the case asks for (sglang's layouts)."""
        return self.simulate_acc_token_mode

    @property
    def variant(self):
        """Its value on its contract's axis of variants (``Contract.variant`` names the axis:
        here the token mode; vLLM's and DSpark's types name theirs)."""
        return self.token_mode

    def summary(self):
        return _summary(self)

    def __repr__(self):
        return self.summary()

    def _repr_pretty_(self, printer, cycle):  # how Hypothesis prints a falsifying example
        printer.text(self.summary())


# -- what a reference can run (the checks behind ``problem``, for every case type) -------------


def tensor_problem(case, name, shape, dtypes=INTEGERS):
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



def first_problem(*problems):
    return next((p for p in problems if p), None)


def ranges_problem(index, width, buffer):
    """Each row's accepted range, ``root + 0..width-1``, inside ``buffer`` slots and apart."""
    roots = sorted(index.values[:, 0].tolist())
    if roots and (roots[0] < 0 or roots[-1] + width > buffer):
        return f"a root's range of {width} slots leaves the {buffer}-slot buffer"
    if any(b - a < width for a, b in zip(roots, roots[1:])):
        return f"two requests' ranges of {width} slots overlap"
    return None


def chain_problem(case, bs, width, real, exact_width=False):
    """The case's token tensors (``token_fields``): both absent (fixed mode only) or ``(bs, D)``
    token ids, with ``D >= width`` in real mode."""
    names = case.token_fields
    first, second = (getattr(case, n) for n in names)
    if first is None and second is None and not real:
        return None
    problem = first_problem(tensor_problem(case, names[0], (bs, None)),
                            tensor_problem(case, names[1], (bs, None)))
    if problem:
        return problem
    if first.values.shape[1] != second.values.shape[1] or first.values.shape[1] < 1:
        return f"{names[0]} and {names[1]} have different widths"
    if real and exact_width is False and first.values.shape[1] < width:
        return f"{names[0]} has {first.values.shape[1]} columns, fewer than the width {width} real mode needs"
    return None
