"""What a session says beyond each test's report: under a simacc command, its event stream
(:mod:`simacc.harness.processes.stream`: what was collected, each test as it starts and ends, warnings,
the end) and the end of its processes; in every session, how a process died, named.

The command that started the session builds its verdict from this stream alone, so whatever
kills a worker or breaks pytest still reaches it as a status and a line.
"""

import os
import sys

import pytest

from simacc.harness.config.status import Result, Status
from simacc.harness.plugin.collection import is_ours
from simacc.harness.plugin.fixtures import STATE, state
from simacc.harness.processes import stream, watch

CRASH = ("the worker process died while running it (a segfault, os._exit, or a kill from outside such as the "
         "out-of-memory killer)")


def pytest_configure(config):
    """Name deaths in every process; write the stream on a command's controller (they read
    the session's state only once it runs)."""
    config.pluginmanager.register(_Deaths(config), "simacc-deaths")
    path = config.getoption("simacc_stream")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Reporter(path, config), "simacc-stream")


class _Reporter:
    """(``--simacc-stream``, on the controller) The session's events for the command that
    started it: what was collected, each test as it starts and its result as it ends (a
    worker that died under a test included), warnings, pytest's internal error, and the end
    (with why the tests that never ran did not)."""

    def __init__(self, path, config):
        self.path = path
        self.config = config
        self.phases = {}
        self.crashes = 0

    def pytest_collection_finish(self, session):
        if session.items:  # without xdist; with it the workers collect
            stream.emit(self.path, "collected", nodeids=[item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        stream.emit(self.path, "collected", nodeids=list(ids))

    def pytest_collectreport(self, report):
        if report.failed:
            stream.emit(self.path, "collect_error", nodeid=report.nodeid, message=str(report.longrepr).strip())

    def pytest_runtest_logstart(self, nodeid, location):
        stream.emit(self.path, "started", nodeid=nodeid)

    def pytest_runtest_logreport(self, report):
        phases = self.phases.setdefault(report.nodeid, [])
        phases.append(report)
        if report.when in ("teardown", "???"):  # ???: xdist, the worker died under this test
            self.crashes += report.when == "???"
            del self.phases[report.nodeid]
            stream.emit(self.path, "result", **_result(report.nodeid, phases))

    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        if issubclass(warning_message.category, pytest.PytestConfigWarning):
            stream.emit(self.path, "warning", message=str(warning_message.message))

    def pytest_internalerror(self, excrepr, excinfo):
        stream.emit(self.path, "internal_error", message=_last_line(excrepr))

    def pytest_sessionfinish(self, session, exitstatus):
        ended = Status.ERROR if exitstatus == pytest.ExitCode.INTERNAL_ERROR else Status.NOT_RUN
        for nodeid, phases in self.phases.items():  # started, never finished
            stream.emit(self.path, "result", **_result(nodeid, phases, ended))
        stream.emit(self.path, "finished", exitstatus=int(exitstatus), not_run=self._not_run(exitstatus))
        self.exitstatus = int(exitstatus)

    def _not_run(self, exitstatus):
        """Why a collected test never ran, as far as this process knows (empty: it does not)."""
        hung = watch.hang_count(state(self.config).prefix)
        if hung >= watch.HANG_BUDGET:
            return f"the implementation hangs ({hung} calls outlasted the time limit)"
        if self.crashes:
            return f"pytest-xdist stopped replacing its crashed workers after {self.crashes} crash(es)"
        if exitstatus == pytest.ExitCode.INTERNAL_ERROR:
            return "pytest stopped with an internal error"
        return ""


class _Deaths:
    """How the session's processes died, named. On the xdist controller, a dead worker's
    report (``???``) gets the status and line its last words give (:func:`watch.last_words`:
    a watchdog or supervisor kill is a hang, counted against the hang budget); otherwise it
    is a crash. In a worker that runs simacc's properties, pytest's internal error (the
    implementation broke pytest, or ran it out of memory) becomes the worker's death, which
    xdist survives by starting another, where a worker that finishes with tests left makes
    xdist's controller fail with an internal error of its own."""

    def __init__(self, config):
        self.config = config
        self.collected = False  # (xdist controller) some worker has collected, so it loaded the implementation

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.collected = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """(xdist controller) A worker that dies before any worker has collected died
        importing the implementation (where it is loaded): the session stops with that one
        line, a usage error, instead of starting worker after worker to die the same way."""
        st = state(self.config)
        if error is None or self.collected or st.settings.impl is None or st.settings.references:
            return
        words = watch.last_words(st.prefix)
        message = (f"IMPL {st.settings.impl!r}: the process importing it died before it said what it loaded: "
                   + (words[1] if words else f"{error} (os._exit, or a crash, while it was imported?)"))
        stream.emit(st.stream, "impl_error", message=message)
        pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if report.when != "???" or not is_ours(report.nodeid, self.config):
            return
        prefix = state(self.config).prefix
        kind, line = watch.last_words(prefix) or ("crash", "")
        status = {"watchdog": Status.HUNG, "killed": Status.HUNG, "internal": Status.ERROR}.get(kind, Status.CRASHED)
        line = f"the worker process died while running it: {line}" if line else CRASH
        if status == Status.HUNG:
            watch.note_hang(prefix)
        report.user_properties += [("simacc_status", status.value), ("simacc_death", line)]
        report.longrepr = f"{report.longrepr}\n{line}"

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self, excrepr, excinfo):
        if not (hasattr(self.config, "workerinput") and state(self.config).loaded):
            return
        watch.say_last_words("internal", f"pytest failed in it with an internal error (the implementation may have "
                                         f"broken pytest, or run it out of memory): {_last_line(excrepr)}",
                             prefix_=state(self.config).prefix)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(pytest.ExitCode.INTERNAL_ERROR))


