"""The comparisons every property goes through.

They hide themselves from tracebacks and write one message shape (:func:`explain.message
<simacc.harness.model.explain.message>`): a first line ``{what}={got}, but should be {expected}``,
the role of the element that differs when the property names it, and ``[L=.., W=.., bs=..,
mode ..]``; then, for small tensors, the whole of both; then the case with its values. A
whole tensor is compared first; elements are walked only on failure, to name the first wrong
index.
"""

import torch

from simacc.harness.call.judges import judged_with
from simacc.harness.judging import distributions
from simacc.harness.model import explain

judged_with(__name__, quick=True)  # every call's outcome is compared through these helpers


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


def check_equal(what, got, expected, case, length=None, role=None):
    """``got`` must equal ``expected`` exactly: type, shape, dtype, device and every byte.
    ``length`` is the ``L`` the property holds the outputs to (see :func:`explain.context
    <simacc.harness.model.explain.context>`); ``role(index)`` says what the element at ``index``
    of ``expected`` is (the bonus, padding...), for the message."""
    __tracebackhide__ = True
    if not isinstance(got, torch.Tensor):
        raise AssertionError(explain.message(f"{what}={got!r}, but should be a tensor {describe(expected)}", case,
                                             length))
    for attr in ("shape", "dtype", "device"):
        g, e = getattr(got, attr), getattr(expected, attr)
        if attr == "shape":
            g, e = tuple(g), tuple(e)
        if g != e:
            raise AssertionError(explain.message(f"{what}.{attr}={g}, but should be {e}", case, length))
    if not torch.equal(got, expected):
        index, g, e = first_difference(got, expected)
        said = role(index) if role is not None else None
        claim = f"{what}[{', '.join(map(str, index))}]={g}, but should be {e}" + (f": {said}" if said else "")
        detail = ()
        if expected.numel() <= explain.MAX_SHOWN:
            detail = (f"got      {got.cpu().tolist()}", f"expected {expected.cpu().tolist()}")
        raise AssertionError(explain.message(claim, case, length, detail))


def check(condition, what, got, expected, case, length=None, distribution=None):
    """A scalar claim: ``condition`` must hold, else ``{what}={got}, but should be {expected}``.
    ``distribution``: the :class:`~simacc.harness.judging.distributions.Distribution` the claim is
    about, which the failure carries for the reports to draw."""
    __tracebackhide__ = True
    if not condition:
        error = AssertionError(explain.message(f"{what}={got}, but should be {expected}", case, length))
        raise distributions.attach(error, distribution) if distribution is not None else error
