"""The catalogue's record type: one :class:`Property` per claim, declared with :func:`claim`.

In the manner of PyTorch's OpInfo, a property is a record: its id, the contracts and levels
it applies to, the strategies of its drawn arguments, its parametrizations and its body. The
pytest plugin, the in-process runs, repro files and the regression corpus all work from the
records; :func:`simacc.properties.every_property` lists them.

A body takes ``simacc``, a :class:`~simacc.harness.call.runner.Runner` (the implementation under
test on one device, with the session's Hypothesis settings), and its drawn arguments. Its
Hypothesis test is built each time it runs, from the strategies for the implementation under
test (a strategy may be a function of the implementation: a legacy one has no real mode) and
the runner's settings (:meth:`Property.hypothesis_test`). So simacc's profiles reach simacc's
properties and nothing else, and nothing about a session is fixed when a property module is
imported. The pytest plugin gives each collected item the same test, built for its
implementation and device, so that Hypothesis's own tools (``-m hypothesis``, HypoFuzz) take
the item for the Hypothesis test it is; pytest still runs the record (:meth:`Property.run`).

A stateful property (``machine=True``: the serving loop, CONTRACT.md §11.2) has a body that
returns a Hypothesis ``RuleBasedStateMachine`` for the runner; Hypothesis runs programs of
its rules. A program of up to :data:`STEPS` steps costs about as many calls as that many
examples, so such a property runs one program for every :data:`PROGRAM_SHARE` examples of
the profile (or of ``--simacc-max-examples``), at least :data:`MIN_PROGRAMS` (or as many
as the examples, when fewer), after the machine's fixed programs (``fixed_programs()``: knobs
chosen where a check is most sensitive, run like explicit examples). Its machine records the
steps it ran, and replays them (``replay(program)``) from a repro file.
"""

import fnmatch
import functools
import inspect
import re
import sys
import unittest
from dataclasses import dataclass

from simacc.harness.config import contracts, devices

