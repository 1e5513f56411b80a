"""The EAGLE family (CONTRACT.md §1-§8): sglang's EAGLE function, its legacy layouts, DFLASH's
acceptance and the kernel op, with their records and the strategies that draw their cases:
coherent verify states.

Cases stay inside the contract (CONTRACT.md §4.7): accepted ranges are disjoint and inside
``predict``, and real-mode chains have ``D == W``. Roots follow sglang's ``i * D`` layout
or another valid one, so an implementation that assumes the layout is caught.

Generation speed: Hypothesis's bookkeeping for each draw costs more than building the
tensors, so a case makes few draws, and every strategy a composite draws from is built
once, outside it. The case's ``seed`` also seeds every tensor's contents (``_Contents``),
and one draw names the layouts of all its tensors (``tensors.layout_codes``).
"""

import dataclasses
import functools
import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

import simacc as sa
from simacc.contract import reference
from simacc.contract.sampling import METHODS, sample_simulated_acc_len
from simacc.harness.config.contracts import Contract
from simacc.harness.model.cases import (
    Case,
    TensorArg,
    chain_problem,
    first_problem,
    ranges_problem,
    seeded,
    tensor_problem,
)
from simacc.strategies import scalars as sc
from simacc.strategies import tensors as tn


# -- the case types (EAGLE's, DFLASH's and the kernel op's) ----------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class EagleCase(Case):
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
        return first_problem(tensor_problem(self, "accept_index", (self.bs, width), (torch.int32,)),
                             tensor_problem(self, "predict", (None,)),
                             tensor_problem(self, "num_correct_drafts", (self.bs,)),
                             chain_problem(self, self.bs, width, real),
                             ranges_problem(self.accept_index, width, self.predict.values.numel()))


@dataclass(frozen=True, eq=False, repr=False)
class DflashCase(Case):
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
        return first_problem(tensor_problem(self, "candidates", (bs, block)),
                             self.target_predict is not None and tensor_problem(self, "target_predict", (bs, block)),
                             tensor_problem(self, "accept_len", (bs,)),
                             tensor_problem(self, "commit_lens", (bs,)),
                             tensor_problem(self, "bonus", (bs,)),
                             logits is not None
                             and tensor_problem(self, "next_token_logits", (bs * block, None), (torch.float32,)))


@dataclass(frozen=True, eq=False, repr=False)
class KernelCase(Case):
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
    def token_mode(self):
        return "real-draft-token" if self.real_tokens else "fixed"

    def _arguments_problem(self):
        bs, width = self.accept_indices.values.shape[0], self.width
        if not 1 <= self.num_accept_tokens <= width:
            return f"num_accept_tokens={self.num_accept_tokens} is not in [1, width={width}]"
        return first_problem(tensor_problem(self, "accept_indices", (bs, width), (torch.int32,)),
                             tensor_problem(self, "predict_tokens", (None,)),
                             tensor_problem(self, "num_correct_drafts", (bs,)),
                             chain_problem(self, bs, width, self.real_tokens),
                             ranges_problem(self.accept_indices, width, self.predict_tokens.values.numel()))


ROOT_LAYOUTS = ("sglang", "permuted", "spaced")

_ROOT_LAYOUTS = st.sampled_from(ROOT_LAYOUTS)
_ROOT_GAPS = st.integers(1, 5)
_ROOT_STARTS = st.integers(0, 5)
_TREE_EXTRA_NODES = st.integers(0, 8)
# and, for a small block, 2049 columns: past a block of 1024, and a maximum (2049) that bfloat16
# rounds onto the scores below it (2041 to 2048 become 2048)
_LOGIT_CLASSES = st.integers(1, 64) | st.sampled_from((2049,))
_LOGIT_CELLS = 2**20  # a case's logits at most (a server batch with 2049 columns would take 500 MB)
_BOOLEANS = st.booleans()
# DFLASH's fixed id as a call passes it (sglang's never does: None, first, so a case shrinks to
# that), a token id otherwise; an implementation that keeps its own default is caught
_PASSED_FIXED_IDS = st.none() | st.integers(0, 2**31 - 1)
# integers(0, 0), not just(): a branch without a draw of its own would shrink first
_NAN = st.integers(0, 0).map(lambda _: math.nan)
# a length still to be put at the edge of the case's own draw (_at_the_draws_edge)
_AT_THE_EDGE = "the edge of the draw"


