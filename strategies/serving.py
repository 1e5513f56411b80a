"""Strategies for serving loops (CONTRACT.md §11.2): the configuration of one engine, drawn
once per program like a server's environment, and the arguments of its steps.

An engine's configuration is a dict of JSON scalars (what a repro file records as the
program's knobs): the token mode, the method and length it samples with, the widths, the
``capacity`` (its largest batch, the number of request slots), whether its inputs are
``graphs``-style static buffers of that capacity, sliced and rewritten in place before each
step, or tensors made afresh for each step, and whether it is ``quiet``: it has long
stretches of steps with the batch unchanged (the semantic level checks the lengths over
one), and then a width of 2 at least and a length ``k + 1/2``, where a stuck length shows.
Every tensor of a step comes from ``seed`` and
the step's number. Capacities stay small (at most :data:`MAX_CAPACITY`): the serving loop is
about what lasts across steps; a server's batch sizes are the single-call cases' business
(:func:`simacc.strategies.batch_sizes`).
"""

import functools

from hypothesis import strategies as st

import simacc as sa
from simacc.strategies import functional as fn
from simacc.strategies import scalars as sc
from simacc.strategies import vllm as vl

MAX_CAPACITY = 64
MAX_JOIN = 16  # requests that join between two steps at most
MAX_LEAVE = 16
MAX_EXTRA_NODES = 8  # tree nodes past the width, fixed mode
DTYPES = ("int64", "int32")  # token dtypes as a repro file names them

_CAPACITIES = sc.batch_sizes(1, MAX_CAPACITY)
_BOOLEANS = st.booleans()
_GRAPHS = st.integers(0, 3).map(bool)  # three engines in four run graphs: a port's state is keyed by static buffers
_QUIET = st.integers(0, 2).map(lambda v: v == 2)  # about one in three has long stretches of an unchanged batch
_DTYPES = st.sampled_from(DTYPES)
_EXTRA_NODES = st.integers(0, MAX_EXTRA_NODES)
_BLOCKS = st.integers(1, 16)
_LOGIT_CLASSES = st.integers(1, 64)
_JOINS = st.integers(1, MAX_JOIN)
_LEAVES = st.integers(1, MAX_LEAVE)
_POSITIONS = st.integers(0, 255)


def joins():
    """How many requests join between two steps: 1 to :data:`MAX_JOIN`; shrinks toward 1."""
    return _JOINS


def leaves():
    """How many requests finish between two steps: 1 to :data:`MAX_LEAVE`; shrinks toward 1."""
    return _LEAVES


def positions():
    """Where in the running batch the finishing requests start (taken modulo the batch
    size); shrinks toward the first request."""
    return _POSITIONS


@functools.lru_cache(maxsize=None)
def _widths(max_width):
    return st.integers(1, max_width)


@functools.lru_cache(maxsize=None)
def _quiet_lengths(width):
    return st.sampled_from([k + 0.5 for k in range(1, width)])


def _quiet(draw, knobs):
    """``knobs`` with ``quiet`` drawn: a quiet engine has a width of 2 at least and ``x = k + 1/2``
    (drawn anew), where no length has probability over 1/2, so a burst stuck on one length
    shows (properties/serving.py)."""
    knobs["quiet"] = draw(_QUIET, label="quiet") and knobs["width"] >= 2
    if knobs["quiet"]:
        knobs["x"] = draw(_quiet_lengths(knobs["width"]), label="x")
    return knobs


def _common(draw, modes, max_width):
    """The draws every in-place engine makes: mode, method, width, length, capacity, buffers."""
    mode = draw(sc.token_modes(modes), label="mode")
    method = draw(sc.methods(), label="method")
    width = draw(_widths(max_width), label="width")
    return _quiet(draw, {
        "mode": mode,
        "method": method,
        "width": width,
        "x": draw(sc.acc_lens(width), label="x"),
        "capacity": draw(_CAPACITIES, label="capacity"),
        "graphs": draw(_GRAPHS, label="graphs"),
    })


@functools.lru_cache(maxsize=None)
def eagle_engines(*, modes=sa.TOKEN_MODES, max_width=sc.MAX_SPEC_STEPS + 1):
    """Engines calling ``generate_simulated_accept_index`` in one of ``modes``, with an
    index of width ``1..max_width``: knobs ``mode, method, width, x, capacity, graphs,
    nodes`` (``D``: the width in real mode, more in fixed mode's trees), ``tokens`` (fixed
    mode may pass no token tensors), ``dtype``, ``vocab`` and ``seed``. Shrinks toward fixed
    mode, width 1, a length of 1, capacity 1, fresh tensors and seed 0."""
    sc.token_modes(modes)
    return _eagle_engines(tuple(modes), max_width)


@st.composite
def _eagle_engines(draw, modes, max_width):
    knobs = _common(draw, modes, max_width)
    real = knobs["mode"] == "real-draft-token"
    knobs["nodes"] = knobs["width"] + (0 if real else draw(_EXTRA_NODES, label="extra_nodes"))
    knobs["tokens"] = real or draw(_BOOLEANS, label="tokens")
    knobs["dtype"] = draw(_DTYPES, label="dtype")
    knobs["vocab"] = draw(sc.vocab_sizes(), label="vocab")
    knobs["seed"] = draw(sc.seeds(), label="seed")
    return knobs


@functools.lru_cache(maxsize=None)
def kernel_engines(*, modes=sa.TOKEN_MODES, max_width=sc.MAX_SPEC_STEPS + 1):
    """Engines calling the kernel op, whose own sampler (``method``, ``x``) gives each step's
    ``num_accept_tokens``: the knobs of :func:`eagle_engines`, token tensors always passed.
    Shrinks as :func:`eagle_engines` does."""
    sc.token_modes(modes)
    return _kernel_engines(tuple(modes), max_width)