STEPS = 15  # steps of a serving program at most (Hypothesis's stateful_step_count)
PROGRAM_SHARE = 10  # a stateful property runs one program for this many examples of the profile
MIN_PROGRAMS = 10
@dataclass(frozen=True, eq=False)
class Property:
    """One claim of the catalogue. ``given`` maps each drawn argument to a strategy or to a
    function of the :class:`~simacc.harness.call.impl.Implementation` returning one. ``needs``
    says why it cannot run here (a missing package; None when it can). ``contracts_of``,
    given one parametrization's arguments, narrows the contracts to those it applies to.
    ``across_contexts``: it runs in every grad mode selected, not only the first
    (:mod:`simacc.harness.config.grad_modes`). ``machine``: a stateful property, whose body returns
    a state machine (see the module). ``test`` is the function pytest collects (its item then
    holds the property's Hypothesis test, :meth:`hypothesis_test`).
    ``applies_when``, given one parametrization's arguments, says why it does not apply to
    them (a setting it needs was not given), or None. ``first``: it runs before every other
    property of a session (known failures before random ones). ``recorded_as``, given one
    parametrization's arguments, names the property a repro file of its failure replays (see
    :meth:`recorded_property`)."""

    id: str
    module: str
    body: object
    given: dict
    contracts: tuple
    levels: tuple = contracts.LEVELS
    across_devices: bool = False
    needs: object = None
    contracts_of: object = None
    params: object = None
    across_contexts: bool = False
    machine: bool = False
    test: object = None
    applies_when: object = None
    first: bool = False
    recorded_as: object = None

    @property
    def summary(self):
        """Its claim in one line: its docstring's first line, or its module's."""
        for doc in (self.body.__doc__, getattr(sys.modules.get(self.module), "__doc__", None)):
            if doc and doc.strip():
                return doc.strip().splitlines()[0]
        return self.id.replace("_", " ")

    @property
    def is_hypothesis_test(self):
        return bool(self.given) or self.machine

    @property
    def sections(self):
        """The sections of CONTRACT.md the property checks, as its module's summary cites them
        (``"CONTRACT.md §4.2, §4.3"``; empty when it cites none)."""
        summary = (getattr(sys.modules.get(self.module), "__doc__", None) or "").split("\n\n")[0]
        found = list(dict.fromkeys(re.findall(r"§\d+(?:\.\d+)?", summary)))
        return f"CONTRACT.md {', '.join(found)}" if found else ""

    @property
    def replayable(self):
        """Whether a repro file replays it: its one drawn argument is ``case`` (or it is
        stateful: the file holds a program), without parameters."""
        return (set(self.given) == {"case"} or self.machine) and not self.parametrizations()[0][1]

    def recorded_property(self, params):
        """``(id, module)`` of the property a repro file of a failure with ``params`` (one
        parametrization's arguments) names: its own when it is :attr:`replayable`, what its
        ``recorded_as`` says when it has one (a corpus case: the property that found it); None
        when no file could replay the failure."""
        if self.recorded_as is not None:
            return self.recorded_as(**params)
        return (self.id, self.module) if self.replayable else None

    def contexts(self, selected):
        """The grad modes it runs in, of those ``selected`` (in order): each, or the first."""
        return tuple(selected) if self.across_contexts else tuple(selected[:1])

    def applies_to(self, params=None):
        """The contracts the property (with ``params``, one parametrization) applies to."""
        return self.contracts_of(**params) if self.contracts_of is not None and params else self.contracts

    def not_applicable(self, impl, device, params=None):
        """Why the property does not apply to ``impl`` on ``device`` (with ``params``, one
        parametrization): its contract, its level, or a CPU where a CUDA device is compared
        with the CPU; None when it applies."""
        contracts_ = self.applies_to(params)
        unless = self.applies_when(**params) if self.applies_when is not None and params is not None else None
        if unless:
            return unless
        if impl.record not in contracts_:
            return f"contract {impl.contract!r} (it applies to {', '.join(c.name for c in contracts_)})"
        if impl.level not in self.levels:
            return f"level {impl.level!r} (it needs the documented draws)"
        if self.across_devices and not devices.is_cuda(device):
            return f"it compares a CUDA device with the CPU, and {device} is not one"
        return None

    def unavailable(self, device):
        """Why it cannot run on ``device`` here (a missing device or package), or None."""
        return devices.unavailable(device) or (self.needs() if self.needs else None)

    def strategies(self, impl):
        return {name: s(impl) if callable(s) else s for name, s in self.given.items()}

    def run(self, runner, **params):
        """Check the property once against ``runner``: its Hypothesis test under the runner's
        settings (``runner.examples`` then says how many examples ran), or the plain body.
        Raises what the property raises."""
        runner.examples = None
        try:
            self._run(runner, params)
        except AssertionError as e:
            if self.sections and hasattr(e, "add_note"):  # shown under the traceback, in JUnit too
                e.add_note(f"the claim: {self.sections} ({self.id})")
            raise
        try:
            runner.check_process()  # whichever property's call changed the process fails (§11.4)
        except AssertionError as e:
            e.add_note("the claim: CONTRACT.md §11.4 (no call may change the process it runs in)")
            raise

    def _run(self, runner, params):
        if not self.is_hypothesis_test:
            from hypothesis import Phase

            if runner.hypothesis is not None and Phase.generate not in runner.hypothesis.phases:
                import pytest

                pytest.skip("not a Hypothesis test: an example database holds nothing of it")
            self.body(simacc=runner, **params)
            return
        import hypothesis
        from hypothesis.statistics import collector

        counts, outer = [], collector.value

        def note(statistics):
            counts.append(examples_run(statistics))
            if outer is not None:
                outer(statistics)

        from simacc.harness.config import profiles

        chosen = runner.hypothesis or profiles.for_session("default")
        if self.machine:
            tests, generates = [self._programs(runner, chosen, params)], True
        else:
            tests, generates = self._hypothesis_tests(runner, chosen, params)
        try:
            with collector.with_value(note):
                for test in tests:
                    try:
                        test(simacc=runner, **params)
                    except hypothesis.errors.FlakyFailure as e:
                        raise not_reproduced(e) from None
                    except unittest.SkipTest:  # Hypothesis's "no test cases": none stored for this key
                        if test is not tests[-1]:
                            continue
                        if not generates:
                            import pytest

                            pytest.skip("the example database holds no example of it")
                        raise
        finally:
            runner.examples = sum(counts) if counts else None

    def hypothesis_test(self, impl, device, params, chosen, seed=None):
        """The property's Hypothesis test for ``impl`` on ``device`` with ``params`` (one
        parametrization's arguments) under the settings ``chosen``, seeded with ``seed``:
        ``@given`` its strategies for ``impl``, of the body under :meth:`example_key`,
        called as ``test(simacc=runner, **params)``. The plugin gives it to each collected
        item, where Hypothesis's own tools find it (``-m hypothesis``, HypoFuzz's
        ``hypothesis fuzz``); a stateful property's is a program of its machine (a share of
        the examples, :data:`STEPS` steps at most)."""
        import hypothesis

        key = self.example_key(impl, device, params)
        if self.machine:
            from hypothesis import strategies as st

            examples = chosen.max_examples
            programs = max(min(MIN_PROGRAMS, examples), examples // PROGRAM_SHARE)
            # one bug reported: the program the runner keeps for the repro file is the one that failed
            chosen = hypothesis.settings(chosen, max_examples=programs, stateful_step_count=STEPS,
                                         report_multiple_bugs=False)
            test = hypothesis.given(data=st.data())(_Keyed(self.body, key, machine=chosen))
        else:
            test = hypothesis.given(**self.strategies(impl))(_Keyed(self.body, key))
        test = chosen(test)
        test = test if seed is None else hypothesis.seed(seed)(test)
        test.simacc_property = self  # what the plugin knows the item by (plugin.fixtures.item_property)
        return test

    def _hypothesis_tests(self, runner, chosen, params):
        """``(tests, generates)``: the Hypothesis tests one run is, in order, and whether they
        generate examples (``replay`` only replays the database). A seeded run is two tests:
        Hypothesis keeps no database for a seeded test, so the database's examples come first,
        on their own."""
        import hypothesis

        from simacc.harness.config import profiles

        def built(under, seed=None):
            return self.hypothesis_test(runner.impl, runner.device, params, under, seed)

        generates = hypothesis.Phase.generate in chosen.phases
        seed = runner.seed if generates else None  # a seed picks generated examples, nothing else
        tests = [built(chosen, seed)]
        if seed is not None and chosen.database is not None:
            tests.insert(0, built(hypothesis.settings(chosen, phases=profiles.REPLAY)))
        return tests, generates

    def example_key(self, impl, device, params):
        """What, besides the body's source, keys the examples of ``impl`` on ``device`` with
        ``params`` in the database (bytes): the property and its parameters, and the
        implementation under test by name, contract and level on a kind of device. Never a
        path: a file IMPL is named by its file's name, so runners with different checkouts
        share one key."""
        from simacc.harness.call.impl import parse

        where, attribute, _ = parse(impl.spec)
        name = where.replace("\\", "/").rpartition("/")[2] + ":" + attribute
        kind = str(device).split(":")[0]
        return repr((self.id, sorted((k, repr(v)) for k, v in params.items()), name, impl.contract, impl.level,
                     kind)).encode()

    def _programs(self, runner, chosen, params):
        """The stateful property's run: its machine's fixed programs (knobs chosen where a
        check is most sensitive) as explicit examples, then its Hypothesis test."""
        import hypothesis

        test = self.hypothesis_test(runner.impl, runner.device, params, chosen, runner.seed)

        def programs(**kwargs):
            if hypothesis.Phase.explicit in chosen.phases:
                for program in self.body(simacc=runner).fixed_programs():
                    self.body(simacc=runner).replay(program)
            test(**kwargs)

        return programs

    def replay(self, runner, case):
        """Run the body on ``case``; the exception it raised, or None. A stateful property
        runs its machine on the program ``case`` twice: an implementation that keeps state
        across calls may have failed it in the test run from state an earlier program left,
        which a clean start lacks and the first run leaves."""
        from simacc.harness.call.runner import HarnessModified, ImplementationHung

        try:
            if self.machine:
                for _ in range(2):
                    self.body(simacc=runner).replay(case)
            else:
                self.body(simacc=runner, case=case)
        except (Exception, ImplementationHung, HarnessModified) as e:  # noqa: BLE001 - a failing property is a result here
            return e
        return None

    def applies_to_case(self, contract, case):
        """Whether an implementation of ``contract`` (a record) can be asked ``case`` (for a
        stateful property, a program) by this property."""
        if contract not in self.contracts:
            return False
        if self.machine:
            return getattr(case, "is_program", False) and case.variant in contract.variants
        return contract.accepts(case)

    def parametrizations(self, settings=None):
        """``[(suffix, kwargs)]``: one per combination of its ``params`` values (the suffix is
        how pytest names it), or ``[("", {})]`` for a property without."""
        import pytest

        given = self.params(settings) if callable(self.params) else self.params or {}
        found = [("", {})]
        for name, values in given.items():
            cases = []
            for value in values:
                param = value if isinstance(value, type(pytest.param(None))) else pytest.param(value)
                cases.append((param.id if param.id is not None else str(param.values[0]), {name: param.values[0]}))
            found = [(f"{a}-{b}".strip("-"), {**ka, **kb}) for a, ka in found for b, kb in cases]
        return found

    def tests(self, selected, contexts, settings=None, cpu=None):
        """Every :class:`Test` the property runs as on the devices ``selected`` in the grad
        modes ``contexts`` (in order), its parameters those of the session's ``settings`` (None
        outside one): what both engines run, the pytest plugin and
        :mod:`simacc.harness.sessions.inprocess`. A property across devices runs on each CUDA
        device, compared with the CPU where ``cpu`` says it may be (default: where a CPU is
        selected), and on none has one CPU test, which does not apply."""
        cuda = [d for d in selected if devices.is_cuda(d)]
        cpu = len(cuda) < len(selected) if cpu is None else cpu
        if not self.across_devices:
            on = [(d, self.unavailable(d)) for d in selected]
        elif not cuda:
            on = [(selected[0], None)]
        elif not cpu:
            on = [(d, NO_CPU) for d in cuda]
        else:
            on = [(d, self.unavailable(d)) for d in cuda]
        named = self.across_contexts  # a mode in the name only where it varies
        return [Test(self.id, "-".join(p for p in (suffix, device, mode if named else "") if p), params, device, mode,
                     skip)
                for suffix, params in self.parametrizations(settings) for device, skip in on
                for mode in self.contexts(contexts)]


NO_CPU = "it compares this CUDA device with the CPU, and the devices selected (--device) include no CPU"


@dataclass(frozen=True)
class Test:
    """One test of a property: one parametrization's arguments (``params``) on one
    ``device`` in one grad mode (``context``), named ``id[suffix]`` as pytest names it;
    ``skip`` says why it cannot run on that device here (None when it can)."""

    id: str
    suffix: str
    params: dict
    device: str
    context: str
    skip: str | None = None

    @property
    def name(self):
        return f"{self.id}[{self.suffix}]"


class _Keyed:
    """A property's body as Hypothesis runs it, keyed by :meth:`Property.example_key`.

    Hypothesis keys a test by its function's source and signature (the body's, through
    ``__wrapped__``) and ``_hypothesis_internal_add_digest``: here the example key, since the
    source is the same for every implementation and device, and a failure found on CUDA
    would be replayed on the CPU, pass there, and be deleted from a shared database.
    Hypothesis's pytest plugin and HypoFuzz set that attribute to the item's node id, which
    names neither the implementation nor the kind of device, so it stays the example key:
    a find of HypoFuzz's is then stored where ``simacc check`` and ``repro`` replay it.

    Called with the body's arguments; a ``simacc_context`` (the grad mode, which HypoFuzz
    passes on from the item's parameters) is the runner's already. With ``machine`` (the
    settings of a stateful property's programs) it takes Hypothesis's ``data`` and runs one
    program of the machine the body returns, as ``run_state_machine_as_test`` would."""

    def __init__(self, body, key, machine=None):
        functools.update_wrapper(self, body)
        self.__code__ = body.__code__  # where Hypothesis and pytest say the test is: the body's file and line
        self._key, self._program, self._arguments = key, None, {}
        signature = inspect.signature(body)
        if machine is not None:
            from hypothesis.stateful import get_state_machine_test

            self._program = get_state_machine_test(self._machine, settings=machine).hypothesis.inner_test
            data = inspect.Parameter("data", inspect.Parameter.POSITIONAL_OR_KEYWORD)
            signature = signature.replace(parameters=[*signature.parameters.values(), data])
        self.__signature__ = signature

    @property
    def _hypothesis_internal_add_digest(self):
        return self._key

    @_hypothesis_internal_add_digest.setter
    def _hypothesis_internal_add_digest(self, node_id):
        pass  # the example key stays (see the class)

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True
        kwargs.update(zip(self.__signature__.parameters, args))  # Hypothesis passes what it can by position
        kwargs.pop("simacc_context", None)
        if self._program is None:
            return self.__wrapped__(**kwargs)
        data = kwargs.pop("data")
        self._arguments = kwargs
        return self._program(data)

    def _machine(self):
        return self.__wrapped__(**self._arguments)


_CHECKED = []  # the contracts the catalogue checks, as it declared them (checks)


def checks(records):
    """Declare the contracts the catalogue checks (``simacc.properties`` declares
    ``simacc.strategies.CONTRACTS`` on import, as it names its judges): a pytest session loads its
    implementation against them (:func:`checked`), once its property modules are imported."""
    _CHECKED[:] = records


def checked():
    """The contracts :func:`checks` declared (none before the catalogue is imported)."""
    return tuple(_CHECKED)


def claim(*applies_to, levels=contracts.LEVELS, across_devices=False, needs=None, contracts_of=None, params=None,
          across_contexts=False, machine=False, applies_when=None, first=False, recorded_as=None, **given):
    """Declare the decorated ``test_*`` function a property of the contracts ``applies_to``
    (:class:`~simacc.harness.config.contracts.Contract` records).

    ``given`` names the strategies of its drawn arguments (see :class:`Property`); the
    function takes ``simacc`` and those, plus the arguments of ``params``: ``{name: [values]}``
    (a value may be a ``pytest.param`` with its id), or a function of the session's
    :class:`~simacc.harness.config.settings.Settings` (None outside a session) returning one,
    for a parametrization that depends on the session (never ``pytest.mark.parametrize``:
    both engines take the parameters from the record, :meth:`Property.tests`). ``across_contexts``,
    ``machine``, ``applies_when``, ``first`` and ``recorded_as`` are :class:`Property`'s.
    pytest collects a function of ``simacc`` and the parameters, which runs the property
    through its record (``test.simacc_property``).
    """
    if not applies_to or not all(isinstance(c, contracts.Contract) for c in applies_to):
        raise ValueError(f"claim() needs contract records (simacc.strategies.CONTRACTS), got {applies_to}")

    def decorate(body):
        names = list(inspect.signature(body).parameters)
        if names[:1] != ["simacc"] or not set(given) <= set(names):
            raise TypeError(f"{body.__name__} must take simacc first, then {sorted(given)}")
        arguments = [name for name in names[1:] if name not in given]

        def test(simacc, **kwargs):
            __tracebackhide__ = True
            prop.run(simacc, **kwargs)

        test.__name__ = test.__qualname__ = body.__name__
        test.__module__, test.__doc__ = body.__module__, body.__doc__
        test.__wrapped__ = body  # where pytest reports the test is: the body's file and line
        test.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in ("simacc", *arguments)]
        )
        prop = Property(body.__name__.removeprefix("test_"), body.__module__, body, dict(given), tuple(applies_to),
                        tuple(levels), across_devices, needs, contracts_of, params, across_contexts, machine, test,
                        applies_when, first, recorded_as)
        test.simacc_property = prop
        return test

    return decorate