class _Contents:
    """The tensors of one case, all from the case's seed (one draw, not one per tensor):
    field ``k`` of the case type gets ``seed + 1 + k``, ``seed`` itself being the length
    draw's. Fixed offsets, so a tensor keeps its values when another field comes or goes
    while shrinking."""

    def __init__(self, case_type, seed):
        self.seed, self.offsets = seed, _offsets(case_type)

    def ints(self, field, shape, dtype, low, high):
        return tn.fill(shape, dtype, low, high, self.seed + self.offsets[field])

    def index(self, field, width, roots, predict_len):
        """A ``(bs, width)`` int32 index: the ``roots`` in column 0, arbitrary slots (or -1)
        of the ``predict_len`` buffer after them."""
        index = self.ints(field, (len(roots), width), torch.int32, -1, predict_len + 1)
        if roots:
            index[:, 0] = torch.tensor(roots, dtype=torch.int32)
        return index

    def generator(self, field):
        return torch.Generator().manual_seed(self.seed + self.offsets[field])


@functools.lru_cache(maxsize=None)
def _offsets(case_type):
    """Each field's offset from the seed, for any case type (computed once a type)."""
    return {f.name: 1 + k for k, f in enumerate(dataclasses.fields(case_type))}


def _draw_layouts(draw, values):
    """Each tensor of ``values`` as a :class:`TensorArg`, the layouts from one draw."""
    code = draw(tn.layout_codes(len(values)), label="layouts")
    layouts = tn.decode_layouts(code, [v.dim() for v in values.values()])
    return {name: TensorArg(v, layout) for (name, v), layout in zip(values.items(), layouts)}


def _check_root_layout(layout):
    if layout is not None and layout not in ROOT_LAYOUTS:
        raise ValueError(f"{layout=} must be None or one of {ROOT_LAYOUTS}")


def roots(bs, draft_token_num, *, layout=None):
    """``(roots, predict_len)``: one root per request, each with ``draft_token_num``
    slots of its own in a flat buffer of ``predict_len``.

    ``sglang`` puts request ``i`` at ``i * D``; ``permuted`` shuffles the blocks under a
    drawn seed (seed 0 keeps sglang's order); ``spaced`` leaves gaps and an offset;
    ``layout=None`` draws one. Shrinks toward ``sglang``.
    """
    if bs < 0 or draft_token_num < 1:
        raise ValueError(f"{bs=} must be >= 0 and {draft_token_num=} >= 1")
    _check_root_layout(layout)
    return _roots(bs, draft_token_num, layout)


@st.composite
def _roots(draw, bs, draft_token_num, layout):
    return _draw_roots(draw, bs, draft_token_num, layout)


def _draw_roots(draw, bs, d, layout):
    """``roots``' draws, made with the caller's ``draw``: no nested composite per case."""
    layout = layout or draw(_ROOT_LAYOUTS, label="roots.layout")
    if layout == "sglang":
        return [i * d for i in range(bs)], bs * d
    if layout == "permuted":
        seed = draw(sc.seeds(), label="roots.order") if bs > 1 else 0
        order = torch.randperm(bs, generator=torch.Generator().manual_seed(seed)).tolist() if seed else range(bs)
        return [j * d for j in order], bs * d
    gap = draw(_ROOT_GAPS, label="roots.gap")
    start = draw(_ROOT_STARTS, label="roots.start")
    return [start + i * (d + gap) for i in range(bs)], start + bs * (d + gap)


