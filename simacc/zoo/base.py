"""The correct steps that mutants are built from, and the decorator that registers them.

A mutant reads as the contract's steps in order (sample ``L``, build the index, write the
counts, write ``predict``) with exactly one step written wrong, so its mistake is the one
line that differs from these helpers.
"""

import importlib.util
from dataclasses import dataclass

import torch

from simacc.contract.caller import DEFAULT_TOKEN_ID
from simacc.contract.sampling import sample_simulated_acc_len

FIXED = DEFAULT_TOKEN_ID  # the fixed id, read as an sglang build reads it (100 by default)
REAL = "real-draft-token"


@dataclass(frozen=True)
class Entry:
    """One implementation of the zoo: a mutant (``killers`` = the properties expected to
    reject it) or a correct alternative (``killers`` empty). ``needs_cuda``: its mistake
    only shows on a CUDA device; ``requires``: packages it imports when called (optional
    extras such as triton)."""

    name: str
    module: str
    kind: str
    bug: str
    killers: tuple
    needs_cuda: bool = False
    requires: tuple = ()
    level: str = "exact"  # the level it is checked at: "semantic" for ports with their own RNG

    def unavailable(self):
        """Why this entry cannot run here (one line), or None."""
        from simacc.harness.config import devices

        missing = [name for name in self.requires if importlib.util.find_spec(name) is None]
        if missing:
            return f"needs {', '.join(missing)}, which is not installed"
        return devices.unavailable("cuda") if self.needs_cuda else None

    @property
    def spec(self):
        return f"{self.module}:{self.name}"

    @property
    def correct(self):
        return self.kind == "correct"


REGISTRY = {}


def register(kind, *killers, needs_cuda=False, requires=(), level="exact"):
    """Record the decorated function in the zoo; its docstring's first line is its bug."""

    def add(fn):
        bug = fn.__doc__.strip().splitlines()[0]
        REGISTRY[fn.__name__] = Entry(fn.__name__, fn.__module__, kind, bug, killers, needs_cuda, requires, level)
        return fn

    return add


def register_elsewhere(module, name, kind, bug, *killers):
    """Record ``module:name`` in the zoo without importing ``module`` (one whose import is the
    point of the check, or costs: :mod:`simacc.zoo.compiled_at_import`); ``bug`` is its docstring's first line."""
    REGISTRY[name] = Entry(name, module, kind, bug, killers)


def check_length(x):
    """CONTRACT.md §4.0: a length that is not > 0 (NaN too) is rejected before anything else."""
    if not x > 0:
        raise ValueError(f"simulate_acc_len must be > 0, got {x}")


def sample(x, method, width):
    """CONTRACT.md §4.0-§4.1: check the length, then draw ``L``."""
    check_length(x)
    return sample_simulated_acc_len(x, method, width)


def index(roots, length, width):
    """CONTRACT.md §4.2 from a ``(bs,)`` tensor of roots: ``root + 0..L-1``, then -1."""
    cols = torch.arange(width, dtype=torch.int32, device=roots.device)
    return torch.where(cols < length, roots.to(torch.int32)[:, None] + cols, -1).to(torch.int32)


def write_tokens(predict, out, candidates, target_predict, length):
    """CONTRACT.md §4.5: the drafts, then the bonus, at the accepted slots of ``out``."""
    slots = out[:, :length].long().reshape(-1)
    tokens = torch.cat([candidates[:, 1:length], target_predict[:, length - 1 : length]], 1)
    predict[slots] = tokens.reshape(-1).to(predict.dtype)


def span(t):
    """A dense 1-D view of the memory the 1-D view ``t`` spans, from its first element to its
    last: a strided view's gaps included (what a one-launch fill of the span writes)."""
    return torch.as_strided(t, ((t.shape[0] - 1) * t.stride(0) + 1 if t.shape[0] else 0,), (1,), t.storage_offset())


def simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width, mode, fill=None):
    """CONTRACT.md §4.2-§4.5 for an already sampled ``L``; returns the index (``fill``: as
    :func:`finish`)."""
    out = index(accept_index[:, 0], length, width)
    return finish(out, length, predict, num_correct_drafts, candidates, target_predict, mode, fill)


def finish(out, length, predict, num_correct_drafts, candidates, target_predict, mode, fill=None):
    """CONTRACT.md §4.3-§4.5 after the index is built; returns ``out``. ``fill(predict, out,
    length)`` is fixed mode's write, for a mutant that gets only that wrong (None: every slot
    the fixed id)."""
    num_correct_drafts.fill_(length - 1)
    if mode == REAL:
        write_tokens(predict, out, candidates, target_predict, length)
    elif fill is None:
        predict.fill_(FIXED)
    else:
        fill(predict, out, length)
    return out
