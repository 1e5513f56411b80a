"""Running the catalogue against an implementation in this process, without pytest
(issue #10).

``simacc check`` runs the properties under pytest (xfails, repro files, crash isolation).
The zoo needs something lighter: dozens of implementations, each through a few properties,
where starting a pytest process per implementation cost more than the properties
themselves. Here each property's test function is called directly, the way pytest would
call it: a Hypothesis property under the given settings (so the CI zoo can skip shrinking),
a parametrized one once per parameter, with the implementation under test swapped in
through :func:`simacc.harness.selection.testing` and a fresh :class:`~simacc.harness.runner.Runner`.
"""

import time
from dataclasses import dataclass

from simacc.harness import catalogue, devices, selection
from simacc.harness.runner import DEFAULT_TIMEOUT, ImplementationHung, Runner

PASS, FAIL, SKIPPED, NOT_APPLICABLE = "pass", "FAIL", "skipped", "not applicable"


@dataclass
class Result:
    """One property (one parametrization) on one device: its status, the examples
    Hypothesis ran up to the outcome (None when not a Hypothesis test), and for a failure
    the message and the summary of the (shrunk) case it failed on."""

    id: str
    device: str
    status: str
    examples: int | None
    seconds: float
    message: str = ""
    case: str | None = None
    size: str = ""  # the failing case's size: "bs=1 W=2" (or "B=" for a DFLASH block)


def run(implementation, device, *, select=None, settings=None, seed=None, timeout=DEFAULT_TIMEOUT,
        one_failure=False):
    """Every property that applies to ``implementation`` (or those with an id in
    ``select``), on ``device``; a list of :class:`Result`. ``settings`` (a Hypothesis
    settings object) replaces the current profile for the Hypothesis properties, and
    ``seed`` forces their random seed. ``one_failure`` stops a parametrized property at its
    first failing parameter (enough to know a mutant is killed)."""
    results = []
    for prop in catalogue.every_property():
        if not prop.checks_an_implementation or (select is not None and prop.id not in select):
            continue
        for suffix, params, contracts in prop.parametrizations():
            name = f"{prop.id}[{suffix}]" if suffix else prop.id
            results.append(run_one(prop, name, params, contracts or prop.contracts, implementation, device,
                                   settings, seed, timeout))
            if one_failure and results[-1].status == FAIL:
                break
    return results


def run_one(prop, name, params, contracts, implementation, device, settings, seed, timeout):
    """One parametrization of one property, as a :class:`Result`."""
    if implementation.contract not in contracts:
        return Result(name, device, NOT_APPLICABLE, None, 0.0, f"contract {implementation.contract!r}")
    if implementation.level not in prop.levels:
        return Result(name, device, NOT_APPLICABLE, None, 0.0, f"level {implementation.level!r}")
    missing = devices.unavailable(device)
    if prop.across_devices and not devices.is_cuda(device):
        missing = "compares a CUDA device with the CPU"
    if missing:
        return Result(name, device, SKIPPED, None, 0.0, missing)
    import pytest
    from hypothesis.reporting import with_reporter
    from hypothesis.statistics import collector

    from simacc.harness import plugin

    test = prop.test
    if prop.is_hypothesis_test and (settings is not None or seed is not None):
        test = _rewrapped(test, settings, seed)
    counts = []
    start = time.perf_counter()
    with selection.testing(implementation), Runner(implementation, timeout) as runner:
        try:
            # Hypothesis's own report (the falsifying example) is not wanted here: the result says it
            with with_reporter(lambda text: None), collector.with_value(
                lambda statistics: counts.append(plugin.examples_run(statistics))
            ):
                test(impl=runner, device=device, **params)
        except pytest.skip.Exception as e:
            return Result(name, device, SKIPPED, None, time.perf_counter() - start, str(e))
        except (Exception, ImplementationHung) as e:  # noqa: BLE001 - a failing property is the result
            case = runner.last[0] if runner.last else None
            return Result(name, device, FAIL, sum(counts) if counts else None, time.perf_counter() - start,
                          _message(e), case and case.summary(), case and _size(case))
    return Result(name, device, PASS, sum(counts) if counts else None, time.perf_counter() - start)


def _rewrapped(test, settings, seed):
    """``test`` wrapped anew by ``@given`` under ``settings`` and ``seed``, leaving the
    module's test untouched. Hypothesis keeps the strategies a test was given on its handle."""
    import hypothesis

    wrapped = hypothesis.given(**test.hypothesis._given_kwargs)(test.hypothesis.inner_test)
    if settings is not None:
        wrapped = settings(wrapped)
    return hypothesis.seed(seed)(wrapped) if seed is not None else wrapped


def _size(case):
    from simacc.harness.cases import DflashCase

    return f"bs={case.bs} {'B' if isinstance(case, DflashCase) else 'W'}={case.max_len}"


def _message(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
