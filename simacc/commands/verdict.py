"""The verdict of ``simacc check``: one result per property from pytest's test reports,
printed as a table and written as JSON (schema ``simacc.check/1``).

Each test phase's report becomes a plain record (:func:`record`), as ``simacc check`` hears
it from pytest (in its own process, or forwarded by xdist from the workers). A property
runs once per device (and per parameter, for the statistical ones); its tests are shown as
one row when they agree and as ``id[parameters]`` rows when they do not or when they failed
(each failure has its own counterexample). A device on which every property was skipped for
the same reason (``cuda`` without CUDA) is said once in a note instead of once per row.

A run in which no property ran the implementation (every one skipped or not applicable, or
none selected) is never a success: it exits 5, pytest's own "no tests" code, and says why
(issue #14).
"""

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field

SCHEMA = "simacc.check/1"
CONFORMANT, NOT_CONFORMANT, NOTHING_CHECKED = 0, 1, 5  # exit codes; 5 is pytest's "no tests collected"
PASS, FAIL, NOT_APPLICABLE, XFAIL, XPASS, SKIPPED = (
    "pass", "FAIL", "not applicable", "expected failure", "unexpected pass", "skipped",
)
STATUSES = (PASS, FAIL, XFAIL, XPASS, NOT_APPLICABLE, SKIPPED)  # the order summaries list them in
CHECKED = (PASS, FAIL, XFAIL, XPASS)  # statuses that mean the implementation was run
_DEVICE = re.compile(r"(cpu|cuda|meta)(:\d+)?")
# Hypothesis appends these notes to the exception; the table shows what comes before them.
_HYPOTHESIS_NOTES = re.compile(r"\n(Falsifying example|Failing test case|Explanation|You can reproduce|Trying example)\b.*", re.S)


@dataclass
class PropertyResult:
    """One row: a property (``id``, or ``id[device]`` when devices differ) and its status.

    ``examples`` is how many examples Hypothesis ran to an outcome (None when unknown: not
    a Hypothesis test, or it never finished). ``message`` is the failure (or the reason for
    a skip); ``repro`` the repro file; ``case`` the minimal case; ``replay`` the command
    that replays a failure; ``nodeid`` the pytest node of a single-device row; ``runs_impl``
    False for a test that never calls the implementation (the caller's checks).
    """

    id: str
    status: str
    examples: int | None
    seconds: float
    message: str = ""
    repro: str | None = None
    case: str | None = None
    devices: tuple = ()
    replay: str | None = None
    nodeid: str | None = None
    runs_impl: bool = True


@dataclass
class Verdict:
    """The rows, the exit code and the notes; ``reason`` says why nothing was checked
    (empty otherwise)."""

    header: dict
    results: list
    exit_code: int
    notes: list = field(default_factory=list)
    reason: str = ""

    @property
    def outcome(self):
        return {CONFORMANT: "conformant", NOT_CONFORMANT: "not conformant", NOTHING_CHECKED: "nothing checked"}[self.exit_code]

    def counts(self):
        """``{status: rows}`` for the statuses that occur, in :data:`STATUSES` order."""
        statuses = [r.status for r in self.results]
        return {s: statuses.count(s) for s in STATUSES if s in statuses}

    def to_json(self):
        return {
            "schema": SCHEMA,
            "verdict": self.outcome,
            "exit_code": self.exit_code,
            "header": self.header,
            "counts": self.counts(),
            "notes": self.notes,
            "reason": self.reason or None,
            "results": [{**dataclasses.asdict(r), "devices": list(r.devices)} for r in self.results],
        }


def split_nodeid(nodeid):
    """``(property id, device, name)`` of a test: ``...::test_name[0.5-cpu]`` gives
    ``("name", "cpu", "name[0.5-cpu]")``; the name is how a row shows one test."""
    name = nodeid.split("::")[-1].removeprefix("test_")
    base, _, params = name.partition("[")
    device = next((t for t in params.rstrip("]").split("-") if _DEVICE.fullmatch(t)), None)
    return base, device, name


