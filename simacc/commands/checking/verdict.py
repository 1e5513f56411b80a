"""The verdict of ``simacc check``: one row per property from the session's result events
(:mod:`simacc.harness.processes.stream`), printed the way pytest prints a session (the failures with
their details, what did not run grouped by reason, one summary line; ``-v`` the whole table
too) and written as JSON (schema ``simacc.check/1``) or JUnit XML.

A property runs once per device (and per parameter, for the statistical ones); its tests are
shown as one row when they agree and as ``id[parameters]`` rows when they do not or when they
failed (each failure has its own counterexample). A device on which every property was
skipped for the same reason (``cuda`` without CUDA) is said once in a note instead of once
per row. Properties that do not apply to the implementation were deselected: they are a
count, never rows.

A run in which no property ran the implementation (every one skipped, or none selected) is
never a success: it exits 5, pytest's own "no tests" code, and says why.
"""

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field

from simacc.commands import terminal
from simacc.commands.exits import Exit
from simacc.harness.config import contracts, grad_modes
from simacc.harness.config import settings as opts
from simacc.harness.config.status import CHECKED, FAILED, INCOMPLETE, Status, failures_first
from simacc.harness.judging.distributions import Distribution

SCHEMA = "simacc.check/1"
# Hypothesis appends these notes to the exception; the table shows what comes before them.
_HYPOTHESIS_NOTES = re.compile(r"\n(Falsifying example|Failing test case|Explanation|You can reproduce|Trying example)\b.*", re.S)
# A property's own failures explain themselves; their exception type is noise.
_FAILURE_TYPES = re.compile(r"^(AssertionError|simacc\.harness\.call\.runner\.(Implementation(Failed|Hung)|ProcessChanged)): ")
MAX_NAMED = 3  # properties a grouped line names before "and N more"
EXITFIRST = "not run: -x stopped the check at the first failure"


@dataclass
class PropertyResult:
    """One row: a property (``id``, or ``id[device]`` when devices differ) and its status.

    ``examples`` is how many examples Hypothesis ran to an outcome (None when unknown: not
    a Hypothesis test, or it never finished). ``message`` is the failure (or the reason for
    a skip); ``repro`` the repro file; ``case`` the minimal case; ``replay`` the command
    that replays a failure; ``nodeid`` the pytest node of a single-test row;
    ``distribution`` what a failing distribution property observed against what it expected
    (:class:`~simacc.harness.judging.distributions.Distribution`, as JSON).
    """

    id: str
    status: Status
    examples: int | None
    seconds: float
    message: str = ""
    repro: str | None = None
    case: str | None = None
    devices: tuple = ()
    replay: str | None = None
    nodeid: str | None = None
    module: str = ""
    distribution: dict | None = None


@dataclass
class Verdict:
    """The rows, the exit code and the notes; ``reason`` says why nothing was checked
    (empty otherwise); ``not_applicable`` maps each deselected test to why."""

    header: dict
    results: list
    exit_code: int
    notes: list = field(default_factory=list)
    reason: str = ""
    not_applicable: dict = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C or SIGTERM: the verdict so far
    seconds: float | None = None  # the check's wall time
    incomplete: str = ""  # why the session cannot vouch for its rows (it ended early): never a success

    @property
    def outcome(self):
        if self.interrupted:
            return "interrupted"
        if self.incomplete:
            return "incomplete"
        return {Exit.OK: "conformant", Exit.FAILED: "not conformant", Exit.NOTHING_CHECKED: "nothing checked"}[
            self.exit_code]

    def counts(self):
        """``{status: rows}`` for the statuses that occur, in :class:`Status` order."""
        statuses = [r.status for r in self.results]
        counts = {s.value: statuses.count(s) for s in Status if s in statuses}
        if self.not_applicable:
            counts[Status.NOT_APPLICABLE.value] = len({_base(n) for n in self.not_applicable})
        return counts

    def to_json(self):
        return {
            "schema": SCHEMA,
            "verdict": self.outcome,
            "exit_code": int(self.exit_code),
            "seconds": self.seconds,
            "header": self.header,
            "counts": self.counts(),
            "notes": self.notes,
            "reason": self.reason or None,
            "results": [{**dataclasses.asdict(r), "status": r.status.value, "devices": list(r.devices)}
                        for r in self.results],
            "not_applicable": self.not_applicable,
        }


def _base(nodeid):
    return nodeid.split("::")[-1].removeprefix("test_").split("[")[0]