@st.composite
def _kernel_engines(draw, modes, max_width):
    knobs = draw(_eagle_engines(modes, max_width))
    knobs["tokens"] = True
    return knobs


@functools.lru_cache(maxsize=None)
def dflash_engines(*, modes=sa.TOKEN_MODES):
    """Engines calling ``apply_dflash_simulated_acceptance`` with blocks of ``1..16``: knobs
    ``mode, method, width`` (the block ``B``), ``x`` (zero, negatives and NaN included, as
    that contract allows), ``capacity, graphs``, ``target`` (``given``; else ``None`` in
    fixed mode and logits in real mode), ``classes`` (of the logits), ``dtype``, ``vocab``
    and ``seed``. Shrinks toward fixed mode, one column, a length of 1, capacity 1."""
    sc.token_modes(modes)
    return _dflash_engines(tuple(modes))


@st.composite
def _dflash_engines(draw, modes):
    mode = draw(sc.token_modes(modes), label="mode")
    method = draw(sc.methods(), label="method")
    block = draw(_BLOCKS, label="width")
    lengths = sc.acc_lens(block, positive=False)
    knobs = _quiet(draw, {
        "mode": mode,
        "method": method,
        "width": block,
        "x": draw(lengths, label="x"),
        "capacity": draw(_CAPACITIES, label="capacity"),
        "graphs": draw(_GRAPHS, label="graphs"),
    })
    return {
        **knobs,
        "target": draw(_BOOLEANS, label="target"),
        "classes": draw(_LOGIT_CLASSES, label="classes"),
        "dtype": draw(_DTYPES, label="dtype"),
        "vocab": draw(sc.vocab_sizes(), label="vocab"),
        "seed": draw(sc.seeds(), label="seed"),
    }


@functools.lru_cache(maxsize=None)
def functional_engines(*, modes=sa.TOKEN_MODES, shapes=tuple(s for s in fn.SHAPES if s[0] > 1)):
    """Engines calling a functional port: one ``shape`` ``(capacity, W, D)`` for the whole
    run (from ``shapes``, by default the single-call cases' batches of several rows: a JAX
    port compiles once per shape; real mode takes the chains ``W == D``), a ``valid_mask`` that
    marks the running requests, and knobs ``mode, method, x, tokens, vocab, seed``. Shrinks
    toward fixed mode, the first shape and a length of 1."""
    sc.token_modes(modes)
    chains = tuple(s for s in shapes if s[1] == s[2])
    if not chains:
        raise ValueError(f"{shapes=} must hold a chain (W == D) for real mode")
    return _functional_engines(tuple(modes), st.sampled_from(shapes), st.sampled_from(chains))


@st.composite
def _functional_engines(draw, modes, shapes, chains):
    mode = draw(sc.token_modes(modes), label="mode")
    real = mode == "real-draft-token"
    capacity, width, nodes = draw(chains if real else shapes, label="shape")
    knobs = _quiet(draw, {
        "mode": mode,
        "method": draw(sc.methods(), label="method"),
        "width": width,
        "nodes": nodes,
        "x": draw(sc.acc_lens(width), label="x"),
        "capacity": capacity,
    })
    return {
        **knobs,
        "tokens": real or draw(_BOOLEANS, label="tokens"),
        "vocab": draw(sc.vocab_sizes(), label="vocab"),
        "seed": draw(sc.seeds(), label="seed"),
    }


MAX_V2_WIDTH = 5  # K + 1 for V2's engines: up to 4 speculative tokens
MAX_V2_CAPACITY = 8  # vLLM's own V2 runs a request at a time in Triton's interpreter, ~75 ms each
_V2_WIDTHS = st.integers(2, MAX_V2_WIDTH)
_V2_CAPACITIES = sc.batch_sizes(1, MAX_V2_CAPACITY)
_V2_VOCABS = st.sampled_from((16, 2, 5, 64))


@functools.lru_cache(maxsize=None)
def v2_engines(*, modes=vl.GREEDY):
    """Engines running vLLM V2's synthetic sampler: knobs ``mode`` (which requests sample: one
    of ``modes``, as a V2 case's), ``width`` (``K + 1``, 2 to :data:`MAX_V2_WIDTH`), ``length``
    (the synthetic acceptance length; its rates are the minimum-variance schedule, CONTRACT.md
    §13.3), ``capacity`` (up to :data:`MAX_V2_CAPACITY`), ``quiet``, ``vocab`` and ``seed``. A
    quiet engine's length is ``f + 3/2``: a request of ``K`` real drafts accepts ``f`` or
    ``f + 1`` of them, 1/2 each, so a stream stuck across a burst shows. Shrinks toward greedy
    requests, K = 1, a length of 1 and capacity 1."""
    unknown = set(modes) - set(vl.GREEDY)
    if not modes or unknown:
        raise ValueError(f"modes={modes!r} must be some of {vl.GREEDY}")
    return _v2_engines(tuple(modes))


@st.composite
def _v2_engines(draw, modes):
    mode = draw(st.sampled_from(modes), label="mode")
    width = draw(_V2_WIDTHS, label="width")
    quiet = draw(_QUIET, label="quiet")
    lengths = st.sampled_from([f + 1.5 for f in range(width - 1)]) if quiet else vl.acceptance_lengths(width - 1)
    return {
        "mode": mode,
        "width": width,
        "length": draw(lengths, label="length"),
        "capacity": draw(_V2_CAPACITIES, label="capacity"),
        "quiet": quiet,
        "vocab": draw(_V2_VOCABS, label="vocab"),
        "seed": draw(sc.seeds(), label="seed"),
    }
