"""simacc's DSpark layouts (CONTRACT.md §20, §21) called through sglang 0.5.23's own kernel files,
for ``simacc check simacc.contract.dspark_glue:NAME`` (and ``simacc engines``).

``static_accept_tail.py``, ``simulated_bonus.py`` and ``dispatch.py`` (in
``sglang/kernels/ops/speculative/dspark/``) import only torch and Triton, but importing them by
their dotted names runs ``sglang/__init__.py``, which needs sglang's serving dependencies. So
each is loaded from its file and registered under its dotted name first, and their imports of
one another resolve without the package. sglang is found on the path (installed, or its wheel
unpacked on ``PYTHONPATH``, as docs/vllm.md says of vLLM's) at the first call, so this module
imports without it. On a CPU the Triton kernels run in Triton's interpreter: set
``TRITON_INTERPRET=1`` before the check (``simacc engines`` does).
"""

import importlib.util
import inspect
import random
import sys
from pathlib import Path

import torch

from simacc.contract import dspark as layout

PACKAGE = "sglang.kernels.ops.speculative.dspark"
_FILES = ("dispatch", "simulated_bonus", "static_accept_tail")  # each imports only the ones before it


def unavailable():
    """Why sglang's DSpark kernel files cannot be loaded here (one line), or None."""
    folder = PACKAGE.replace(".", "/")
    return None if _folder().is_dir() else f"sglang's DSpark kernels are not on the path (no {folder}/)"


def _folder():
    found = importlib.util.find_spec("sglang")  # a top-level package is found, not run
    if found is None or not found.submodule_search_locations:
        return Path("sglang-not-found")
    return Path(next(iter(found.submodule_search_locations)), *PACKAGE.split(".")[1:])


def _module(name):
    """sglang's ``dspark/<name>.py``, loaded from its file under its dotted name (or the module
    of that name already imported)."""
    for each in _FILES[: _FILES.index(name) + 1]:
        dotted = f"{PACKAGE}.{each}"
        if dotted not in sys.modules:
            spec = importlib.util.spec_from_file_location(dotted, _folder() / f"{each}.py")
            if spec is None:
                raise ImportError(unavailable())
            module = importlib.util.module_from_spec(spec)
            sys.modules[dotted] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[dotted]
                raise
    return sys.modules[f"{PACKAGE}.{name}"]


def _as_the_layout(glue):
    """``glue`` (which takes ``**kwargs``) with the layout's keyword names as its signature: they
    identify the contract (§21.1)."""
    glue.__signature__ = inspect.signature(layout.static_accept_tail)
    return glue


@_as_the_layout
def static_accept_tail_torch(**kwargs):
    """``static_accept_tail_torch``, the torch reference sglang dispatches CPU tensors to (§21)."""
    return _module("static_accept_tail").static_accept_tail_torch(**kwargs)


@_as_the_layout
def static_accept_tail_triton(**kwargs):
    """The fused Triton kernel that ``static_accept_tail`` launches for CUDA tensors (§21), by its
    launcher ``_static_accept_tail_triton`` (which has no defaults: the layout's fill in): on a
    CPU, in Triton's interpreter."""
    bound = static_accept_tail_triton.__signature__.bind(**kwargs)
    bound.apply_defaults()
    return _module("static_accept_tail")._static_accept_tail_triton(**bound.arguments)


def simulated_bonus_sample_graph(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """The fold's bonus, ``simulated_bonus_sample_graph`` (§20.5), as the epilogue serves it:
    ``begin_sim_bonus`` fills the one-element seed buffer with ``random.getrandbits(31)`` before
    the step when some request samples (an all-greedy step passes no temperatures: the seed is
    left as it was, here 0, and the buffer of temperatures zeroed), and the kernel reads the
    temperatures as a ``(bs,)`` buffer."""
    sampled = bool((temperatures > 0).any())
    seed = torch.tensor([random.getrandbits(31) if sampled else 0], dtype=torch.int32, device=target_logits.device)
    flat = temperatures.reshape(-1).to(torch.float32) if sampled else torch.zeros(bs, device=target_logits.device)
    return _module("simulated_bonus").simulated_bonus_sample_graph(
        target_logits=target_logits, correct_len=correct_len, temperatures=flat, seed=seed, bs=bs,
        rows_per_request=rows_per_request)
