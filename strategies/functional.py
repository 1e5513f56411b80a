"""The functional contract (:mod:`simacc.contract.functional`, CONTRACT.md §10): its record and
its cases, verify states like the EAGLE cases, plus a ``valid_mask``, the check's fixed token id and a seed for the key.

Shapes come from a short menu (``SHAPES``), not from ranges: an eager JAX op compiles once
for every new shape (tens of milliseconds an op, about a second for a whole call on two
busy cores), so drawn shapes would spend the run compiling, and a jitted port recompiles
per shape too. Everything else is drawn freely: roots (sglang's ``i * D``, or permuted and
spaced into ``SPARE`` extra slots), contents, the mask, the length, method, mode and seed.
Tensors are contiguous int32 (the mask bool): JAX arrays have no strides, DLPack shares
contiguous buffers, and JAX holds tokens as int32 anyway (x64 off).
"""

import functools
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

import simacc as sa
from simacc.contract import functional as reference
from simacc.harness.config.contracts import Contract
from simacc.harness.model.cases import Case, TensorArg, chain_problem, first_problem, ranges_problem, tensor_problem
from simacc.strategies import scalars as sc
from simacc.strategies import tensors as tn


# -- the case type ---------------------------------------------------------------------------------


_TOKEN_MAX = 2**31  # a fixed token id fits in int32 (CONTRACT.md §2.5)


@dataclass(frozen=True, eq=False, repr=False)
class FunctionalCase(Case):
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
        return first_problem(tensor_problem(self, "accept_index", (bs, width), (torch.int32,)),
                             tensor_problem(self, "predict", (None,)),
                             tensor_problem(self, "valid_mask", (bs,), (torch.bool,)),
                             chain_problem(self, bs, width, real, exact_width=True),
                             ranges_problem(self.accept_index, width, self.predict.values.numel()))


# (bs, W, D): one request at width 1, a batch, an empty batch, a tree (D > W: fixed mode only)
SHAPES = ((1, 1, 1), (4, 4, 4), (0, 4, 4), (2, 3, 5))
SPARE = 2  # predict holds bs * D + SPARE elements
_SEEDS, _METHODS, _VOCABS, _BOOLS = sc.seeds(), sc.methods(), sc.vocab_sizes(), st.booleans()  # made once: cheaper draws
_MASKED = st.integers(0, 3).map(lambda v: v == 3)  # a row in four: most rows valid, so rows can disagree


def functional_cases(*, modes=sa.TOKEN_MODES, missing_columns=0, fixed_token_id=100):
    """Cases for the functional contract in the given token ``modes``, whose fixed mode must
    write ``fixed_token_id``.

    ``missing_columns > 0`` gives real-mode cases whose ``candidates`` and
    ``target_predict`` have that many columns fewer than ``W`` (calls the contract
    rejects), from the shapes where some are left. Shrinks toward the empty batch (the
    fewest choices), then one request at width 1, every row valid, sglang roots, fixed
    mode, a length of 1 and seed 0.
    """
    if missing_columns < 0:
        raise ValueError(f"{missing_columns=} must be >= 0")
    if missing_columns:
        modes = ("real-draft-token",)
    chains = tuple(s for s in SHAPES if s[1] == s[2] and s[1] > missing_columns)
    return _functional_cases(sc.token_modes(modes), st.sampled_from(SHAPES), st.sampled_from(chains), missing_columns,
                             fixed_token_id)


@functools.lru_cache(maxsize=None)
def _orders(bs):
    return st.permutations(range(bs))


@functools.lru_cache(maxsize=None)
def _gaps(spare):
    return st.integers(0, spare)


@st.composite
def _roots(draw, bs, d):
    """Roots of ``bs`` blocks of ``d`` slots in ``bs * d + SPARE``: a drawn order, and the
    spare slots spread before blocks. Shrinks toward ``i * d``, the spare at the end."""
    order = draw(_orders(bs), label="roots.order")
    starts, at, spare = [0] * bs, 0, SPARE
    for block in order:
        gap = draw(_gaps(spare), label="roots.gap")
        spare -= gap
        starts[block] = at + gap
        at += gap + d
    return starts


@st.composite
def _functional_cases(draw, modes, shapes, chains, missing_columns, fixed_token_id):
    mode = draw(modes, label="mode")
    real = mode == "real-draft-token"
    bs, width, d = draw(chains if real else shapes, label="shape")
    size = bs * d + SPARE
    seed = draw(_SEEDS, label="contents.seed")
    index = tn.fill((bs, width), torch.int32, -1, size + 1, seed)
    if bs:
        index[:, 0] = torch.tensor(draw(_roots(bs, d)), dtype=torch.int32)
    masked = [draw(_MASKED, label=f"masked[{i}]") for i in range(bs)]
    candidates = target = None
    if real or draw(_BOOLS, label="passes_candidates"):
        vocab = draw(_VOCABS, label="vocab")
        columns = d - missing_columns
        candidates = TensorArg(tn.fill((bs, columns), torch.int32, 0, vocab, seed + 1))
        target = TensorArg(tn.fill((bs, columns), torch.int32, 0, vocab, seed + 2))
    return FunctionalCase(
        accept_index=TensorArg(index),
        predict=TensorArg(tn.fill((size,), torch.int32, *tn.INT32, seed + 3)),
        candidates=candidates,
        target_predict=target,
        valid_mask=TensorArg(~torch.tensor(masked, dtype=torch.bool)),
        spec_steps=width - 1,
        simulate_acc_len=draw(sc.acc_lens(width), label="simulate_acc_len"),
        simulate_acc_method=draw(_METHODS, label="method"),
        simulate_acc_token_mode=mode,
        fixed_token_id=fixed_token_id,
        seed=draw(_SEEDS, label="seed"),
    )


FUNCTIONAL = Contract(
    "functional",
    ("accept_index", "predict", "candidates", "target_predict", "valid_mask", "spec_steps", "simulate_acc_len",
     "simulate_acc_method", "simulate_acc_token_mode", "fixed_token_id", "rng"),
    reference.simulated_acceptance, FunctionalCase, functional_cases, "token mode", sa.TOKEN_MODES,
    takes=("fixed_token_id",),
    keyword_style="jax", level="semantic", draws=("inputs",),
)