def eagle_cases(
    *,
    modes=sa.TOKEN_MODES,
    min_bs=0,
    max_bs=sc.MAX_BS,
    max_spec_steps=sc.LONG_SPEC_STEPS[-1],
    acc_lens=None,
    methods=None,
    root_layout=None,
):
    """Cases for ``generate_simulated_accept_index`` in the given token ``modes``.

    Fixed mode may carry trees (``D > W``) or no candidates at all (``None``); real mode is
    a chain (``D == W``); ``spec_steps`` up to 16, and now and then 17, 32 or 63
    (:func:`~simacc.strategies.scalars.spec_steps`). ``acc_lens``/``methods`` replace the
    default length and method strategies; ``root_layout`` fixes one of ``ROOT_LAYOUTS``. The case's ``seed`` also
    seeds every tensor's contents. Shrinks toward bs=1, spec_steps=0, a length of 1, small
    token ids, sglang roots and contiguous tensors.
    """
    _check_root_layout(root_layout)
    return _eagle_cases(
        sc.token_modes(modes),
        sc.batch_sizes(min_bs, max_bs),
        sc.spec_steps(0, max_spec_steps),
        acc_lens,
        sc.methods() if methods is None else methods,
        root_layout,
    )


@st.composite
def _eagle_cases(draw, modes, batch_sizes, spec_steps, acc_lens, methods, root_layout):
    mode = draw(modes, label="mode")
    bs = draw(batch_sizes, label="bs")
    steps = draw(spec_steps, label="spec_steps")
    width = steps + 1
    real = mode == "real-draft-token"
    d = width if real else width + draw(_TREE_EXTRA_NODES, label="tree_extra_nodes")
    root_list, predict_len = _draw_roots(draw, bs, d, root_layout)
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(EagleCase, seed)

    values = {
        "predict": _with_padding(contents.ints("predict", (predict_len,), torch.int32, *tn.INT32)),
        "num_correct_drafts": contents.ints("num_correct_drafts", (bs,), torch.int32, *tn.INT32),
        "accept_index": contents.index("accept_index", width, root_list, predict_len),
    }
    if real or draw(_BOOLEANS, label="passes_candidates"):
        vocab = draw(sc.vocab_sizes(), label="vocab")
        dtype = draw(tn.token_dtypes(), label="candidates.dtype")
        values["candidates"] = contents.ints("candidates", (bs, d), dtype, 0, vocab)
        values["target_predict"] = contents.ints("target_predict", (bs, d), torch.int64, 0, vocab)

    tensors = _draw_layouts(draw, values)
    length = draw(_lengths_of(width) if acc_lens is None else acc_lens, label="simulate_acc_len")
    method = draw(methods, label="method")
    return EagleCase(
        **{"candidates": None, "target_predict": None, **tensors},
        bs=bs,
        spec_steps=steps,
        simulate_acc_len=_at_the_draws_edge(seed, method, width) if length == _AT_THE_EDGE else length,
        simulate_acc_method=method,
        simulate_acc_token_mode=mode,
        seed=seed,
    )


def _with_padding(values):
    """``values`` with a quarter of its slots -1, as a server's buffers hold where nothing was
    written: a port that takes -1 for "leave it" is caught."""
    values[values % 4 == 0] = -1
    return values


def _lengths_of(width, positive=True):
    """The default lengths (:func:`~simacc.strategies.scalars.acc_lens`), and as often as each
    of their kinds a length at the edge of the case's own draw (:func:`_at_the_draws_edge`)."""
    return sc.acc_lens(width, positive=positive, edge=_AT_THE_EDGE)


EDGE = 2.0**-33  # how close to the edge of the draw a length there is


