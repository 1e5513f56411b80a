"""What a failure message says about the call it failed on, so that the message alone
explains the bug: the ``L``, ``W`` and token mode the outputs were held to, and the case,
printed the way Hypothesis prints a falsifying example, with the values of every tensor small
enough to read (:data:`MAX_SHOWN` elements) and a summary of the others.

The role of the element that differs (draft ``j``, the bonus, untouched, padding) depends on
the output, so the property that compares it names it (the catalogue's oracles, above the
harness); this module only puts it into the message.
"""

import dataclasses

from simacc.harness.model.cases import TensorArg

MAX_SHOWN = 64  # elements per tensor up to which a message shows the values


def context(case, length=None):
    """``L=2, W=4, bs=3, mode real-draft-token``: the ``L`` the outputs are held to, then the
    call's sizes as the case says them (``sizes_text``). ``length`` is that ``L`` (or a few words
    on why there is none); without it, what the case says of its own (``length_text``)."""
    said = case.length_text() if length is None else f"L={length}" if isinstance(length, int) else f"L {length}"
    return f"{said}, {case.sizes_text()}"


def tensor_text(arg):
    """A tensor argument as a message shows it: ``tensor([[0, -1]], dtype=int32)`` when
    small, else its summary; a layout other than contiguous is named."""
    if not isinstance(arg, TensorArg):
        return repr(arg)
    values = arg.values
    if values.numel() > MAX_SHOWN:
        return arg.summary()
    extra = "" if arg.layout == "contiguous" else f", layout={arg.layout}"
    return f"tensor({values.tolist()}, dtype={str(values.dtype).removeprefix('torch.')}{extra})"


def case_text(case):
    """The case as Hypothesis prints a falsifying example: one argument a line."""
    lines = [f"{type(case).__name__}("]
    for f in dataclasses.fields(case):
        value = getattr(case, f.name)
        if f.name == "omitted" and not value:
            continue
        lines.append(f"    {f.name}={tensor_text(value)},")
    return "\n".join([*lines, ")"])


def message(claim, case, length=None, detail=()):
    """A failure message: ``claim`` and, with a case, `` [context]`` on its first line (what a
    one-line report shows), then the ``detail`` lines, then ``case=...`` (the case's lines)."""
    if case is None:
        return "\n".join([claim, *detail])
    return "\n".join([f"{claim} [{context(case, length)}]", *detail, f"case={case_text(case)}"])
