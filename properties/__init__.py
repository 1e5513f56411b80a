"""The property catalogue: the claims every conforming implementation must satisfy.

Each ``test_*`` function of a ``test_*`` module here is one property, declared with
:func:`simacc.harness.judging.catalogue.claim`; its id is the function's name without ``test_``.
Installed, this folder is ``simacc.properties``: run it with
``pytest --pyargs simacc.properties --simacc-impl IMPL``.
"""

import functools
import importlib
import pkgutil

from simacc.harness.call.judges import judged_with
from simacc.harness.judging.catalogue import checks, property_of
from simacc.strategies import CONTRACTS

REGRESSIONS = "test_regressions"  # the corpus replay: it runs first
judged_with(f"{__name__}.support", "simacc.strategies")  # the oracles and the cases' strategies judge too
checks(CONTRACTS)  # the contracts whose implementations it checks: a pytest session loads one against them


def modules():
    """The names of the property modules, the corpus replay first (as the suite runs them)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("test_"))
    return [f"{__name__}.{name}" for name in sorted(names, key=lambda n: n != REGRESSIONS)]


def every_property():
    """Every :class:`~simacc.harness.judging.catalogue.Property`, in module order."""
    found = []
    for name in modules():
        module = importlib.import_module(name)
        found += [p for p in map(property_of, vars(module).values()) if p is not None]
    return found


def designs():
    """Every statistical check with a fixed design (:class:`~simacc.properties.support.Design`),
    from the modules that declare them (``designs()``), in module order: CONTRACT.md §9.4's power
    figures and ``benchmarks/power.py`` read them."""
    found = []
    for name in modules():
        module = importlib.import_module(name)
        found += module.designs() if hasattr(module, "designs") else []
    return found


def find(pid):
    """The property with id ``pid``; ``LookupError`` when there is none."""
    try:
        return _by_id()[pid]
    except KeyError:
        raise LookupError(f"unknown property id {pid!r} (no test_{pid} in simacc.properties)") from None


@functools.cache
def _by_id():
    """Every property by its id, listed once a process: a session collecting its regression
    corpus looks up a property for each file, and listing them all takes a millisecond."""
    return {prop.id: prop for prop in every_property()}


def of_repro(record):
    """The property a repro record names, checked against the record's contract;
    :class:`~simacc.harness.model.repro_files.ReproError` (one line) when unusable."""
    from simacc.harness.model.repro_files import ReproError

    try:
        prop = find(record.property)
    except LookupError as e:
        raise ReproError(str(e)) from None
    if record.contract not in {c.name for c in prop.contracts}:
        raise ReproError(f"property {prop.id!r} does not apply to contract {record.contract!r}")
    return prop
