"""Devices as the harness names them, and when two names mean one device (CONTRACT.md §4.2).

A property runs on a device *spelling* (``cpu``, ``cpu:0``, ``cuda``, ``cuda:1``), but a
tensor reports where it actually lives: one built on ``cpu:0`` says ``cpu`` and one built on
``cuda`` says ``cuda:0`` (the current device). ``torch.device("cpu") != torch.device("cpu:0")``,
so a comparison with the spelling is wrong on every device but the one spelt the way tensors
report it. Properties compare with the input tensors' own ``.device``; where only spellings
are at hand (selections, repro files, replays), :func:`same` compares them.

Nothing here initialises CUDA but :func:`default_generator` of a CUDA device: a machine without
it can still parse and compare ``cuda:1``; torch is imported on the first call (the pytest
plugin validates spellings at start-up).
"""

import re

ALL = "all"
HELP = "cpu, cuda, all, an indexed one (cpu:0, cuda:1) or a comma-separated list (cpu,cuda:1)"
NO_CUDA = "no CUDA: torch.cuda.is_available() is False"
_SPELLING = re.compile(r"(cpu|cuda|meta)(:\d+)?")  # meta: tensors without data, only in self-tests


def parse(spelling):
    """The :class:`torch.device` that ``spelling`` names; ``ValueError`` naming the
    spelling for anything but ``cpu``, ``cuda`` or ``meta`` with an optional index."""
    import torch

    if isinstance(spelling, torch.device):
        return spelling
    return torch.device(check(spelling))


def check(spelling):
    """``spelling`` itself when it names a device (what :func:`parse` accepts, checked
    without torch), else ``ValueError`` naming it."""
    if not isinstance(spelling, str) or not _SPELLING.fullmatch(spelling):
        raise ValueError(f"{spelling!r} is not a device: expected cpu, cuda, cpu:N or cuda:N")
    return spelling


def _current_cuda_index():
    import torch

    # The index a tensor made on plain "cuda" gets. Without CUDA there is no current device;
    # 0 is what it would be, and asking would initialise (and fail) CUDA.
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def resolve(spelling):
    """Where a tensor created with ``device=spelling`` lives, as its ``.device`` reports
    it: ``cpu:0`` -> ``cpu``, ``cuda`` -> ``cuda:<current>``."""
    import torch

    device = parse(spelling)
    if device.type in ("cpu", "meta"):
        return torch.device(device.type)
    return torch.device("cuda", _current_cuda_index() if device.index is None else device.index)


def same(a, b):
    """Whether two spellings (or :class:`torch.device` objects) put a tensor on one device."""
    return resolve(a) == resolve(b)


def default_generator(spelling):
    """The generator a draw on ``spelling`` takes when it is given none: the CPU's, or the CUDA
    device's own (vLLM's V1 draws on its tensors' device, CONTRACT.md §16.2)."""
    import torch

    device = parse(spelling)
    if device.type != "cuda":
        return torch.default_generator
    torch.cuda.init()  # torch.cuda.default_generators is an empty tuple until CUDA is initialised
    return torch.cuda.default_generators[torch.cuda.current_device() if device.index is None else device.index]


def is_cuda(spelling):
    return str(spelling).partition(":")[0] == "cuda" if isinstance(spelling, str) else spelling.type == "cuda"


def expand(selection):
    """The device spellings a selection stands for, in order and without repeats:
    ``all`` is ``cpu`` and ``cuda``; ``cpu,cuda:1`` is both. Two spellings of one device
    (``cpu`` and ``cpu:0``) are both kept: each is a test parameter of its own."""
    out = []
    for part in str(selection).split(","):
        part = part.strip()
        for spelling in ("cpu", "cuda") if part == ALL else (part,):
            check(spelling)
            if spelling not in out:
                out.append(spelling)
    if not out:
        raise ValueError(f"{selection!r} names no device")
    return tuple(out)


def unavailable(spelling):
    """Why tensors cannot be made on ``spelling`` here (one line), or None when they can."""
    import torch

    device = parse(spelling)
    if device.type != "cuda":
        return None
    if not torch.cuda.is_available():
        return NO_CUDA
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        return f"no {spelling}: torch.cuda.device_count() is {count}"
    return None
