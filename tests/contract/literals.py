"""What the example-based tests of the reference share: literal tensors, the exact
comparison, and edits of a valid call that build the error tables (OpInfo's ErrorInput)."""

import torch

from simacc.harness.judging.assertions import check_equal


def i32(data, shape=None):
    t = torch.tensor(data, dtype=torch.int32)
    return t if shape is None else t.reshape(shape)


def i64(data, shape=None):
    t = torch.tensor(data, dtype=torch.int64)
    return t if shape is None else t.reshape(shape)


def assert_tensor(what, got, expected):
    """Exact equality of a tensor: type, shape, dtype, device and every element."""
    __tracebackhide__ = True
    check_equal(what, got, expected, None)


def set_(**fields):
    """An edit of a call's keyword arguments that replaces ``fields``."""
    return lambda kwargs: dict(kwargs, **fields)


def via(name, fn):
    """An edit that replaces argument ``name`` with ``fn`` of it."""
    return lambda kwargs: dict(kwargs, **{name: fn(kwargs[name])})


def meta(t):
    """``t`` on another device: the meta device exists on every machine."""
    return t.to("meta")
