"""Calling a JAX implementation with a torch case: the ``jax`` call style of the functional
contract (CONTRACT.md §10).

Every case is torch tensors (so it prints, replays and travels as JSON like any other);
a JAX port wants JAX arrays and a key. Here, for one call:

* each tensor becomes a JAX array on the CPU through DLPack. A contiguous int32 or bool
  tensor is shared, not copied: a port that writes into the buffers it was given (through
  DLPack into torch, say) changes the torch input, which the inputs property then sees.
  int64 becomes int32 unless x64 is enabled (JAX's default; token ids fit in int32);
* ``rng``, the case's seed, becomes ``jax.random.PRNGKey(seed)``: a raw ``uint32[2]`` key,
  which every JAX version and every port (one that splits, folds or indexes it) accepts,
  so a case replays exactly; None stays None;
* the result, ``(index, predict, lens)``, is copied into new torch tensors on the device of
  the inputs, for the ordinary assertion helpers.

JAX is imported on the first call, never with simacc: it is an optional extra
(``pip install -e '.[jax]'``).
"""

import functools
import importlib
import importlib.util

import numpy as np
import torch

INSTALL = "pip install 'simacc[jax]', or in a checkout pip install -e '.[jax]'"
RESULTS = ("index", "predict", "lens")


class LazyModule:
    """A module imported on first attribute access, so that modules written against JAX
    (the reference, the zoo) import without it and register what they hold."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)


jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")


def jit(**options):
    """``jax.jit(fn, **options)`` as a decorator that compiles on first use, so that the
    module it decorates imports without JAX. Jitting pays here: on a new shape an eager call
    compiles each of its ops (about a second for a whole call on two busy cores), a jitted
    one compiles once (a quarter of that), and then runs in microseconds."""

    def wrap(fn):
        compiled = functools.cache(lambda: jax.jit(fn, **options))

        @functools.wraps(fn)
        def call(*args, **kwargs):
            return compiled()(*args, **kwargs)

        return call

    return wrap


def missing():
    """Why JAX code cannot run here (one line), or None when JAX is installed."""
    if importlib.util.find_spec("jax") is None:
        return f"the functional contract needs jax, which is not installed ({INSTALL})"
    return None


def to_jax(tensor):
    """``tensor`` as a JAX array on the CPU, sharing its memory where DLPack allows."""
    t = tensor.detach().cpu()
    if t.dtype == torch.int64 and not jax.config.jax_enable_x64:
        t = t.to(torch.int32)
    return jax.dlpack.from_dlpack(t if t.is_contiguous() else t.contiguous())


def key(seed):
    """``jax.random.PRNGKey(seed)``: compiled for a case's seed (a uint32: 14 µs a call,
    where the eager call takes 200), eager for any other."""
    return _seeded(np.uint32(seed)) if isinstance(seed, int) and 0 <= seed < 2**32 else jax.random.PRNGKey(seed)


@jit()
def _seeded(seed):
    return jax.random.PRNGKey(seed)


def to_torch(array, device):
    """A JAX (or NumPy) array as a new torch tensor on ``device``."""
    return torch.from_numpy(np.array(array)).to(device)


def call(fn, kwargs):
    """``fn(**kwargs)`` with tensors as JAX arrays and ``rng`` (a seed) as a key; the result
    ``(index, predict, lens)`` as torch tensors on the inputs' device."""
    device = next((v.device for v in kwargs.values() if isinstance(v, torch.Tensor)), torch.device("cpu"))
    with jax.default_device(jax.devices("cpu")[0]):
        arrays = {k: to_jax(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        if arrays.get("rng") is not None:
            arrays["rng"] = key(arrays["rng"])
        result = fn(**arrays)
    if not isinstance(result, (tuple, list)) or len(result) != len(RESULTS):
        got = f"a {type(result).__name__}" + (f" of {len(result)}" if isinstance(result, (tuple, list)) else "")
        raise TypeError(f"a functional implementation returns {RESULTS}, got {got}")
    return tuple(to_torch(array, device) for array in result)