def _last_line(excrepr):
    lines = [line for line in str(excrepr).strip().splitlines() if line.strip()]
    return stream.clip(lines[-1].removeprefix("E").strip() if lines else "", 500)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Under a simacc command (``--simacc-stream``), the last thing a process of the session
    does: end at once. Everything is said by now; the interpreter's teardown would only keep
    the command waiting, forever with a non-daemon thread the implementation left running.
    A plain pytest session ends as pytest ends it, and its controller removes the session's
    shared files; one run inside another session's process (``pytest.main``) gives that
    session its own back, or what that process's ranks and hangs leave would outlive both."""
    if not config.getoption("simacc_stream", None):
        if STATE in config.stash and not hasattr(config, "workerinput"):
            ended = state(config)
            watch.clean(ended.prefix)
            if watch.prefix() == ended.prefix:
                watch.configure(ended.outer_prefix)
        return
    reporter = config.pluginmanager.get_plugin("simacc-stream")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(getattr(reporter, "exitstatus", 0))


def _result(nodeid, phases, unfinished=Status.NOT_RUN):
    """One test's result from its phase reports, as the stream carries it: the
    :class:`~simacc.harness.config.status.Result` the in-process runs return too, with the
    session's own (its node id, repro file, failing distribution); ``unfinished`` is the
    status of a test that started and never reached its teardown."""
    props = {}
    for r in phases:
        props.update(dict(r.user_properties))
    status, message, cut_short = props.get("simacc_status"), "", False
    failed = next((r for r in phases if r.failed), None)
    skipped = next((r for r in phases if r.skipped and isinstance(r.longrepr, tuple)), None)
    if any(r.when == "???" for r in phases):
        status, message = props.get("simacc_status", Status.CRASHED.value), props.get("simacc_death", CRASH)
    elif status is None:  # never reached its teardown
        status, message, cut_short = unfinished.value, "the run ended before this test finished", True
    elif status == Status.NOT_RUN.value:
        message = props.get("simacc_not_run", "")
    elif failed is not None:
        crash = getattr(failed.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(failed.longrepr).strip().splitlines()[-1]
        if failed.when != "call":
            message = f"error in {failed.when}: {message}"
    elif skipped is not None:
        message = skipped.longrepr[2].removeprefix("Skipped: ")
    result = Result(nodeid.rpartition("::")[2].removeprefix("test_"), props.get("simacc_device"), Status(status),
                    props.get("simacc_examples"), sum(getattr(r, "duration", 0.0) for r in phases), message,
                    props.get("simacc_case"), props.get("simacc_size", ""))
    return dict(nodeid=nodeid, property=props.get("simacc_property"), **result.to_json(),
                sections=props.get("simacc_sections"), repro=props.get("simacc_repro"),
                distribution=props.get("simacc_distribution"), unfinished=cut_short)
