"""Running properties against an implementation in this process, without pytest.

``simacc check`` runs the properties under pytest (xfails, repro files, crash isolation).
The zoo needs something lighter: dozens of implementations, each through a few properties,
where starting a pytest process per implementation cost more than the properties
themselves. Here each :class:`~simacc.harness.judging.catalogue.Property` is run directly, through
the same :meth:`~simacc.harness.judging.catalogue.Property.run` the pytest plugin uses, once per
parametrization (and grad mode, for a property that runs in each), with a fresh
:class:`~simacc.harness.call.runner.Runner` under the given Hypothesis settings (so the CI zoo can
skip shrinking). A server runs one grad mode per process (CONTRACT.md §11.5), so only the
first mode runs in this process: each other runs in a fresh process of its own
(:mod:`simacc.harness.processes.fresh`).
"""

import dataclasses
import time
from dataclasses import dataclass

from simacc.harness.call import process_state, tamper
from simacc.harness.call.runner import ImplementationHung, ProcessChanged, Runner, check_the_end, status_of
from simacc.harness.call.tamper import HarnessModified
from simacc.harness.config import devices, grad_modes
from simacc.harness.config.settings import DEFAULT_TIMEOUT
from simacc.harness.config.status import Result, Status


@dataclass(frozen=True)
class Options:
    """How :func:`run` runs its properties: on ``device``, under ``settings`` (a Hypothesis
    settings object, None: simacc's ``default`` profile) and ``seed``, each call with a time
    limit of ``timeout`` seconds, in the grad modes ``contexts``; ``one_failure``: see :func:`run`."""

    device: str
    settings: object = None
    seed: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    one_failure: bool = False
    contexts: tuple = grad_modes.NAMES


def run(implementation, device, properties, *, settings=None, seed=None, timeout=DEFAULT_TIMEOUT,
        one_failure=False, contexts=grad_modes.NAMES):
    """Each of ``properties`` (:class:`~simacc.harness.judging.catalogue.Property` records) against
    ``implementation`` on ``device``; a list of :class:`~simacc.harness.config.status.Result`,
    one per test of each (``Property.tests``, as a session's collection takes them, in the
    grad modes ``contexts``). ``settings`` (a Hypothesis settings object) and ``seed`` are what the
    Hypothesis properties run under. ``one_failure`` stops a parametrized property at its
    first failing parameter, and runs no property again in a later mode once it failed
    (enough to know a mutant is killed).

    The first mode runs in this process; each other one in a fresh process of its own
    (:mod:`simacc.harness.processes.fresh`) that imports the implementation anew, so that what it
    keeps from call to call is made and used in one mode, as in a server (CONTRACT.md §11.5)."""
    how = Options(device, settings, seed, timeout, one_failure, tuple(contexts))
    results = _in_mode(implementation, properties, how, 0)
    for number in range(1, len(how.contexts)):
        failed = {r.id.split("[")[0] for r in results if r.status == Status.FAIL} if one_failure else set()
        later = [prop for prop in properties if prop.across_contexts and prop.id not in failed]
        if not later:
            continue
        from simacc.harness.processes import fresh

        with fresh.Process(new=devices.is_cuda(device)) as process:
            process.send("simacc.harness.sessions.inprocess:_in_fresh_process", implementation.spec,
                         implementation.record, implementation.level, implementation.fixed_token_id,
                         [(prop.module, prop.id) for prop in later],
                         dataclasses.replace(how, settings=_portable(settings)), number)
            try:
                kind, said = process.receive(None)
            except fresh.Died as e:  # each test the process was to run, named as it would have named it
                said, kind = [Result(test.name, device, Status.CRASHED, None, 0.0,
                                     f"the process running grad mode {test.context} died: {e}")
                              for prop in later for test in _tests(prop, how, number)], "ok"
        if kind != "ok":
            raise RuntimeError(f"grad mode {how.contexts[number]}'s process: {said}")
        results += said
    return results


def _in_fresh_process(spec, record, level, fixed_token_id, ids, how, number):
    """(in a fresh process) The properties ``ids`` (``(module, id)`` pairs) in grad mode
    ``how.contexts[number]`` only, of the implementation ``spec`` of contract ``record``."""
    import importlib

    from simacc.harness.call import impl

    chosen = [getattr(importlib.import_module(module), f"test_{pid}").simacc_property for module, pid in ids]
    loaded = impl.load(spec, (record,), record.name, level, fixed_token_id)
    if how.settings is not None:
        import hypothesis

        how = dataclasses.replace(how, settings=hypothesis.settings(**how.settings))
    return _in_mode(loaded, chosen, how, number)


_SETTINGS = ("max_examples", "derandomize", "database", "verbosity", "phases", "stateful_step_count",
             "report_multiple_bugs", "suppress_health_check", "deadline", "print_blob", "backend")


def _portable(settings):
    """Hypothesis ``settings`` as a dict that survives pickling (a pickled settings object
    loses its "not set" marks)."""
    if settings is None:
        return None
    return {name: getattr(settings, name) for name in _SETTINGS if hasattr(settings, name)}


def _in_mode(implementation, properties, how, number):
    """The results of ``properties`` in grad mode ``how.contexts[number]`` (a property that
    runs in the first mode only has none in another). What a thread of the implementation's
    changed in the process outside its calls, found at the end, fails the last (as a
    session's last test)."""
    results, start = [], process_state.started()
    for prop in properties:
        for test in _tests(prop, how, number):
            results.append(run_one(prop, test, implementation, how))
            if how.one_failure and results[-1].status == Status.FAIL:
                break
    try:
        check_the_end(implementation, start)
    except ProcessChanged as e:
        if results:  # a failure of the last property's own is kept before it
            last = results[-1]
            said = _message(e) if last.status != Status.FAIL else f"{last.message}; and then: {_message(e)}"
            results[-1] = dataclasses.replace(last, status=Status.FAIL, message=said)
    return results


def _tests(prop, how, number):
    """The tests of ``prop`` that grad mode ``how.contexts[number]`` runs, as the plugin
    collects them (the CPU is always there to compare a CUDA device with)."""
    return [t for t in prop.tests([how.device], how.contexts, cpu=True) if t.context == how.contexts[number]]


def run_one(prop, test, implementation, how):
    """One test of one property (a ``Property.tests`` entry) run as ``how`` says, as a
    :class:`~simacc.harness.config.status.Result`."""
    name, device = test.name, test.device
    reason = prop.not_applicable(implementation, device, test.params)
    if reason:
        return Result(name, device, Status.NOT_APPLICABLE, None, 0.0, reason)
    if test.skip:
        return Result(name, device, Status.SKIPPED, None, 0.0, test.skip)
    import pytest
    from hypothesis.reporting import with_reporter

    start = time.perf_counter()
    with Runner(implementation, device, how.timeout, how.settings, how.seed, context=test.context) as runner:
        try:
            # Hypothesis's own report (the falsifying example) is not wanted here: the result says it
            with with_reporter(lambda text: None):
                prop.run(runner, **test.params)
            tamper.check(full=True, when="during this property")
        except (Exception, ImplementationHung, HarnessModified, pytest.skip.Exception) as e:  # noqa: BLE001 - the result
            status, seconds = status_of(e), time.perf_counter() - start
            if status == Status.SKIPPED:
                return Result(name, device, status, None, seconds, str(e))
            case = runner.last[0] if runner.last else None
            return Result(name, device, status, runner.examples, seconds, _message(e), case and case.summary(),
                          case and case.size_text())
    return Result(name, device, Status.PASS, runner.examples, time.perf_counter() - start)


def _message(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
