"""The property catalogue as data: finding a property by id and replaying its body on a
case, outside pytest (what repro files and the regression corpus need).

A property is replayable when it is a ``@given(case=...)`` test of ``impl``, ``case`` and
perhaps ``device``: its Hypothesis-free body, ``fn.hypothesis.inner_test``, then checks
exactly what the suite checks.
"""

import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass

from simacc.impl import CONTRACTS


@dataclass(frozen=True)
class Property:
    """A property of the catalogue: its id, module, Hypothesis-wrapped test and contracts."""

    id: str
    module: str
    test: object
    contracts: tuple

    @property
    def across_devices(self):
        """True for a property comparing a CUDA device (its ``device``) with the CPU."""
        return _marked(self.test, "across_devices") is not None

    def replay(self, runner, device, case):
        """Run the property's body on ``case``; the exception it raised, or None."""
        from simacc.observe import ImplementationHung

        try:
            self.test.hypothesis.inner_test(impl=runner, device=device, case=case)
        except (Exception, ImplementationHung) as e:  # noqa: BLE001 - a failing property is a result here
            return e
        return None


def _marked(test, name):
    """The closest mark ``name`` on ``test`` or its module, or None."""
    for holder in (test, sys.modules.get(test.__module__)):
        marks = getattr(holder, "pytestmark", [])
        for mark in marks if isinstance(marks, list) else [marks]:
            if mark.name == name:
                return mark
    return None


def _contracts(test):
    mark = _marked(test, "contracts")
    return tuple(mark.args) if mark is not None else CONTRACTS


def _parameters(test):
    inner = getattr(getattr(test, "hypothesis", None), "inner_test", None)
    return set(inspect.signature(inner).parameters) if inner is not None else set()


def replayable(test):
    """Whether a case can replay ``test``: a ``@given(case=...)`` test of ``impl``,
    ``device`` and ``case``."""
    return _parameters(test) == {"impl", "device", "case"}


def _properties_in(module_name):
    module = importlib.import_module(module_name)
    return {
        name.removeprefix("test_"): Property(name.removeprefix("test_"), module_name, test, _contracts(test))
        for name, test in vars(module).items()
        if name.startswith("test_") and replayable(test)
    }


def property_modules():
    """Names of the property modules of the ``properties`` package (corpus replay excluded)."""
    import properties

    return [
        f"properties.{m.name}"
        for m in pkgutil.iter_modules(properties.__path__)
        if m.name.startswith("test_") and m.name != "test_regressions"
    ]


def find_property(pid, module_hint=""):
    """The :class:`Property` with id ``pid``, looked up in ``module_hint`` first (only if it
    is one of the property modules: a file never chooses what gets imported)."""
    modules = property_modules()
    if module_hint in modules:
        modules.remove(module_hint)
        modules.insert(0, module_hint)
    for name in modules:
        found = _properties_in(name).get(pid)
        if found is not None:
            return found
    raise LookupError(f"unknown property id {pid!r} (no test_{pid} in the properties package)")