def split_nodeid(nodeid):
    """``(property id, name, module)`` of a test: ``.../test_x.py::test_name[0.5-cpu]`` gives
    ``("name", "name[0.5-cpu]", "test_x")``; the name is how a row shows one test."""
    path, _, name = nodeid.rpartition("::")
    name = name.removeprefix("test_")
    return name.split("[")[0], name, path.rpartition("/")[2].removesuffix(".py")


def result_of(event):
    """The :class:`PropertyResult` of one ``result`` event of the stream."""
    pid, _, module = split_nodeid(event["nodeid"])
    status = Status(event["status"])
    message = _FAILURE_TYPES.sub("", _HYPOTHESIS_NOTES.sub("", event.get("message") or "").strip())
    if status == Status.XPASS:
        message = "listed in the xfails file, but passed"
    return PropertyResult(
        id=event.get("property") or pid,
        status=status,
        examples=event.get("examples"),
        seconds=event.get("seconds") or 0.0,
        message=message,
        repro=event.get("repro") if status == Status.FAIL else None,
        case=event.get("case") if status == Status.FAIL else None,
        distribution=event.get("distribution") if status == Status.FAIL else None,
        devices=(event["device"],) if event.get("device") else (),
        nodeid=event["nodeid"],
        module=module,
    )


def _merge(rows):
    """One row for a property whose tests (devices, parameters) agree and did not fail;
    otherwise a row per test, named ``id[parameters]``."""
    first = rows[0]
    if len(rows) == 1 or (len({(r.status, r.message) for r in rows}) == 1 and first.status not in FAILED):
        examples = [r.examples for r in rows if r.examples is not None]
        return [dataclasses.replace(
            first,
            examples=sum(examples) if examples else None,
            seconds=sum(r.seconds for r in rows),
            devices=tuple(d for r in rows for d in r.devices),
            nodeid=first.nodeid if len(rows) == 1 else None,
        )]
    return [dataclasses.replace(r, id=split_nodeid(r.nodeid)[1]) for r in rows]


def build(header, collected, results, not_applicable=None, stopped="", interrupted=False, exitfirst=False):
    """The :class:`Verdict` from the collected node ids and the results (:class:`PropertyResult`).

    A collected test without a result is *not run*, which never passes: ``stopped`` (why the
    session ended early) kept it from running; after a Ctrl-C (``interrupted``), or a first
    failure under ``-x`` (``exitfirst``), it is only skipped.
    """
    by_node = {r.nodeid: r for r in results}
    ids = dict.fromkeys([*collected, *by_node])
    rows = [by_node.get(nodeid) or _unfinished(nodeid, stopped, interrupted, exitfirst) for nodeid in ids]
    na = dict(not_applicable or {})
    why = _why_nothing(rows, na)
    notes, rows = _fold_skipped_devices(rows, header.get("devices"))
    grouped = {}
    for r in rows:
        grouped.setdefault(r.id, []).append(r)
    merged = [row for group in grouped.values() for row in _merge(group)]
    if any(r.status in FAILED or r.status in INCOMPLETE for r in merged):
        code = Exit.FAILED
    elif not any(r.status in CHECKED for r in merged):
        code = Exit.NOTHING_CHECKED
    else:
        code, why = Exit.OK, ""
    return Verdict(header, merged, code, notes, why if code == Exit.NOTHING_CHECKED else "", na, interrupted)


def _unfinished(nodeid, stopped, interrupted, exitfirst=False):
    """The result of a test that never reported one: not run (a check that never passes), or
    skipped after a Ctrl-C or a first failure under ``-x``."""
    pid, _, module = split_nodeid(nodeid)
    if exitfirst and not stopped:
        return PropertyResult(pid, Status.SKIPPED, None, 0.0, EXITFIRST, nodeid=nodeid, module=module)
    status = Status.SKIPPED if interrupted else Status.NOT_RUN
    return PropertyResult(pid, status, None, 0.0, f"not run: {stopped or 'the run ended before it'}",
                          nodeid=nodeid, module=module)


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
        reasons = {r.message for r in on if r.status == Status.SKIPPED}
        others = [r for r in results if r.devices != (device,)]
        if on and others and len(reasons) == 1 and all(r.status == Status.SKIPPED for r in on):
            notes.append(f"{device}: every property skipped ({reasons.pop()})")
            results = others
    return notes, results


