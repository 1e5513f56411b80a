"""Strategies for the scalar arguments: sizes, lengths, methods, modes, seeds.

Every strategy object is built once, at import or once per argument tuple
(``functools.lru_cache``): the case composites draw from them on every example, and a
strategy built inside a draw costs a construction (or a lookup in Hypothesis's cache) and a
validation every time.
"""

import functools
import math

from hypothesis import strategies as st

import simacc as sa

MAX_SPEC_STEPS = 16
# past it, now and then (spec_steps): widths of 18, 33 and 64, one past a port's fixed 17 columns,
# one past a block of 32, and a block of 64 itself
LONG_SPEC_STEPS = (17, 32, 63)
TYPICAL_BS = 256  # the large group's top: the batch sizes most cases draw
MAX_BS = 16385  # the default top: one past the largest batch the contract covers, 16,384 requests (CONTRACT.md §11.3)
# A server's sizes past the typical, each with its weight among them: powers of two (graph
# batch sizes, kernel blocks of 512 or 1024 rows) and, most often, one past each, whose last
# block holds a single row, up to one past 16,384; past 1025 rarely, a case of thousands of rows
# costing a per-row implementation a tenth of a second (past 8192, half a second and more).
SERVER_SIZES = {257: 6, 512: 1, 513: 6, 1024: 1, 1025: 6, 2048: 1, 2049: 2, 4096: 1, 4097: 2, 8193: 1, 16385: 1}
SERVER_SHARE = 12  # about one batch size in this many is a server's

_SEEDS = st.integers(0, 2**32 - 1)
_token_modes = functools.lru_cache(maxsize=None)(st.sampled_from)
_METHODS = st.sampled_from(("match-expected", "multinomial"))
_VOCAB_SIZES = st.sampled_from((16, 32_000, 151_936, 262_144, 2**31 - 1))
# plain fractions: arbitrary floats in range are mostly a hair off an integer, where a wrong
# draw rarely changes L
_FRACTIONS = (0.5, 0.25, 0.75, 0.1, 0.9)
_SPECIAL_LENS = (5e-324, 1e-9, 0.25, 0.5, 0.999, math.inf)
# -inf with a draw of its own (§3.5: 1, one draw if max_len > 1), as every branch of acc_lens
_NON_POSITIVE_LENS = st.floats(-100, 0, allow_nan=False) | st.integers(0, 0).map(lambda _: -math.inf)


# named, not lambdas: Hypothesis reads a lambda filter's source (an ast parse) to find bounds in it
def _not_a_method(text):
    return text not in sa.METHODS


def _not_a_token_mode(text):
    return text not in sa.TOKEN_MODES


# st.text()'s own alphabet (every character but the surrogates), named by category: text()
# finds it by encoding each of the 1.1M code points with utf-8, 2.8 s in every process whose
# .hypothesis folder has not cached it yet (a check in a new project: each worker); by
# category it takes 0.14 s, and the examples are the same
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_BAD_ACC_LENS = st.sampled_from((0.0, -0.0, -math.inf, math.nan, -5e-324)) | st.floats(max_value=0, allow_nan=False)


def _longer(names):
    """A name of ``names`` with text after it (what a match by prefix takes for the name), or
    before it behind a separator (what a port that drops a namespace, "sglang:multinomial",
    takes for it)."""
    after = st.tuples(st.sampled_from(names), _TEXT.filter(bool))
    before = st.tuples(_TEXT, st.sampled_from((":", "/", ".", "")), st.sampled_from(names)).filter(_not_a_name)
    return (after | before).map("".join)


def _not_a_name(parts):
    return any(parts[:-1])


# near misses, a name with whitespace around it among them (what a port that strips the name takes for it)
_BAD_METHODS = st.sampled_from(
    ("gaussian", "match_expected", "Multinomial", "MATCH-EXPECTED", " multinomial", "multinomial\n", "match-expected ", "")
) | _longer(sa.METHODS) | _TEXT.filter(_not_a_method)
_BAD_TOKEN_MODES = st.sampled_from(("real", "real_draft_token", "Fixed", "fixed ", "real-draft-token\n", "")) | _longer(
    sa.TOKEN_MODES) | _TEXT.filter(
    _not_a_token_mode
)


def _check_range(name_lo, lo, name_hi, hi):
    if lo < 0:
        raise ValueError(f"{name_lo}={lo} must be >= 0")
    if hi < lo:
        raise ValueError(f"{name_hi}={hi} < {name_lo}={lo}")


