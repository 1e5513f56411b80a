"""The grad modes a server calls the implementation in (CONTRACT.md §11.1): a test parameter,
like the device.

sglang's scheduler runs under ``torch.no_grad()``, vLLM's model runner under
``torch.inference_mode()``. A property's inputs are made, and the call runs, in the mode;
tensors made under inference mode are inference tensors, which refuse in-place updates once
the mode is left, so no property writes into them outside it (:func:`of_tensor`).

The serving-loop properties run in every selected mode; every other property runs in the
first, ``inference`` by default: its tensors allow the least, so an implementation that runs
there runs under ``no_grad`` too, except for one that looks at the mode, which the serving
loop (many calls, every output) is there to catch. This keeps the catalogue's time: one
test per property and device, not one per mode.

A server runs one mode per process (CONTRACT.md §11.5), so a session's processes run one
mode too (``Settings.process_context``): the tests of the other modes are deselected there,
and ``simacc check`` and ``simacc fuzz`` run a session for each mode. So what an
implementation keeps from call to call is made and used in one mode, as in a server.

Nothing here imports torch until a mode is entered.
"""

import contextlib

NAMES = ("inference", "no_grad")  # the order "all" runs them in: the first is where single-call properties run
ALL = "all"
HELP = "inference, no_grad, all (both, the default) or a comma-separated list"


def expand(text):
    """The modes that ``text`` selects, in order, without repeats; ``ValueError`` naming a
    spelling that is none."""
    names = []
    for part in str(text).split(","):
        part = part.strip()
        if part == ALL:
            names += NAMES
        elif part in NAMES:
            names.append(part)
        else:
            raise ValueError(f"{part!r} is not a grad mode: expected {HELP}")
    return tuple(dict.fromkeys(names))


def describe(selected, running=None):
    """What a header says of the modes ``selected``: which properties run in which, and, when
    a session runs only ``running``, that it does."""
    if len(selected) == 1:
        return f"{selected[0]} (every property)"
    said = (f"{selected[0]} (every property), {', '.join(selected[1:])} (the serving-loop and aliasing properties), "
            "each in processes of its own")
    return said if running is None else f"{said}; this session runs {running} only"


def entered(name):
    """A context manager that enters the mode ``name`` (None: the caller's own, unchanged)."""
    if name is None:
        return contextlib.nullcontext()
    import torch

    if name == "inference":
        return torch.inference_mode()
    if name == "no_grad":
        return torch.no_grad()
    raise ValueError(f"{name!r} is not a grad mode: expected one of {', '.join(NAMES)}")


def of_tensor(tensor):
    """A context manager for writing into ``tensor`` in the mode it was made in: inference
    mode for an inference tensor, else the caller's mode (CONTRACT.md §11.1)."""
    import torch

    return torch.inference_mode() if tensor.is_inference() else contextlib.nullcontext()
