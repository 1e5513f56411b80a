"""Argument checks shared by the reference functions.

Each check raises before the caller writes anything or draws from the generator, and its
message names the argument and what was expected (issue #2).
"""

import numbers

import torch

TOKEN_MODES = ("fixed", "real-draft-token")


def check_int(name, value, minimum=0):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def check_length(value, positive=True):
    """``simulate_acc_len`` must be a real number; the EAGLE contract also wants ``> 0``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"simulate_acc_len must be a real number, got {type(value).__name__}")
    if positive and not value > 0:  # `not >` also rejects NaN
        raise ValueError(f"simulate_acc_len must be > 0, got {value}")


def check_method(method):
    from simacc.sampling import METHODS

    if method not in METHODS:
        raise ValueError(f"unknown simulate_acc_method {method!r}; expected one of {METHODS}")


def check_mode(mode):
    if mode not in TOKEN_MODES:
        raise ValueError(
            f"unknown simulate_acc_token_mode {mode!r}; expected one of {TOKEN_MODES}"
        )


def check_tensor(name, t, shape=None, ndim=None):
    """An integer tensor, optionally of an exact shape (``None`` entries match anything)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must have an integer dtype, got {t.dtype}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if shape is not None and (
        t.dim() != len(shape) or any(w is not None and w != n for w, n in zip(shape, t.shape))
    ):
        want = tuple("*" if w is None else w for w in shape)
        raise ValueError(f"{name} must have shape {want}, got {tuple(t.shape)}")


def check_same_device(**tensors):
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{name} on {dev}" for name, dev in devices.items())
        raise ValueError(f"all tensors must be on one device, got {listed}")


def check_fits(name, value, *tensors):
    """``value`` must be representable in each tensor's dtype (it is written into them)."""
    for t in tensors:
        info = torch.iinfo(t.dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"{name}={value} does not fit {t.dtype} [{info.min}, {info.max}]")