def _at_the_draws_edge(seed, method, width):
    """A length within :data:`EDGE` of where the documented draw under ``seed`` (CONTRACT.md §3)
    turns from ``k`` to ``k + 1``, on either side: ``k`` and the side from ``seed``. Any rounding
    of the draw the contract does not name (a weight rounded, a Gaussian in half precision, a
    length read in float32) gives the other length about half the time. Found by bisection on
    the reference's own sampler (about 15 draws from :func:`_near_the_edge`, 35 without), with
    torch's generator left as it was."""
    if width < 2 or method not in METHODS:
        return 1.5  # one length only, or a method the sampler refuses: any length will do
    k = 1 + (seed >> 1) % (width - 1)
    low, high = (float(k), math.nextafter(k + 1.0, 0)) if method == "match-expected" else (2.0**-20, width + 8.0)
    with torch.random.fork_rng(devices=[]):

        def drawn(x):
            seeded(torch.default_generator, seed)
            return sample_simulated_acc_len(x, method, width)

        near = _near_the_edge(seed, method, k)
        if low < near - 2.0**-20 and near + 2.0**-20 < high and drawn(near - 2.0**-20) <= k < drawn(near + 2.0**-20):
            low, high = near - 2.0**-20, near + 2.0**-20
        elif not drawn(low) <= k < drawn(high):
            return k + 0.5  # no edge for this seed (a Gaussian draw far from every length)
        while high - low > EDGE:
            middle = (low + high) / 2
            if drawn(middle) <= k:
                low = middle
            else:
                high = middle
    return high if seed & 1 else low


def chain_cases(*, max_bs=64, max_spec_steps=sc.MAX_SPEC_STEPS):
    """Real-mode chains whose target agrees with exactly the first ``k`` drafts of every
    row, roots at ``i * D``, ``accept_index`` -1 beyond the root, and the integer length
    ``k + 1`` (which samples exactly itself): the setting in which real-mode simulation
    must equal greedy verification (CONTRACT.md §1.3). ``k`` is ``simulate_acc_len - 1``; the case's
    ``seed`` also seeds the tensors' contents. Shrinks toward bs=1, spec_steps=0, k=0.
    """
    return _chain_cases(sc.batch_sizes(1, max_bs), sc.spec_steps(0, max_spec_steps))


@functools.lru_cache(maxsize=None)
def _agreeing_drafts(steps):
    return st.integers(0, steps)


@st.composite
def _chain_cases(draw, batch_sizes, spec_steps):
    bs = draw(batch_sizes, label="bs")
    steps = draw(spec_steps, label="spec_steps")
    width = steps + 1
    k = draw(_agreeing_drafts(steps), label="k")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    dtype = draw(tn.token_dtypes(), label="candidates.dtype")
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(EagleCase, seed)
    cand = contents.ints("candidates", (bs, width), dtype, 0, vocab)
    target = contents.ints("target_predict", (bs, width), torch.int64, 0, vocab)
    target[:, :k] = cand[:, 1 : k + 1].long()
    if k < steps:  # the first disagreement
        target[:, k] = (cand[:, k + 1].long() + 1) % vocab
    index = torch.full((bs, width), -1, dtype=torch.int32)
    index[:, 0] = torch.arange(bs, dtype=torch.int32) * width
    values = {
        "predict": contents.ints("predict", (bs * width,), torch.int32, *tn.INT32),
        "num_correct_drafts": contents.ints("num_correct_drafts", (bs,), torch.int32, *tn.INT32),
        "candidates": cand,
        "target_predict": target,
    }
    return EagleCase(
        accept_index=TensorArg(index),
        **_draw_layouts(draw, values),
        bs=bs,
        spec_steps=steps,
        simulate_acc_len=float(k + 1),  # an integer length samples exactly itself
        simulate_acc_method="match-expected",
        simulate_acc_token_mode="real-draft-token",
        seed=seed,
    )


