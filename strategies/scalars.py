"""Strategies for the scalar arguments: sizes, lengths, methods, modes, seeds."""

import math

from hypothesis import strategies as st

import simacc as sa

MAX_SPEC_STEPS = 16


def _check_range(name_lo, lo, name_hi, hi):
    if lo < 0:
        raise ValueError(f"{name_lo}={lo} must be >= 0")
    if hi < lo:
        raise ValueError(f"{name_hi}={hi} < {name_lo}={lo}")


def batch_sizes(min_bs=0, max_bs=256):
    """Batch sizes in ``[min_bs, max_bs]``: mostly small, sometimes 0 or up to ``max_bs``.

    Shrinks toward 1 when allowed: a one-request batch is the readable minimal case; an
    empty batch is a branch of its own, reached when a failure needs it.
    """
    _check_range("min_bs", min_bs, "max_bs", max_bs)
    small = st.integers(max(min_bs, 1), min(max_bs, 8)) if min_bs <= 8 and max_bs >= 1 else st.nothing()
    # integers(0, 0), not just(0): a branch with no draw of its own would shrink first
    zero = st.integers(0, 0) if min_bs == 0 else st.nothing()
    large = st.integers(max(min_bs, 9), max_bs) if max_bs >= 9 else st.nothing()
    return small | zero | large


def spec_steps(min_steps=0, max_steps=MAX_SPEC_STEPS):
    """``spec_steps`` (index width minus one) in ``[min_steps, max_steps]``; shrinks to the minimum."""
    _check_range("min_steps", min_steps, "max_steps", max_steps)
    return st.integers(min_steps, max_steps)


def acc_lens(max_len, *, positive=True):
    """``simulate_acc_len`` values for a width of ``max_len``.

    Integers in range, plain and arbitrary fractions, tiny positives, values below 1 and
    above ``max_len``,
    ``inf``; with ``positive=False`` also zero and negatives (DFLASH has no ``> 0`` check).
    Shrinks toward 1.
    """
    if max_len < 1:
        raise ValueError(f"{max_len=} must be >= 1")
    specials = [5e-324, 1e-9, 0.25, 0.5, 0.999, math.inf] + ([] if positive else [0.0, -0.0])
    options = [
        st.integers(1, max_len).map(float),
        # plain fractions: arbitrary floats in range are mostly a hair off an integer, where
        # a wrong draw rarely changes L
        st.builds(
            lambda lo, frac: lo + frac,
            st.integers(1, max(1, max_len - 1)),
            st.sampled_from([0.5, 0.25, 0.75, 0.1, 0.9]) if max_len > 1 else st.just(0.0),
        ),
        st.floats(1, max_len, allow_nan=False, exclude_max=max_len > 1),
        st.sampled_from(specials),
        st.floats(max_len, max_len + 100, allow_nan=False, exclude_min=True),
    ]
    if not positive:
        options.append(st.floats(-100, 0, allow_nan=False))
    return st.one_of(options)


def bad_acc_lens():
    """``simulate_acc_len`` values the EAGLE contract rejects (it wants ``> 0``): zero,
    negative zero, negatives, ``-inf`` and NaN. Shrinks toward 0."""
    return st.one_of(
        st.sampled_from([0.0, -0.0, -math.inf, math.nan, -5e-324]),
        st.floats(max_value=0, allow_nan=False),
    )


def methods():
    """A length-sampling method; shrinks toward ``match-expected``."""
    return st.sampled_from(("match-expected", "multinomial"))


def bad_methods():
    """Method names that are not in ``simacc.METHODS``: near misses and arbitrary text.
    Shrinks toward the first near miss."""
    near = ("gaussian", "match_expected", "Multinomial", "MATCH-EXPECTED", " multinomial", "")
    return st.sampled_from(near) | st.text(max_size=20).filter(lambda m: m not in sa.METHODS)


def token_modes(modes=sa.TOKEN_MODES):
    """A token mode from ``modes``; shrinks toward the first one."""
    if not modes or set(modes) - set(sa.TOKEN_MODES):
        raise ValueError(f"{modes=} must be a non-empty subset of {sa.TOKEN_MODES}")
    return st.sampled_from(tuple(modes))


def bad_token_modes():
    """Token-mode names that are not in ``simacc.TOKEN_MODES``; shrinks toward a near miss."""
    near = ("real", "real_draft_token", "Fixed", "fixed ", "")
    return st.sampled_from(near) | st.text(max_size=20).filter(lambda m: m not in sa.TOKEN_MODES)


def seeds():
    """Seeds for torch's CPU generator; shrinks toward 0."""
    return st.integers(0, 2**32 - 1)


def vocab_sizes():
    """Exclusive upper bounds for token ids, from toy vocabularies up to int32 max.

    Shrinks toward the toy vocabulary, so minimal cases have small, readable ids.
    """
    return st.sampled_from((16, 32_000, 151_936, 262_144, 2**31 - 1))