def record(report):
    """The plain record of a pytest ``TestReport`` that a verdict is built from."""
    fields = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": getattr(report, "duration", 0.0),
        "user_properties": [tuple(p) for p in report.user_properties],
    }
    if hasattr(report, "wasxfail"):
        fields["wasxfail"] = report.wasxfail
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        fields["reason"] = report.longrepr[2].removeprefix("Skipped: ")
    elif report.longrepr is not None:
        crash = getattr(report.longrepr, "reprcrash", None)
        fields["crash"] = crash.message if crash is not None else str(report.longrepr).strip().splitlines()[-1]
    return fields


def _message(record):
    return _HYPOTHESIS_NOTES.sub("", record.get("crash", "")).strip()


def node_result(nodeid, reports):
    """The :class:`PropertyResult` of one test from its phase reports (``None`` if it did
    not finish)."""
    pid, device, _ = split_nodeid(nodeid)
    props = {}
    for r in reports:
        props.update(dict(r["user_properties"]))
    seconds = sum(r.get("duration", 0.0) for r in reports)
    done = any(r["when"] in ("teardown", "???") for r in reports)
    failed = [r for r in reports if r["outcome"] == "failed"]
    skipped = [r for r in reports if r["outcome"] == "skipped"]
    message = ""
    if failed:
        first = failed[0]
        message = _message(first)
        if "XPASS" in message:
            status, message = XPASS, "listed in --xfails but passed"
        else:
            status = FAIL
            if first["when"] == "???":  # xdist: the worker died under this test
                message += " (a segfault, os._exit or a watchdog kill of a hung call)"
            elif first["when"] != "call":
                message = f"error in {first['when']}: {message}"
    elif not done:
        return None
    elif any("wasxfail" in r for r in reports):
        xfailed = [r for r in reports if "wasxfail" in r]
        status = XFAIL if xfailed[0]["outcome"] == "skipped" else XPASS
        message = _message(xfailed[0]) if status == XFAIL else "listed in --xfails but passed"
    elif skipped:
        message = skipped[0].get("reason", "")
        status = NOT_APPLICABLE if message.startswith(NOT_APPLICABLE) else SKIPPED
        message = message.removeprefix(f"{NOT_APPLICABLE}: ")
    else:
        status = PASS
    return PropertyResult(
        id=pid,
        status=status,
        examples=props.get("simacc_examples"),
        seconds=seconds,
        message=message,
        repro=props.get("simacc_repro") if status == FAIL else None,
        case=props.get("simacc_case") if status == FAIL else None,
        devices=(device,) if device else (),
        nodeid=nodeid,
        runs_impl=props.get("simacc_runs_impl", True),
    )


def _merge(rows):
    """One row for a property whose tests (devices, parameters) agree and did not fail;
    otherwise a row per test, named ``id[parameters]``."""
    first = rows[0]
    if len(rows) == 1 or (len({(r.status, r.message) for r in rows}) == 1 and first.status not in (FAIL, XPASS)):
        examples = [r.examples for r in rows if r.examples is not None]
        return [dataclasses.replace(
            first,
            examples=sum(examples) if examples else None,
            seconds=sum(r.seconds for r in rows),
            devices=tuple(d for r in rows for d in r.devices),
            nodeid=first.nodeid if len(rows) == 1 else None,
        )]
    return [dataclasses.replace(r, id=split_nodeid(r.nodeid)[2]) for r in rows]