def _why_nothing(results, not_applicable):
    """One line: why none of ``results`` checked the implementation."""
    if not results and not_applicable:
        reasons = Counter(not_applicable.values())
        return f"every property was not applicable: {reasons.most_common(1)[0][0]}"
    if not results:
        return "no property was selected"
    reasons = Counter(f"{r.status.value}: {r.message}" if r.message else r.status.value for r in results)
    reason, count = reasons.most_common(1)[0]
    if count == len(results):
        return f"every property was {reason}"
    return f"no property ran the implementation; most were {reason}"


def _seconds(s):
    return f"{s:.1f} s" if s >= 0.1 or s == 0 else "<0.1 s"


def render(verdict, verbosity=0, colour=False):
    """The verdict as ``simacc check`` prints it: the failures with their details, then what
    did not run grouped by reason, the notes and one summary line. ``verbosity`` 1 (``-v``)
    puts the whole table first (failures at its top) instead of the grouped lines; -1
    (``-q``) prints the failures and the summary alone. ``colour``: ANSI colours."""
    paint = terminal.painter(colour)
    sections = [_table(verdict.results, paint)] if verbosity > 0 else []
    failed = [r for r in verdict.results if r.status in FAILED]
    sections += [_failure(r, paint, earlier.message if earlier else "") for earlier, r in zip([None, *failed], failed)]
    tail = _grouped(verdict.results) if verbosity == 0 else []
    tail += [f"note: {note}" for note in verdict.notes] if verbosity >= 0 else []
    sections.append([*tail, summary(verdict, paint)])
    return "\n\n".join("\n".join(section) for section in sections if section)


_OUTCOME_COLOURS = {"conformant": "green", "not conformant": "red"}


def summary(verdict, paint=terminal.painter(False)):
    """The summary line: the outcome, the count of each status, the time, the exit code."""
    counts = ", ".join(f"{n} {status}" for status, n in verdict.counts().items())
    took = f" in {verdict.seconds:.1f} s" if verdict.seconds is not None else ""
    if verdict.interrupted:
        said = f"{counts or 'nothing ran'}{took}"
    elif verdict.incomplete:
        said = f"{verdict.incomplete}; {counts or 'nothing ran'}{took}"
    elif verdict.exit_code == Exit.NOTHING_CHECKED:
        said = verdict.reason
    else:
        said = f"{counts}{took}"
    code = Exit.INTERRUPTED if verdict.interrupted else verdict.exit_code
    outcome = verdict.outcome.upper()
    return f"{paint(outcome, _OUTCOME_COLOURS.get(verdict.outcome, 'yellow'))}: {said} (exit {int(code)})"


def _table(rows, paint):
    """One row per property, the failures first (the most serious first), then module order."""
    if not rows:
        return []
    rows = sorted(rows, key=lambda r: failures_first(r.status))
    width = max([len("property"), *(len(r.id) for r in rows)])
    lines = [f"{'property':<{width}}  {'status':<16}  {'examples':>8}  {'time':>7}"]
    for r in rows:
        examples = "-" if r.examples is None else str(r.examples)
        status = paint(f"{r.status.value:<16}", _colour(r.status))
        detail = r.message if r.status not in CHECKED else ""
        lines.append(f"{r.id:<{width}}  {status}  {examples:>8}  {_seconds(r.seconds):>7}  {detail}".rstrip())
    return lines


def _colour(status):
    return "red" if status in FAILED else "green" if status in CHECKED else "yellow"


def _failure(r, paint, before=""):
    """A failure's block: its message (the claim, the values, the case: "the same as above"
    when the failure ``before`` it printed that case), its replay command."""
    lines = [f"{paint(r.status.value, 'red')} {r.id}"]
    message, case = failure_parts(r)
    lines += [f"  {line}" for line in message.splitlines()]
    if r.distribution:
        lines += [f"  {line}" for line in Distribution.from_json(r.distribution).chart()]
    if case and case.startswith("case=") and "\ncase=" in before and before.partition("\ncase=")[2] == case[5:]:
        lines.append("  case=(the same case as above)")
    elif case:
        lines += [f"  {line}" for line in case.splitlines()]
    if r.replay:
        lines.append(f"  replay: {r.replay}")
    return lines


def failure_parts(r):
    """``(message, case)`` of a failing row: its claim and values, then its case as the message
    prints it (``case=...``), else the case's summary (``case: ...``), else empty."""
    message, _, case = (r.message or "").partition("\ncase=")
    if case:
        return message, f"case={case}"
    if r.case and r.case not in r.message:
        return message, f"case: {r.case}"
    return message, ""


