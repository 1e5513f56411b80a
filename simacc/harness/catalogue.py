"""The property catalogue as data: finding a property by id, replaying its body on a case,
and listing every property with its parametrizations, outside pytest (what repro files, the
regression corpus and the in-process runs of :mod:`simacc.harness.inprocess` need).

A property is replayable when it is a ``@given(case=...)`` test of ``impl``, ``device`` and
``case``: its Hypothesis-free body, ``fn.hypothesis.inner_test``, then checks exactly what
the suite checks.
"""

import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass

from simacc.harness.impl import CONTRACTS


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

    @property
    def levels(self):
        """The conformance levels the property applies to (``levels`` mark; default both)."""
        mark = _marked(self.test, "levels")
        return tuple(mark.args) if mark is not None else ("exact", "semantic")

    @property
    def is_hypothesis_test(self):
        return hasattr(self.test, "hypothesis")

    @property
    def checks_an_implementation(self):
        """False for the properties of simacc's own caller checks (no ``impl``)."""
        return "impl" in _signature(self.test)

    def parametrizations(self):
        """``[(suffix, kwargs, contracts)]``: one per ``pytest.mark.parametrize`` case (the
        suffix is pytest's id, ``contracts`` a ``pytest.param``'s own ``contracts`` mark or
        None), or ``[("", {}, None)]`` for a property with no parametrize mark."""
        import pytest

        found = [("", {}, None)]
        for mark in reversed(getattr(self.test, "pytestmark", [])):
            if mark.name != "parametrize":
                continue
            names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
            cases = []
            for value in mark.args[1]:
                param = value if isinstance(value, type(pytest.param(None))) else pytest.param(value)
                values = param.values if len(names) > 1 else param.values[:1]
                pid = param.id if param.id is not None else "-".join(str(v) for v in values)
                marked = [m for m in param.marks if m.name == "contracts"]
                cases.append((pid, dict(zip(names, values)), tuple(marked[0].args) if marked else None))
            found = [(f"{a}-{b}".strip("-"), {**ka, **kb}, cb or ca) for a, ka, ca in found for b, kb, cb in cases]
        return found

    def replay(self, runner, device, case):
        """Run the property's body on ``case``; the exception it raised, or None."""
        from simacc.harness.runner import ImplementationHung

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


def _signature(test):
    """The parameters of the test's own body (Hypothesis-wrapped or not)."""
    inner = getattr(getattr(test, "hypothesis", None), "inner_test", test)
    return set(inspect.signature(inner).parameters)


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


def property_modules(corpus=False):
    """Names of the property modules of the ``properties`` package (the corpus replay
    module only with ``corpus``)."""
    import properties

    return [
        f"properties.{m.name}"
        for m in pkgutil.iter_modules(properties.__path__)
        if m.name.startswith("test_") and (corpus or m.name != "test_regressions")
    ]


def every_property():
    """Every property of the catalogue in module order, the corpus replay first (as the
    suite runs it), caller checks included."""
    found = []
    for module_name in sorted(property_modules(corpus=True), key=lambda m: m != "properties.test_regressions"):
        module = importlib.import_module(module_name)
        found += [
            Property(name.removeprefix("test_"), module_name, test, _contracts(test))
            for name, test in vars(module).items()
            if name.startswith("test_") and callable(test)
        ]
    return found


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
