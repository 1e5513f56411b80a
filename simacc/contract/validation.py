"""Argument checks shared by the reference functions.

Each check raises before the caller writes anything or draws from the generator, and its
message names the argument and what was expected.
"""

import numbers

import torch

from simacc.contract.sampling import METHODS

TOKEN_MODES = ("fixed", "real-draft-token")
_INTEGER_DTYPES = frozenset({torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                             torch.uint16, torch.uint32, torch.uint64})


def check_int(name, value, minimum=0):
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def check_length(value, positive=True):
    """``simulate_acc_len`` must be a real number; the EAGLE contract also wants ``> 0``."""
    if type(value) not in (float, int) and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise TypeError(f"simulate_acc_len must be a real number, got {type(value).__name__}")
    if positive and not value > 0:  # `not >` also rejects NaN
        raise ValueError(f"simulate_acc_len must be > 0, got {value}")


def check_method(method):
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
    if t.dtype not in _INTEGER_DTYPES:
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
    if len(devices) > 1 and len(set(devices.values())) > 1:
        listed = ", ".join(f"{name} on {dev}" for name, dev in devices.items())
        raise ValueError(f"all tensors must be on one device, got {listed}")


def check_fits(name, value, *tensors):
    """``value`` must be representable in each tensor's dtype (it is written into them)."""
    for t in tensors:
        info = torch.iinfo(t.dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"{name}={value} does not fit {t.dtype} [{info.min}, {info.max}]")


def plainly_valid_eagle(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                        simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id):
    """True when the EAGLE arguments are valid in the common way, in a few microseconds.

    It never says True where the detailed checks would raise; False sends the call through
    them, and they name what is wrong. The detailed checks cost more than the whole call's
    own torch work on a CPU, so a valid call skips them.
    """
    if not (type(bs) is int and type(spec_steps) is int and bs >= 0 and spec_steps >= 0
            and type(simulate_acc_len) in (float, int) and simulate_acc_len > 0
            and simulate_acc_method in METHODS and simulate_acc_token_mode in TOKEN_MODES
            and type(fixed_token_id) is int and 0 <= fixed_token_id <= 127):  # fits every integer dtype
        return False
    tensors = (accept_index, predict, num_correct_drafts)
    if simulate_acc_token_mode == "real-draft-token":
        tensors += (candidates, target_predict)
    device = accept_index.device if type(accept_index) is torch.Tensor else None
    for t in tensors:
        if type(t) is not torch.Tensor or t.dtype not in _INTEGER_DTYPES or t.device != device:
            return False
    width = spec_steps + 1
    if accept_index.shape != (bs, width) or predict.dim() != 1 or num_correct_drafts.shape != (bs,):
        return False
    return len(tensors) == 3 or (
        candidates.dim() == 2 and candidates.shape[0] == bs and candidates.shape[1] >= width
        and target_predict.shape == candidates.shape
    )