def build(header, order, reports, stopped=""):
    """The :class:`Verdict` from the collected node ids (``order``) and the report records.

    A collected test without a finished report is a failure: the process died under it, or
    ``stopped`` (why pytest stopped early) kept it from running. Only tests that run the
    implementation count as checking it: the caller's checks passing is not a verdict on it.
    """
    by_node = {}
    for r in reports:
        by_node.setdefault(r["nodeid"], []).append(r)
    results = [node_result(nodeid, by_node.get(nodeid, [])) or _unfinished(nodeid, nodeid in by_node, stopped)
               for nodeid in dict.fromkeys([*order, *by_node])]
    why = _why_nothing([r for r in results if r.runs_impl])
    notes, results = _fold_skipped_devices(results, header.get("devices"))
    grouped = {}
    for r in results:
        grouped.setdefault(r.id, []).append(r)
    rows = [row for group in grouped.values() for row in _merge(group)]
    if any(r.status in (FAIL, XPASS) for r in rows):
        return Verdict(header, rows, NOT_CONFORMANT, notes)
    if not any(r.status in CHECKED and r.runs_impl for r in rows):
        return Verdict(header, rows, NOTHING_CHECKED, notes, why)
    return Verdict(header, rows, CONFORMANT, notes)


def _unfinished(nodeid, started, stopped):
    """The failure of a test that never finished: it crashed its process, or never ran."""
    pid, device, _ = split_nodeid(nodeid)
    why = (
        f"the test process died while running it ({stopped or 'no reason given'}): a segfault, "
        "os._exit or a watchdog kill of a hung call; run with -n 1 or more to isolate crashes"
        if started else f"not run: {stopped or 'the run ended before it'}"
    )
    return PropertyResult(pid, FAIL, None, 0.0, why, devices=(device,) if device else (), nodeid=nodeid)


def _fold_skipped_devices(results, selected):
    """``(notes, results)``: a selected device on which every test was skipped for one
    reason (``cuda`` without CUDA) becomes one note instead of a row per property, when
    something else ran. A device that was not selected (the parity properties' ``cuda``
    under ``--device cpu``) keeps its rows: they say why."""
    notes = []
    for device in dict.fromkeys(d for r in results for d in r.devices):
        if selected and device not in selected:
            continue
        on = [r for r in results if r.devices == (device,)]
        reasons = {r.message for r in on if r.status == SKIPPED}
        others = [r for r in results if r.devices != (device,)]
        if on and others and len(reasons) == 1 and all(r.status == SKIPPED for r in on):
            notes.append(f"{device}: every property skipped ({reasons.pop()})")
            results = others
    return notes, results


def _why_nothing(results):
    """One line: why none of ``results`` (the tests that run the implementation) checked it."""
    if not results:
        return "no selected property runs the implementation"
    reasons = Counter(f"{r.status}: {r.message}" if r.message else r.status for r in results)
    reason, count = reasons.most_common(1)[0]
    if count == len(results):
        return f"every property was {reason}"
    return f"every property was skipped or not applicable, most of them {reason}"


def _seconds(s):
    return f"{s:.1f} s" if s >= 0.1 or s == 0 else "<0.1 s"


def render(verdict):
    """The table, the failures with their replay commands, and the one-line summary."""
    rows = verdict.results
    width = max([len("property"), *(len(r.id) for r in rows)])
    lines = [f"{'property':<{width}}  {'status':<16}  {'examples':>8}  {'time':>7}"] if rows else []
    for r in rows:
        examples = "-" if r.examples is None else str(r.examples)
        detail = r.message if r.status in (SKIPPED, NOT_APPLICABLE) else ""
        lines.append(f"{r.id:<{width}}  {r.status:<16}  {examples:>8}  {_seconds(r.seconds):>7}  {detail}".rstrip())
    for note in verdict.notes:
        lines.append(f"note: {note}")
    failures = [r for r in rows if r.status in (FAIL, XPASS)]
    for r in failures:
        lines += ["", f"{r.status} {r.id}"]
        lines += [f"  {line}" for line in r.message.splitlines()]
        if r.case and r.case not in r.message:
            lines.append(f"  case: {r.case}")
        if r.replay:
            lines.append(f"  replay: {r.replay}")
    counts = ", ".join(f"{n} {status}" for status, n in verdict.counts().items())
    if verdict.exit_code == NOTHING_CHECKED:
        summary = f"NOTHING CHECKED: {verdict.reason}"
    else:
        summary = f"{verdict.outcome.upper()}: {counts}"
    lines += ["", f"{summary} (exit {verdict.exit_code})"]
    return "\n".join(lines).lstrip("\n")
