"""What a session reports of simacc's properties: each test's
:class:`~simacc.harness.config.status.Status` and data in its report's ``user_properties`` (what the
JUnit report, the event stream and ``simacc check`` read), the repro file of a failure, and
the header that names what is checked. A test's status is decided here, once, so that the
terminal, a JUnit report and a command's verdict cannot disagree about it.
"""

import pytest

from simacc.harness.config import grad_modes
from simacc.harness.config import settings as opts
from simacc.harness.config.status import Status
from simacc.harness.plugin.collection import LISTED
from simacc.harness.plugin.fixtures import NotRun, item_params, item_property, state


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    prop = item_property(item)
    if prop is None:
        return report
    runner = getattr(item, "funcargs", {}).get("simacc")
    if call.when == "setup":
        report.user_properties += [("simacc_property", prop.id), ("simacc_device", item.callspec.params["simacc"]),
                                   ("simacc_sections", prop.sections)]
    if call.when == "call":
        examples = getattr(runner, "examples", None)
        if examples is not None:
            report.user_properties.append(("simacc_examples", examples))
        output = runner.output if runner is not None else ""
        if output:
            report.sections.append(("Captured output of the implementation (simacc)", output))
        if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception) \
                and getattr(runner, "last", None) is not None and not item.stash.get(LISTED, False):
            _record(item, call, report, runner)
        if call.excinfo is not None:
            from simacc.harness.judging import distributions

            distributions.report(report, call.excinfo.value)  # observed against expected, for the reports
    status = _status(item, call)
    if status is not None:
        item.stash[_STATUS] = status
    if report.when == "teardown":
        report.user_properties.append(("simacc_status", item.stash.get(_STATUS, Status.PASS).value))
        if _NOT_RUN in item.stash:
            report.user_properties.append(("simacc_not_run", item.stash[_NOT_RUN]))
    return report


_STATUS = pytest.StashKey[Status]()


def _status(item, call):
    """The test's status as of this phase (None: nothing new)."""
    listed = item.stash.get(LISTED, False)
    if call.excinfo is None:
        return (Status.XPASS if listed else Status.PASS) if call.when == "call" else None
    if call.excinfo.errisinstance(NotRun):
        item.stash[_NOT_RUN] = str(call.excinfo.value)
        return Status.NOT_RUN
    if call.excinfo.errisinstance(pytest.skip.Exception):  # a mark's skip: told apart before torch is imported
        return Status.SKIPPED
    if call.excinfo.errisinstance(pytest.xfail.Exception) or (listed and call.when == "call"):
        return Status.XFAIL
    from simacc.harness.call.runner import status_of

    return status_of(call.excinfo.value)  # as the in-process runs judge it


_NOT_RUN = pytest.StashKey[str]()


def _record(item, call, report, runner):
    """Write the repro file of the failure ``call`` raised, under the property its record
    names (none for a failure no file could replay)."""
    from simacc.harness.model import recording

    named = item_property(item).recorded_property(item_params(item))
    if named is None:
        return
    st = state(item.config)
    recording.record(report, call.excinfo, runner, *named, st.settings.repro_dir, item.config.invocation_params.dir)


def pytest_report_header(config):
    st = state(config)
    chosen = st.settings
    if chosen.impl is None:
        return None
    if chosen.references:
        under_test = "each property's own contract's reference (simacc_impl = references)"
    else:
        from simacc.harness.call import impl

        try:
            where, version = impl.locate(chosen.impl)
        except impl.ImplError as e:
            where, version = str(e), ""
        under_test = f"{chosen.impl} ({where}{f', version {version}' if version else ''})"
    from simacc.harness.config import profiles

    lines = [
        f"simacc: implementation {under_test}",
        f"simacc: level {chosen.level}; devices {', '.join(chosen.devices)}; profile simacc-{chosen.profile}"
        + (f", max_examples {chosen.max_examples}" if chosen.max_examples else "")
        + f"; seed {opts.seed_text(chosen.seed, chosen.profile)}",
        "simacc: example database " + profiles.describe(chosen.profile, chosen.database, chosen.database_readonly,
                                                        config.invocation_params.dir),
        f"simacc: grad modes {grad_modes.describe(chosen.contexts, chosen.process_context)}"
        + (" (--simacc-run-context runs another; simacc check runs each)" if len(chosen.contexts) > 1 else ""),
    ]
    variables = opts.in_effect()
    if variables:
        lines.append("simacc: " + " ".join(f"{k}={v}" for k, v in variables.items()))
    return lines
