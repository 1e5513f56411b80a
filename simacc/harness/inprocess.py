"""Running properties against an implementation in this process, without pytest.

``simacc check`` runs the properties under pytest (xfails, repro files, crash isolation).
The zoo needs something lighter: dozens of implementations, each through a few properties,
where starting a pytest process per implementation cost more than the properties
themselves. Here each :class:`~simacc.harness.catalogue.Property` is run directly, through
the same :meth:`~simacc.harness.catalogue.Property.run` the pytest plugin uses, once per
parametrization (and grad mode, for a property that runs in each), with a fresh
:class:`~simacc.harness.runner.Runner` under the given Hypothesis settings (so the CI zoo can
skip shrinking).
"""

import time
from dataclasses import dataclass

from simacc.harness import grad_modes, tamper
from simacc.harness.runner import ImplementationHung, Runner
from simacc.harness.settings import DEFAULT_TIMEOUT
from simacc.harness.status import Status
from simacc.harness.tamper import HarnessModified


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
    size: str = ""  # the failing case's size: "bs=1 W=2" (or "B=" for a DFLASH block)


def run(implementation, device, properties, *, settings=None, seed=None, timeout=DEFAULT_TIMEOUT,
        one_failure=False, contexts=grad_modes.NAMES):
    """Each of ``properties`` (:class:`~simacc.harness.catalogue.Property` records) against
    ``implementation`` on ``device``; a list of :class:`Result`, one per parametrization and
    grad mode (of ``contexts``, as a session selects them). ``settings`` (a Hypothesis
    settings object) and ``seed`` are what the Hypothesis properties run under.
    ``one_failure`` stops a parametrized property at its first failing parameter (enough to
    know a mutant is killed)."""
    results = []
    for prop in properties:
        runs = [(suffix, params, context) for suffix, params in prop.parametrizations()
                for context in prop.contexts(contexts)]
        for suffix, params, context in runs:
            shown = "-".join(part for part in (suffix, context if prop.across_contexts else "") if part)
            name = f"{prop.id}[{shown}]" if shown else prop.id
            results.append(run_one(prop, name, params, implementation, device, settings, seed, timeout, context))
            if one_failure and results[-1].status == Status.FAIL:
                break
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
                          case and case.summary(), case and _size(case))
    return Result(name, device, Status.PASS, runner.examples, time.perf_counter() - start)


def _size(case):
    from simacc.harness.cases import DflashCase

    return f"bs={case.bs} {'B' if isinstance(case, DflashCase) else 'W'}={case.max_len}"


def _message(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