def dflash_cases(*, modes=sa.TOKEN_MODES, min_bs=0, max_bs=sc.MAX_BS, max_block=16, methods=None):
    """Cases for ``apply_dflash_simulated_acceptance``: ``(bs, B)`` blocks, ``B`` in
    ``[1, max_block]``.

    ``target_predict`` is sometimes missing: ``None`` in fixed mode, float32 logits with a
    unique maximum per row in real mode (so the argmax is the same on every device), half a
    point above integer scores (so logits truncated to integers tie with it); real mode
    sometimes gets both, and must then read ``target_predict``. Lengths
    include zero and negatives (no ``> 0`` check in this contract), and NaN with
    ``match-expected``. About half pass a ``fixed_token_id`` (the others leave the default to
    apply, as sglang's caller does). ``methods`` replaces the method strategy. The case's ``seed``
    also seeds every tensor's contents. Shrinks toward bs=1, B=1, fixed mode, no id passed.
    """
    if max_block < 1:
        raise ValueError(f"{max_block=} must be >= 1")
    return _dflash_cases(
        sc.token_modes(modes),
        sc.batch_sizes(min_bs, max_bs),
        st.integers(1, max_block),
        sc.methods() if methods is None else methods,
    )


@st.composite
def _dflash_cases(draw, modes, batch_sizes, blocks, methods):
    mode = draw(modes, label="mode")
    bs = draw(batch_sizes, label="bs")
    block = draw(blocks, label="B")
    method = draw(methods, label="method")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    dtype = draw(tn.token_dtypes(), label="candidates.dtype")
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(DflashCase, seed)
    values = {
        "candidates": contents.ints("candidates", (bs, block), dtype, 0, vocab),
        "accept_len": contents.ints("accept_len", (bs,), torch.int32, *tn.INT32),
        "commit_lens": contents.ints("commit_lens", (bs,), torch.int32, *tn.INT32),
        "bonus": contents.ints("bonus", (bs,), torch.int64, *tn.WIDE),
        "out_tokens": contents.ints("out_tokens", (bs, block), torch.int64, *tn.WIDE),
    }
    target = draw(_BOOLEANS, label="passes_target")
    if target:
        values["target_predict"] = contents.ints("target_predict", (bs, block), torch.int64, 0, vocab)
    # real mode reads the logits only without target_predict (§7.2), but may be given both
    if mode == "real-draft-token" and (not target or draw(_BOOLEANS, label="passes_logits_too")):
        classes = draw(_LOGIT_CLASSES, label="logit_classes")
        classes = min(classes, max(64, _LOGIT_CELLS // max(bs * block, 1)))
        # a maximum half a point clear: read through an integer workspace, it ties with the scores below
        values["next_token_logits"] = _logits(contents.generator("next_token_logits"), bs * block, classes, lead=0.5)
    tensors = _draw_layouts(draw, values)
    length = _dflash_length(draw, block, method, seed)
    return DflashCase(
        **{"target_predict": None, "next_token_logits": None, **tensors},
        simulate_acc_len=length,
        simulate_acc_method=method,
        simulate_acc_token_mode=mode,
        seed=seed,
        fixed_token_id=draw(_PASSED_FIXED_IDS, label="fixed_token_id"),
    )


def _logits(gen, rows, classes, lead=1.0):
    """Integer-valued float32 scores below ``classes``, but for one per row, ``lead`` above the
    largest of them: a unique maximum (a scatter: sorting random rows took milliseconds for
    large blocks)."""
    scores = torch.randint(0, classes, (rows, classes), generator=gen, dtype=torch.float32)
    winners = torch.randint(0, classes, (rows, 1), generator=gen)
    return scores.scatter_(1, winners, classes - 1 + lead)


def _dflash_length(draw, block, method, seed):
    """A DFLASH length: zero and negatives too, NaN with ``match-expected``, and the edge of
    the case's own draw."""
    length = draw(_dflash_lengths(block, method == "match-expected"), label="simulate_acc_len")
    return _at_the_draws_edge(seed, method, block) if length == _AT_THE_EDGE else length


@functools.lru_cache(maxsize=None)
def _dflash_lengths(block, nan):
    lengths = _lengths_of(block, positive=False)
    return lengths | _NAN if nan else lengths


def _near_the_edge(seed, method, k):
    """Where the draw under ``seed`` turns from ``k`` to ``k + 1`` as torch draws it today (within
    about 1e-7): ``multinomial`` without replacement takes the larger of each weight over an
    exponential, and ``normal`` adds a standard normal. Only a start: the bisection checks it
    against the sampler itself and starts from afar when it is off."""
    gen = seeded(torch.Generator(), seed)
    if method == "match-expected":
        first, second = torch.empty(2).exponential_(generator=gen).tolist()
        return k + second / (first + second)
    return k + 0.5 - torch.empty(1).normal_(generator=gen).item()


def kernel_cases(*, modes=sa.TOKEN_MODES, min_bs=0, max_bs=sc.MAX_BS, max_width=sc.LONG_SPEC_STEPS[-1] + 1):
    """Cases for the kernel op (CONTRACT.md §8) in the given token ``modes``
    (``real_tokens`` is True for ``real-draft-token``), ``width`` in ``[1, max_width]``.

    The length is an input, drawn directly, so every ``L`` in ``1..width`` is as cheap to
    reach as any other. Real mode is a chain (``D == width``); fixed mode may have more
    nodes per request and still passes token tensors, whose contents the op must not need.
    Shrinks toward bs=1, width=1, L=1, fixed mode, sglang roots and contiguous tensors.
    """
    if max_width < 1:
        raise ValueError(f"{max_width=} must be >= 1")
    return _kernel_cases(sc.token_modes(modes), sc.batch_sizes(min_bs, max_bs), sc.spec_steps(0, max_width - 1))


@functools.lru_cache(maxsize=None)
def _lengths(width):
    return st.integers(1, width)


@st.composite
def _kernel_cases(draw, modes, batch_sizes, spec_steps):
    real = draw(modes, label="mode") == "real-draft-token"
    bs = draw(batch_sizes, label="bs")
    width = draw(spec_steps, label="spec_steps") + 1
    length = draw(_lengths(width), label="num_accept_tokens")
    d = width if real else width + draw(_TREE_EXTRA_NODES, label="tree_extra_nodes")
    root_list, predict_len = _draw_roots(draw, bs, d, None)
    vocab = draw(sc.vocab_sizes(), label="vocab")
    dtype = draw(tn.token_dtypes(), label="candidate_tokens.dtype")
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(KernelCase, seed)

    values = {
        "accept_indices": contents.index("accept_indices", width, root_list, predict_len),
        "predict_tokens": contents.ints("predict_tokens", (predict_len,), torch.int32, *tn.INT32),
        "num_correct_drafts": contents.ints("num_correct_drafts", (bs,), torch.int32, *tn.INT32),
        "candidate_tokens": contents.ints("candidate_tokens", (bs, d), dtype, 0, vocab),
        "target_tokens": contents.ints("target_tokens", (bs, d), torch.int64, 0, vocab),
    }
    return KernelCase(**_draw_layouts(draw, values), width=width, num_accept_tokens=length, real_tokens=real,
                      seed=seed)


# A server's batch (CONTRACT.md §11.3), built whole rather than drawn: the drawn cases reach a
# server's size rarely (``scalars.SERVER_SHARE``), so a bug that needs one could pass a short run.
# blocks of 256 to 16,384 rows (the largest batch the contract covers, §11.3), then a tail of seven: a grid that
# drops its tail, or launches it at a power of two (4) with no mask, leaves rows unwritten, and a builder that works
# in chunks of 8192 rows meets a second chunk; a tail of one row is among the drawn sizes (scalars.SERVER_SIZES)
SERVER_BS = 16384 + 7
DFLASH_SERVER_BS = 4096 + 7  # requests of 16-token blocks: 65,648 rows, past 2**16 already
_SERVER_WIDTH = sc.MAX_SPEC_STEPS + 1
_SERVER_GAP = 16  # slots between chains, free: three roots in four pass 2**15
_SERVER_VOCAB = 151_936


def server_batches(*, modes=sa.TOKEN_MODES):
    """A server's batch for ``generate_simulated_accept_index`` in each of ``modes``: 16,391
    requests (whole blocks of 256 to 16,384 rows and a tail of seven) of 17-slot chains with 16
    free slots after each, in a shuffled order, so that roots pass 2**15 and follow no formula; a length
    of 9.5 by match-expected (L is 9 or 10); contiguous tensors; seed 0. Each is built once a
    process, at its first draw (not when a property module declares the strategy)."""
    return st.deferred(lambda: st.sampled_from([_server_eagle_case(mode) for mode in modes]))


def kernel_server_batches(*, modes=sa.TOKEN_MODES):
    """:func:`server_batches` for the kernel op: the same roots and width, ``L`` = 9."""
    return st.deferred(lambda: st.sampled_from([_server_kernel_case(mode) for mode in modes]))


def dflash_server_batches(*, modes=sa.TOKEN_MODES):
    """:func:`server_batches` for the DFLASH layout: 4103 requests (:data:`DFLASH_SERVER_BS`) of 16-token blocks, with
    ``target_predict`` in real mode, and in real mode once more with the logits alone: their
    argmax over 65,648 rows, past a CUDA grid's 65,535."""
    return st.deferred(lambda: st.sampled_from([_server_dflash_case(mode, logits) for mode in modes
                                                for logits in ((False, True) if mode == "real-draft-token" else (False,))]))


def _server_roots():
    """The requests' blocks in a shuffled order (seed 0): no root is ``i`` times anything."""
    step = _SERVER_WIDTH + _SERVER_GAP
    order = torch.randperm(SERVER_BS, generator=torch.Generator().manual_seed(0)).tolist()
    return [j * step for j in order], SERVER_BS * step


@functools.lru_cache(maxsize=None)
def _server_eagle_case(mode):
    contents = _Contents(EagleCase, 0)
    root_list, predict_len = _server_roots()
    real = mode == "real-draft-token"
    shape = (SERVER_BS, _SERVER_WIDTH)
    tokens = {name: TensorArg(contents.ints(name, shape, torch.int64, 0, _SERVER_VOCAB)) if real else None
              for name in ("candidates", "target_predict")}
    return EagleCase(
        accept_index=TensorArg(contents.index("accept_index", _SERVER_WIDTH, root_list, predict_len)),
        predict=TensorArg(contents.ints("predict", (predict_len,), torch.int32, *tn.INT32)),
        num_correct_drafts=TensorArg(contents.ints("num_correct_drafts", (SERVER_BS,), torch.int32, *tn.INT32)),
        **tokens,
        bs=SERVER_BS,
        spec_steps=_SERVER_WIDTH - 1,
        simulate_acc_len=9.5,
        simulate_acc_method="match-expected",
        simulate_acc_token_mode=mode,
        seed=0,
    )


@functools.lru_cache(maxsize=None)
def _server_kernel_case(mode):
    contents = _Contents(KernelCase, 0)
    root_list, predict_len = _server_roots()
    return KernelCase(
        accept_indices=TensorArg(contents.index("accept_indices", _SERVER_WIDTH, root_list, predict_len)),
        predict_tokens=TensorArg(contents.ints("predict_tokens", (predict_len,), torch.int32, *tn.INT32)),
        num_correct_drafts=TensorArg(contents.ints("num_correct_drafts", (SERVER_BS,), torch.int32, *tn.INT32)),
        candidate_tokens=TensorArg(contents.ints("candidate_tokens", (SERVER_BS, _SERVER_WIDTH), torch.int64, 0,
                                                 _SERVER_VOCAB)),
        target_tokens=TensorArg(contents.ints("target_tokens", (SERVER_BS, _SERVER_WIDTH), torch.int64, 0,
                                              _SERVER_VOCAB)),
        width=_SERVER_WIDTH,
        num_accept_tokens=9,
        real_tokens=mode == "real-draft-token",
        seed=0,
    )


@functools.lru_cache(maxsize=None)
def _server_dflash_case(mode, logits=False):
    contents = _Contents(DflashCase, 0)
    shape = (DFLASH_SERVER_BS, _SERVER_WIDTH - 1)
    target = contents.ints("target_predict", shape, torch.int64, 0, _SERVER_VOCAB)
    rows = shape[0] * shape[1]
    classes = _LOGIT_CELLS // rows  # 15: a case's logits take at most _LOGIT_CELLS
    return DflashCase(
        candidates=TensorArg(contents.ints("candidates", shape, torch.int64, 0, _SERVER_VOCAB)),
        target_predict=TensorArg(target) if mode == "real-draft-token" and not logits else None,
        accept_len=TensorArg(contents.ints("accept_len", (DFLASH_SERVER_BS,), torch.int32, *tn.INT32)),
        commit_lens=TensorArg(contents.ints("commit_lens", (DFLASH_SERVER_BS,), torch.int32, *tn.INT32)),
        bonus=TensorArg(contents.ints("bonus", (DFLASH_SERVER_BS,), torch.int64, *tn.WIDE)),
        out_tokens=TensorArg(contents.ints("out_tokens", shape, torch.int64, *tn.WIDE)),
        simulate_acc_len=9.5,
        simulate_acc_method="match-expected",
        simulate_acc_token_mode=mode,
        next_token_logits=TensorArg(_logits(contents.generator("next_token_logits"), rows, classes, lead=0.5))
        if logits else None,
        seed=0,
    )


# -- the records ----------------------------------------------------------------------------------

METHOD, MODE = "simulate_acc_method", "simulate_acc_token_mode"
EAGLE_PARAMS = ("accept_index", "predict", "num_correct_drafts", "candidates", "target_predict", "bs", "spec_steps",
                "simulate_acc_len", METHOD, MODE)
LEGACY_ORDER = ("accept_index", "predict", "num_correct_drafts", "bs", "spec_steps", "simulate_acc_len", METHOD)
OLDEST_ORDER = ("accept_index", "predict", "num_correct_drafts", "simulate_acc_len", "bs", "spec_steps")
# what the third parameter of the legacy function was called over the releases (CONTRACT.md §6)
LEGACY_THIRD = ("accept_length", "num_accepted_drafts", "num_correct_drafts")

EAGLE = Contract(
    "eagle", EAGLE_PARAMS, reference.generate_simulated_accept_index, EagleCase, eagle_cases, "token mode",
    sa.TOKEN_MODES, takes=("modes",), orders={"positional": EAGLE_PARAMS},
    omissions={"keywords": ((METHOD,), (MODE,), (METHOD, MODE)), "positional": ((MODE,), (METHOD, MODE))},
)
LEGACY = Contract(
    "legacy", LEGACY_ORDER, reference.legacy_generate_simulated_accept_index, EagleCase, eagle_cases, "token mode",
    ("fixed",), takes=("modes",), keyword_style=None, orders={"legacy": LEGACY_ORDER, "oldest": OLDEST_ORDER},
    aliases={"num_correct_drafts": LEGACY_THIRD}, omissions={"legacy": ((METHOD,),)},
)
# the layouts of sglang's EAGLE function over its releases, one case type: every claim about the function names them
EAGLE_LAYOUTS = (EAGLE, LEGACY)
DFLASH = Contract(
    "dflash",
    ("candidates", "target_predict", "accept_len", "commit_lens", "bonus", "out_tokens", "simulate_acc_len", METHOD,
     MODE),
    reference.apply_dflash_simulated_acceptance, DflashCase, dflash_cases, "token mode", sa.TOKEN_MODES,
    omissions={"keywords": (("next_token_logits",),)},
)
KERNEL = Contract(
    "kernel",
    ("accept_indices", "predict_tokens", "num_correct_drafts", "candidate_tokens", "target_tokens", "width",
     "num_accept_tokens", "real_tokens"),
    reference.simulated_accept, KernelCase, kernel_cases, "token mode", sa.TOKEN_MODES, draws=(),
)
