"""The mutant zoo: realistic wrong implementations of the contracts, each with
one mistake, and independent correct ones. ``simacc mutants`` runs the property suite on
all of them; ``tests/meta/test_zoo.py`` shows that every property rejects at least one mutant.

``ENTRIES`` maps a name to its :class:`Entry`: the ``IMPL`` spec, the kind of bug, the bug
in one line (the function's docstring) and the properties expected to kill it.
"""

from simacc.zoo import correct, dflash, dspark, eagle, functional, kernel, launched, legacy, process, realprocess, sampling, serving, vllm  # noqa: F401 - registers
from simacc.zoo.base import REGISTRY as ENTRIES
from simacc.zoo.base import Entry

MUTANTS = {name: e for name, e in ENTRIES.items() if not e.correct}
CORRECT = {name: e for name, e in ENTRIES.items() if e.correct}

__all__ = ["CORRECT", "ENTRIES", "MUTANTS", "Entry"]