@functools.lru_cache(maxsize=None)
def batch_sizes(min_bs=0, max_bs=MAX_BS):
    """Batch sizes in ``[min_bs, max_bs]``: of the groups allowed, about a third each small
    (1 to 8), 0, and large (9 to 256), and about one in :data:`SERVER_SHARE` a server's
    size past those (:data:`SERVER_SIZES`: 257, 512, 513, ... 16385, by their weights).

    Server sizes come often enough that a kernel whose tail block is wrong fails in the ci
    profile's 200 examples (Hypothesis's generation favours the table's first entries, so
    about one in 25 draws is one), and rarely enough that the suite keeps its time. One
    draw: an index into a table of the small sizes, then 0, then the large sizes, each group
    repeated to about the same length, then the server sizes. Shrinks toward 1 when allowed (the table's first entry),
    a one-request batch being the readable minimal case; a failure that needs an empty, a
    large or a server's batch shrinks to 0 or to the smallest such size it needs.
    """
    _check_range("min_bs", min_bs, "max_bs", max_bs)
    small = range(max(min_bs, 1), min(max_bs, 8) + 1)
    zero = range(0, 1 if min_bs == 0 else 0)
    large = range(max(min_bs, 9), min(max_bs, TYPICAL_BS) + 1)
    groups = [list(g) for g in (small, zero, large) if g]
    server = {n: w for n, w in SERVER_SIZES.items() if min_bs <= n <= max_bs and n > TYPICAL_BS}
    if not groups:  # min_bs past the typical sizes: only a server's
        return st.sampled_from(list(server) or [min_bs])
    length = max(map(len, groups))
    table = [n for g in groups for n in g * (length // len(g))]
    scale = len(table) / (SERVER_SHARE - 1) / sum(SERVER_SIZES.values())
    table += [n for n, weight in server.items() for _ in range(max(1, round(weight * scale)))]
    return st.sampled_from(table)


@functools.lru_cache(maxsize=None)
def spec_steps(min_steps=0, max_steps=MAX_SPEC_STEPS):
    """``spec_steps`` (index width minus one) in ``[min_steps, max_steps]``; past
    :data:`MAX_SPEC_STEPS` only the :data:`LONG_SPEC_STEPS` allowed (a few widths: each width
    is strategies of its own to build), as the last values of one integer draw, so that a
    case shrinks as it did without them. Shrinks to the minimum."""
    _check_range("min_steps", min_steps, "max_steps", max_steps)
    past = tuple(n for n in LONG_SPEC_STEPS if min_steps <= n <= max_steps)
    if min_steps > MAX_SPEC_STEPS or not past:
        return st.integers(min_steps, max_steps)
    return st.integers(min_steps, MAX_SPEC_STEPS + len(past)).map(
        lambda n: n if n <= MAX_SPEC_STEPS else past[n - MAX_SPEC_STEPS - 1])


@functools.lru_cache(maxsize=None)
def acc_lens(max_len, *, positive=True, edge=None):
    """``simulate_acc_len`` values for a width of ``max_len``.

    Integers in range, plain and arbitrary fractions, a hair (one float64 step) below
    ``max_len`` and above 1, tiny positives, values below 1 and above ``max_len``, ``inf``; with
    ``positive=False`` also zero and negatives (DFLASH has no ``> 0`` check). Each kind is a
    ``one_of`` branch that makes one draw of its own. ``edge``, when given, is the value of one
    more branch: a case strategy that knows its seed turns it into a length at the edge of the
    seeded draw. Shrinks toward 1 (and a failure that needs a fraction toward 1.5).
    """
    if max_len < 1:
        raise ValueError(f"{max_len=} must be >= 1")
    kinds = [
        st.sampled_from([float(n) for n in range(1, max_len + 1)]),
        st.sampled_from([lo + f for lo in range(1, max_len) for f in _FRACTIONS] or [1.0]),
        st.floats(1, max_len, allow_nan=False, exclude_max=max_len > 1),
        # read in float32, a hair below max_len becomes max_len and skips its draw
        st.sampled_from((math.nextafter(max_len, 0), math.nextafter(1, math.inf))),
        st.sampled_from(_SPECIAL_LENS + (() if positive else (0.0, -0.0))),
        st.floats(max_len, max_len + 100, allow_nan=False, exclude_min=True),
    ]
    if edge is not None:
        kinds.append(st.integers(0, 0).map(lambda _: edge))  # a draw of its own, as every branch
    return st.one_of(kinds if positive else [*kinds, _NON_POSITIVE_LENS])


def bad_acc_lens():
    """``simulate_acc_len`` values the EAGLE contract rejects (it wants ``> 0``): zero,
    negative zero, negatives, ``-inf`` and NaN. Shrinks toward 0."""
    return _BAD_ACC_LENS


def methods():
    """A length-sampling method; shrinks toward ``match-expected``."""
    return _METHODS


def bad_methods():
    """Method names that are not in ``simacc.METHODS``: near misses, a name with text after
    it, and arbitrary text. Shrinks toward the first near miss."""
    return _BAD_METHODS


def token_modes(modes=sa.TOKEN_MODES):
    """A token mode from ``modes``; shrinks toward the first one."""
    if not modes or set(modes) - set(sa.TOKEN_MODES):
        raise ValueError(f"{modes=} must be a non-empty subset of {sa.TOKEN_MODES}")
    return _token_modes(tuple(modes))


def bad_token_modes():
    """Token-mode names that are not in ``simacc.TOKEN_MODES`` (near misses, a name with text
    after it, arbitrary text); shrinks toward a near miss."""
    return _BAD_TOKEN_MODES


def seeds():
    """Seeds for torch's CPU generator; shrinks toward 0."""
    return _SEEDS


def vocab_sizes():
    """Exclusive upper bounds for token ids, from toy vocabularies up to int32 max.

    Shrinks toward the toy vocabulary, so minimal cases have small, readable ids.
    """
    return _VOCAB_SIZES
