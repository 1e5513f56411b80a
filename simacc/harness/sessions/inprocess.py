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
from simacc.harness.call.runner import ImplementationHung, ProcessChanged, Runner, check_the_end
from simacc.harness.call.tamper import HarnessModified
from simacc.harness.config import devices, grad_modes
from simacc.harness.config.settings import DEFAULT_TIMEOUT
from simacc.harness.config.status import Status


@dataclass
class Result:
    """One property (one parametrization) on one device: its status, the examples
    Hypothesis ran up to the outcome (None when not a Hypothesis test), and for a failure
    the message and the summary of the (shrunk) case it failed on."""

    id: str
    device: str
    status: Status
    examples: int | None
    seconds: float
    message: str = ""
    case: str | None = None
    size: str = ""  # the failing case's size, as it says it: "bs=1 W=2" (or "B=" for a DFLASH block)


def run(implementation, device, properties, *, settings=None, seed=None, timeout=DEFAULT_TIMEOUT,
        one_failure=False, contexts=grad_modes.NAMES):
    """Each of ``properties`` (:class:`~simacc.harness.judging.catalogue.Property` records) against
    ``implementation`` on ``device``; a list of :class:`Result`, one per parametrization and
    grad mode (of ``contexts``, as a session selects them). ``settings`` (a Hypothesis
    settings object) and ``seed`` are what the Hypothesis properties run under.
    ``one_failure`` stops a parametrized property at its first failing parameter, and runs
    no property again in a later mode once it failed (enough to know a mutant is killed).

    The first mode runs in this process; each other one in a fresh process of its own
    (:mod:`simacc.harness.processes.fresh`) that imports the implementation anew, so that what it
    keeps from call to call is made and used in one mode, as in a server (CONTRACT.md §11.5)."""
    results = _in_mode(implementation, device, properties, settings, seed, timeout, one_failure, contexts, 0)
    for number in range(1, len(contexts)):
        failed = {r.id.split("[")[0] for r in results if r.status == Status.FAIL} if one_failure else set()
        ids = [(prop.module, prop.id) for prop in properties if prop.across_contexts and prop.id not in failed]
        if not ids:
            continue
        from simacc.harness.processes import fresh

        with fresh.Process(new=devices.is_cuda(device)) as process:
            process.send("simacc.harness.sessions.inprocess:_in_fresh_process", implementation.spec,
                         implementation.record, implementation.level, implementation.fixed_token_id, device, ids,
                         _portable(settings), seed, timeout, one_failure, contexts, number)
            try:
                kind, said = process.receive(None)
            except fresh.Died as e:
                said, kind = [Result(f"{pid}[{contexts[number]}]", device, Status.CRASHED, None, 0.0,
                                     f"the process running grad mode {contexts[number]} died: {e}") for _, pid in ids], "ok"
        if kind != "ok":
            raise RuntimeError(f"grad mode {contexts[number]}'s process: {said}")
        results += said
    return results


def _in_fresh_process(spec, record, level, fixed_token_id, device, ids, settings, seed, timeout, one_failure,
                      contexts, number):
    """(in a fresh process) The properties ``ids`` (``(module, id)`` pairs) in grad mode
    ``contexts[number]`` only, of the implementation ``spec`` of contract ``record``."""
    import importlib

    from simacc.harness.call import impl

    chosen = [getattr(importlib.import_module(module), f"test_{pid}").simacc_property for module, pid in ids]
    loaded = impl.load(spec, (record,), record.name, level, fixed_token_id)
    if settings is not None:
        import hypothesis

        settings = hypothesis.settings(**settings)
    return _in_mode(loaded, device, chosen, settings, seed, timeout, one_failure, contexts, number)


_SETTINGS = ("max_examples", "derandomize", "database", "verbosity", "phases", "stateful_step_count",
             "report_multiple_bugs", "suppress_health_check", "deadline", "print_blob", "backend")


def _portable(settings):
    """Hypothesis ``settings`` as a dict that survives pickling (a pickled settings object
    loses its "not set" marks)."""
    if settings is None:
        return None
    return {name: getattr(settings, name) for name in _SETTINGS if hasattr(settings, name)}


def _in_mode(implementation, device, properties, settings, seed, timeout, one_failure, contexts, number):
    """The results of ``properties`` in grad mode ``contexts[number]`` (a property that runs
    in the first mode only has none in another). What a thread of the implementation's changed in
    the process outside its calls, found at the end, fails the last (as a session's last test)."""
    results, start = [], process_state.started()
    for prop in properties:
        modes = prop.contexts(contexts)
        if number >= len(modes):
            continue
        context = modes[number]
        for suffix, params in prop.parametrizations():
            shown = "-".join(part for part in (suffix, context if prop.across_contexts else "") if part)
            name = f"{prop.id}[{shown}]" if shown else prop.id
            results.append(run_one(prop, name, params, implementation, device, settings, seed, timeout, context))
            if one_failure and results[-1].status == Status.FAIL:
                break
    try:
        check_the_end(implementation, start)
    except ProcessChanged as e:
        if results:  # a failure of the last property's own is kept before it
            last = results[-1]
            said = _message(e) if last.status != Status.FAIL else f"{last.message}; and then: {_message(e)}"
            results[-1] = dataclasses.replace(last, status=Status.FAIL, message=said)
    return results


def run_one(prop, name, params, implementation, device, settings, seed, timeout, context=None):
    """One parametrization of one property, as a :class:`Result`."""
    reason = prop.not_applicable(implementation, device, params)
    if reason:
        return Result(name, device, Status.NOT_APPLICABLE, None, 0.0, reason)
    missing = prop.unavailable(device)
    if missing:
        return Result(name, device, Status.SKIPPED, None, 0.0, missing)
    import pytest
    from hypothesis.reporting import with_reporter

    start = time.perf_counter()
    with Runner(implementation, device, timeout, settings, seed, context=context) as runner:
        try:
            # Hypothesis's own report (the falsifying example) is not wanted here: the result says it
            with with_reporter(lambda text: None):
                prop.run(runner, **params)
            tamper.check(full=True, when="during this property")
        except pytest.skip.Exception as e:
            return Result(name, device, Status.SKIPPED, None, time.perf_counter() - start, str(e))
        except (Exception, ImplementationHung, HarnessModified) as e:  # noqa: BLE001 - a failing property is the result
            case = runner.last[0] if runner.last else None
            status = Status.HUNG if isinstance(e, ImplementationHung) else Status.FAIL
            return Result(name, device, status, runner.examples, time.perf_counter() - start, _message(e),
                          case and case.summary(), case and case.size_text())
    return Result(name, device, Status.PASS, runner.examples, time.perf_counter() - start)


def _message(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