NOT_REPRODUCED = ("it did not fail again when Hypothesis replayed it: what the implementation returns depends on "
                  "the calls before it (state kept across calls) or on chance (a draw the seed does not fix)")


def not_reproduced(flaky):
    """The failure inside Hypothesis's ``FlakyFailure`` (a failing example that passed when
    replayed), with a note that says so: reported as any failure is, its message first."""
    first = flaky
    while getattr(first, "exceptions", None):  # an exception group (a backport's on Python 3.10)
        first = first.exceptions[0]
    if first is flaky:
        return flaky
    first.add_note(NOT_REPRODUCED)
    return first


def selects(pattern, name):
    """Whether a ``--property`` pattern selects the test ``name`` (``id`` or ``id[params]``,
    the device last): the name or the id itself, ``id[device]`` for every parametrization on
    that device, or a shell pattern (``*``, ``?``) of the id, the name or the parameters;
    brackets stay literal (``[cpu]`` is a device, not a set of characters)."""
    pid, _, params = name.partition("[")
    params = params.removesuffix("]")
    if pattern in (name, pid):
        return True
    base, bracket, wanted = pattern.partition("[")
    if not bracket:
        return fnmatch.fnmatchcase(pid, pattern) or fnmatch.fnmatchcase(name, pattern)
    wanted = wanted.removesuffix("]")
    return bool(params) and fnmatch.fnmatchcase(pid, base) and (
        fnmatch.fnmatchcase(params, wanted) or params.rpartition("-")[2] == wanted)


def property_of(function):
    """The :class:`Property` a collected test function declares, or None."""
    return getattr(function, "simacc_property", None)


def examples_run(statistics):
    """How many examples Hypothesis ran to an outcome (passed or failed) before shrinking:
    the explicit, database-replay, generate and target phases. Shrink attempts and examples
    rejected by filters or ``assume`` are not counted. A failing test counts up to its first
    failure: Hypothesis finishes its batch of examples after that, which says nothing about
    how soon the property caught the bug."""
    count = 0
    for phase in ("explicit", "reuse", "generate", "target"):
        for case in statistics.get(f"{phase}-phase", {}).get("test-cases", ()):
            count += case["status"] in ("valid", "interesting")
            if case["status"] == "interesting":
                return count
    return count