def _grouped(rows):
    """One line per status and reason for what neither passed nor failed (skipped, expected
    failures, any other status), naming the first few properties."""
    groups = {}
    for r in rows:
        if r.status in FAILED or r.status == Status.PASS:
            continue
        reason = "" if r.status == Status.XFAIL else (r.message.splitlines() or [""])[0]
        groups.setdefault((r.status, reason), []).append(r.id)
    lines = []
    for (status, reason), ids in groups.items():
        named = ", ".join(ids[:MAX_NAMED]) + (f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else "")
        lines.append(f"{status.value} ({len(ids)}): " + (f"{reason} ({named})" if reason else named))
    return lines


def junit(verdict):
    """The verdict as JUnit XML: one ``<testcase>`` per test, named with its module path
    (``simacc.properties.test_index``); a failure carries its message, its chart (a
    distribution's) and replay command;
    properties that do not apply are not test cases (their count is a suite property)."""
    from xml.sax.saxutils import escape, quoteattr  # here, not at the top: 0.04 s of every check's start

    cases, failures, skipped = [], 0, 0
    for r in verdict.results:
        attrs = f'classname={quoteattr("simacc.properties." + r.module)} name={quoteattr(r.id)} time="{r.seconds:.3f}"'
        if r.status in FAILED:
            failures += 1
            chart = r.distribution and "\n".join(Distribution.from_json(r.distribution).chart())
            text = "\n".join(filter(None, [r.message, chart, r.case and f"case: {r.case}",
                                           r.replay and f"replay: {r.replay}"]))
            first = (r.message.splitlines() or [r.status.value])[0]
            cases.append(f"  <testcase {attrs}>\n    <failure message={quoteattr(first)}>{escape(text)}</failure>\n"
                         "  </testcase>")
        elif r.status in (Status.SKIPPED, Status.NOT_RUN):  # never shown as a pass
            skipped += 1
            cases.append(f"  <testcase {attrs}>\n    <skipped message={quoteattr(r.message)}/>\n  </testcase>")
        else:
            cases.append(f"  <testcase {attrs}/>")
    name = quoteattr(f"simacc check {verdict.header.get('impl', '')}".strip())
    na = len({_base(n) for n in verdict.not_applicable})
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n<testsuite name={name} tests="{len(cases)}" '
            f'failures="{failures}" errors="0" skipped="{skipped}">\n  <properties>\n'
            f'    <property name="verdict" value={quoteattr(verdict.outcome)}/>\n'
            f'    <property name="not_applicable" value="{na}"/>\n  </properties>\n'
            + "\n".join(cases) + "\n</testsuite>\n</testsuites>\n")


# -- the header: the settings and what the session loaded ---------------------------------------


def header_rows(header):
    """``[(name, value)]``: the header as its lines say it (the terminal and the HTML report)."""
    cuda = "available" if header["cuda_available"] else "not available"
    examples = header["max_examples"] or "the profile's"
    rows = [
        ("file", header["file"] or "(none)"),
        ("version", header["version"] or "(none)"),
        ("contract", f"{header['contract']} ({header['contract_from']}); level {header['level']}"
                     + contracts.fixed_id_text(header.get("writes_a_fixed_id"), header["fixed_token_id"],
                                               header["fixed_token_id_from"])
                     + contracts.refused_drafts_text(header.get("samples_drafts_against_logits"),
                                                     header.get("refused_drafts"))),
        ("devices", f"{', '.join(header['devices'])} (CUDA {cuda})"),
        ("grad mode", grad_modes.describe(header["contexts"], header.get("run_context"))),
        ("profile", f"simacc-{header['profile']}, {examples} examples per property, "
                    f"seed {opts.seed_text(header['seed'], header['profile'])}"),
        ("limits", f"{header['timeout_s']:g} s per call" + (f"; xfails {header['xfails']}" if header["xfails"] else "")),
        ("versions", f"simacc {header['simacc']}, torch {header['torch']}, hypothesis {header['hypothesis']}, "
                     f"python {header['python']}"),
    ]
    if header.get("tokenizer"):
        rows.insert(3, ("tokenizer", header["tokenizer"]))
    return rows


def format_header(header):
    return "\n".join([f"simacc check {header['impl']}", *(f"  {f'{name}:':<10} {value}" for name, value in
                                                         header_rows(header))])
