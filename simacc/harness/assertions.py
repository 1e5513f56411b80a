"""The comparisons every property goes through.

They hide themselves from tracebacks and write one message shape:
``{what}={got}, but should be {expected} [{case summary}]``. A whole tensor is compared
first; elements are walked only on failure, to name the first wrong index.
"""

import torch


def describe(t):
    """A tensor as a one-line summary (values too when it is small)."""
    if not isinstance(t, torch.Tensor):
        return repr(t)
    head = f"Tensor[size={tuple(t.shape)}, dtype={str(t.dtype)[6:]}, device={t.device}]"
    return f"{head} {t.tolist()}" if t.numel() <= 16 else head


def first_difference(got, expected):
    """``(index, got value, expected value)`` at the first differing element, or None."""
    differs = (got.cpu() != expected.cpu()).nonzero()
    if not len(differs):
        return None
    index = tuple(differs[0].tolist())
    return index, got.cpu()[index].item(), expected.cpu()[index].item()


def check_equal(what, got, expected, case):
    """``got`` must equal ``expected`` exactly: type, shape, dtype, device and every byte."""
    __tracebackhide__ = True
    if not isinstance(got, torch.Tensor):
        raise AssertionError(f"{what}={got!r}, but should be a tensor {describe(expected)}{_where(case)}")
    for attr in ("shape", "dtype", "device"):
        g, e = getattr(got, attr), getattr(expected, attr)
        if attr == "shape":
            g, e = tuple(g), tuple(e)
        if g != e:
            raise AssertionError(f"{what}.{attr}={g}, but should be {e}{_where(case)}")
    if not torch.equal(got, expected):
        index, g, e = first_difference(got, expected)
        raise AssertionError(f"{what}[{', '.join(map(str, index))}]={g}, but should be {e}{_where(case)}")


def _where(case):
    """`` [case summary]``, built only when a message needs it (it costs a few microseconds)."""
    return f" [{case.summary()}]" if case is not None else ""


def check(condition, what, got, expected, case):
    """A scalar claim: ``condition`` must hold, else ``{what}={got}, but should be {expected}``."""
    __tracebackhide__ = True
    if not condition:
        raise AssertionError(f"{what}={got}, but should be {expected}{_where(case)}")
