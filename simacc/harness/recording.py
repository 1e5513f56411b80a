"""pytest hooks that turn a failing property's shrunk case into a repro file (issue #5).

Hypothesis replays the minimal failing example last, so after a failure the ``impl``
fixture's ``Runner.last`` holds the shrunk case; the device is the test's own parameter
(a parity property may call the implementation on another device too). The file goes to
the repro folder (``--repro-dir``) under a name made from the property, implementation,
device and case, so a failure found again by any xdist worker or run rewrites its own file
instead of adding one (issue #14). Its path and the case summary go to
``report.user_properties`` (what ``simacc check`` reads; the path is absolute there and
relative to the invocation folder in the printed command), and a section of the failure
output says how to replay it. Writing a repro file never breaks the run: a failure to write
is reported in that section instead.

The promoted regression cases (``properties/test_regressions.py``) are moved to the front
of the run, so known failures are replayed before any random generation.
"""

import pytest

REGRESSIONS_MODULE = "properties.test_regressions"


def pytest_collection_modifyitems(config, items):
    first = [i for i in items if getattr(getattr(i, "module", None), "__name__", "") == REGRESSIONS_MODULE]
    if first:
        rest = [i for i in items if getattr(getattr(i, "module", None), "__name__", "") != REGRESSIONS_MODULE]
        items[:] = first + rest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    funcargs = getattr(item, "funcargs", {})
    runner = funcargs.get("impl")
    if report.when == "call" and report.failed and getattr(runner, "last", None) is not None:
        _record(item, call, report, runner)
    return report


def _record(item, call, report, runner):
    from simacc.harness import plugin
    from simacc.harness import repro_files as reprofile

    case = runner.last[0]
    device = item.funcargs.get("device", runner.last[1])
    message = str(call.excinfo.value) if call.excinfo is not None else ""
    try:
        prop = _property(item)
        if prop is None:
            return
        record = reprofile.Repro(prop, runner.impl.contract, runner.impl.spec, device, message, case, runner.impl.level)
        path = reprofile.save(record, plugin.state(item.config).repro_dir)
    except (OSError, reprofile.ReproError) as e:
        report.sections.append(("simacc repro", f"case: {case.summary()}\nno repro file: {e}"))
        return
    shown = _relative(path, item.config.invocation_params.dir)
    report.user_properties.append(("simacc_repro", str(path.resolve())))
    report.user_properties.append(("simacc_case", case.summary()))
    report.sections.append((
        "simacc repro",
        f"case: {case.summary()}\nrepro file: {shown}\n"
        f"replay it: simacc repro {shown} [--impl IMPL] [--device cpu]",
    ))


def _property(item):
    """The property a failing item checks (a corpus case names its own), or None for a test
    that is not a property over a case (errors as data, say): nothing a file could replay."""
    from simacc.harness import catalogue
    from simacc.harness import repro_files as reprofile

    params = getattr(getattr(item, "callspec", None), "params", {})
    if "regression" in params:
        return reprofile.load(params["regression"]).property
    if not catalogue.replayable(item.function):
        return None
    return catalogue.Property(item.originalname.removeprefix("test_"), item.module.__name__, item.function, ())


def _relative(path, start):
    try:
        return str(path.resolve().relative_to(start.resolve()))
    except ValueError:
        return str(path)
