"""``simacc observe LOG --engine E --length AL --steps K``: a benchmark run's own acceptance log
checked against the law it asked for (CONTRACT.md §28), with a record in the shape of a runtime
verification (status, observed AL, tolerance, evidence) that the benchmark's result can carry.

LOG is JSON Lines, one object per request per step: ``{"step": int, "request": int or str,
"accept_length": int}`` (the tokens the request emitted that step: accepted drafts + 1). The
verdict is four checks: every length in ``1..K+1``; the joint law within a step (one length per
step for a lockstep law; no excess of steps whose requests all agree for an independent one);
the mean, with an empirical Bernstein interval; the distribution, with the per-point Chernoff
band of :mod:`simacc.harness.judging.statistics`. The statistical checks share
:data:`FALSE_ALARM` (a union bound): a run drawn from the law fails with probability at most that.
"""

import argparse
import hashlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from simacc.commands import laws as laws_command
from simacc.commands.exits import Exit
from simacc.contract import laws
from simacc.harness.config import settings as opts
from simacc.harness.judging import statistics
from simacc.harness.processes.atomic import write_atomically

SCHEMA = "simacc.observe/1"
FALSE_ALARM = statistics.FALSE_ALARM  # for the whole verdict, split evenly over its statistical checks
FIELDS = ("step", "request", "accept_length")
EXIT_CODES = f"""exit codes:
  {Exit.OK:d}  the run matches the law (false-alarm rate {FALSE_ALARM:g} for the whole verdict)
  {Exit.FAILED:d}  it does not: the output says what differs (a length outside 1..K+1 included)
  {Exit.USAGE:d}  usage error or unreadable input: a bad option, an AL the engine cannot take, a LOG line
     that is not an object with integer step and accept_length and an integer or string
     request, a request twice in a step, a step with no request; nothing is written

LOG: JSON Lines, one object per request per step, {{"step": 0, "request": 7, "accept_length": 3}}
(accept_length = the tokens the request emitted that step: accepted drafts + 1), or - for stdin.
docs/laws.md says how to get it from sglang's and vLLM's own metrics."""


class LogError(ValueError):
    """An unreadable LOG: one line that names the line of the file at fault."""


@dataclass(frozen=True)
class Record:
    line: int
    step: int
    request: object
    length: int


def read_log(name, data):
    """The records of a log's bytes, in order; a :class:`LogError` naming the first bad line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LogError(f"{name}: not UTF-8 text (byte {e.start})") from None
    lines = text.split("\n")
    records, seen = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            cut = ": a truncated last line?" if number == len(lines) else ""
            raise LogError(f"{where}: not JSON at column {e.colno} ({e.msg}){cut}") from None
        if not isinstance(obj, dict):
            raise LogError(f"{where}: a JSON {type(obj).__name__}, but should be an object with {', '.join(FIELDS)}")
        for field in FIELDS:
            if field not in obj:
                raise LogError(f"{where}: no {field!r} field (each line needs {', '.join(FIELDS)})")
        step, request, length = (obj[field] for field in FIELDS)
        for field, value in (("step", step), ("accept_length", length)):
            if type(value) is not int:
                raise LogError(f"{where}: {field}={json.dumps(value)}, but should be an integer")
        if type(request) not in (int, str):
            raise LogError(f"{where}: request={json.dumps(request)}, but should be an integer or a string")
        if (step, request) in seen:
            raise LogError(f"{where}: request {json.dumps(request)} twice in step {step} (first on line "
                           f"{seen[step, request]})")
        seen[step, request] = number
        records.append(Record(number, step, request, length))
    if not records:
        raise LogError(f"{name}: no records (one JSON object per request per step)")
    return records


def by_step(name, records):
    """``{step: [records]}`` in step order; a :class:`LogError` for a step with no request."""
    steps = {}
    for record in records:
        steps.setdefault(record.step, []).append(record)
    first, last = min(steps), max(steps)
    if len(steps) != last - first + 1:
        missing = next(s for s in range(first, last + 1) if s not in steps)
        raise LogError(f"{name}: step {missing} has no request (the log's steps run from {first} to {last}: number "
                       "the steps that decoded one after another)")
    return dict(sorted(steps.items()))


@dataclass(frozen=True)
class Check:
    """One check of the verdict: whether it passed, a line saying so, on a failure what differs
    (in the terms of what the run did), and its numbers."""

    name: str
    passed: bool
    said: str
    difference: str
    data: dict


def check(name, passed, said, difference="", **data):
    return Check(name, passed, said, (difference or said) if not passed else "", data)


@dataclass(frozen=True)
class Verdict:
    law: object
    records: int
    steps: int
    requests: int
    observed_al: float
    interval: tuple
    checks: tuple
    fits: tuple  # the other laws the log passes, on a failure
    counts: tuple  # records of each length 1..K+1
    outside: int
    step_means: tuple  # (step, mean length, requests) per step
    band: tuple  # (low, high) of the CDF at each length the test judged
    dkw: float

    @property
    def passed(self):
        return all(c.passed for c in self.checks)

    @property
    def differences(self):
        return [c.difference for c in self.checks if not c.passed]


def judge(law, steps, false_alarm=FALSE_ALARM, candidates=()):
    """The :class:`Verdict` on a log (``steps``: :func:`by_step`'s) under ``law``; on a failure,
    ``fits`` names the laws among ``candidates`` that the log passes."""
    k = law.steps
    records = [r for step in steps.values() for r in step]
    inside = [r for r in records if 1 <= r.length <= k + 1]
    outside = [r for r in records if not 1 <= r.length <= k + 1]
    shared = [step for step in steps.values() if len(step) > 1]
    lockstep = law.engine.joint != laws.INDEPENDENT
    each = false_alarm / (2 + (not lockstep and bool(shared)))  # the statistical checks share the rate
    checks = [check("lengths", not outside, f"every accept_length in 1..{k + 1}" if not outside else
                    f"{len(outside)} lengths outside 1..{k + 1} (K={k}): line {outside[0].line}: "
                    f"accept_length={outside[0].length}", outside=len(outside))]
    mixed = next((step for step in shared if len({r.length for r in step}) > 1), None)
    if lockstep:
        checks.append(_one_length(law, mixed))
    elif shared:
        checks.append(_own_draws(law, shared, inside, each))
    by_steps = lockstep and mixed is None  # one draw per step: the step is the unit
    units = [step[0].length for step in steps.values() if 1 <= step[0].length <= k + 1] if by_steps else \
        [r.length for r in inside]
    unit = "steps (one draw each)" if by_steps else "records"
    mean = math.fsum(units) / len(units) if units else math.nan
    interval = statistics.mean_interval(units, 1, k + 1, each) if units else (1.0, float(k + 1))
    checks.append(_mean(law, mean, interval, len(units), unit))
    checks.append(_distribution(law, units, unit, inside, each))
    cdf = [min(math.fsum(law.accepted[: a + 1]), 1.0) for a in range(k)]
    points = sum(0 < f < 1 for f in cdf)
    band = tuple(statistics.band(len(units), f, points, each) if units else (f, f) for f in cdf)
    passed = all(c.passed for c in checks)
    fits = () if passed or outside else tuple(f"{other.engine.title} at AL {other.length:g}" for other in candidates
                                              if judge(other, steps, false_alarm).passed)
    return Verdict(law, len(records), len(steps), len({r.request for r in records}), mean, interval, tuple(checks),
                   fits, tuple(sum(r.length == a + 1 for r in inside) for a in range(k + 1)), len(outside),
                   tuple((s, math.fsum(r.length for r in step) / len(step), len(step)) for s, step in steps.items()),
                   band, statistics.dkw_epsilon(len(units), each) if units else 1.0)


def _one_length(law, mixed):
    """A lockstep law: no step with two lengths (no statistics)."""
    if mixed is None:
        return check("one length per step", True, "every step's requests share one length")
    other = next(r for r in mixed if r.length != mixed[0].length)
    return check("one length per step", False,
                 f"step {mixed[0].step} has lengths {sorted({r.length for r in mixed})} (lines {mixed[0].line}, "
                 f"{other.line}), but {law.engine.title} draws one length for the whole batch: these requests drew "
                 "their own")


def _own_draws(law, shared, inside, false_alarm):
    """An independent law: no more steps whose requests all agree than independent draws allow
    (step ``s`` of ``N_s`` requests has the chance ``sum_a P(a)^N_s``); when there are more,
    whether the run's own shares drawn independently would explain them (a narrower law) or not
    (lockstep)."""
    agree = sum(len({r.length for r in step}) == 1 for step in shared)
    chances = [math.fsum(p ** len(step) for p in law.accepted) for step in shared]
    limit, expected = statistics.count_limit(chances, false_alarm), math.fsum(chances)
    shares = [sum(r.length == a + 1 for r in inside) / max(len(inside), 1) for a in range(law.steps + 1)]
    alike = statistics.count_limit([math.fsum(p ** len(step) for p in shares) for step in shared], false_alarm)
    why = (f"the requests move in lockstep (one draw per batch), but {law.engine.title} draws per request"
           if agree > alike else "the lengths are more alike than the law's, even drawn on their own")
    return check("requests draw their own", agree <= limit,
                 f"{agree} of {len(shared)} steps with two requests or more have every request at one length "
                 f"(about {expected:.1f} expected, at most {limit} allowed)",
                 f"in {agree} of {len(shared)} steps every request has the same length, but independent draws give "
                 f"about {expected:.1f} such steps (at most {limit}): {why}", agree=agree, steps=len(shared),
                 expected=expected, limit=limit)


def _mean(law, mean, interval, units, unit):
    """The law's mean inside the run's interval; a run a whole token off says which unit slip
    would explain it."""
    low, high = interval
    hint = ""
    if low <= law.mean + 1 <= high:
        hint = ": that is AL + 1, as when the knob is given AL where it counts accepted drafts (AL - 1)"
    elif low <= law.mean - 1 <= high:
        hint = ": that is AL - 1, as when the knob is given AL - 1 where it takes AL"
    return check("mean", low <= law.mean <= high,
                 f"observed AL {mean:.4f}, interval [{low:.4f}, {high:.4f}] over {units} {unit}; the law delivers "
                 f"{law.mean:.4f}",
                 f"observed AL {mean:.4f} [{low:.4f}, {high:.4f}], but {law.engine.title}'s law at AL "
                 f"{law.length:g} delivers {law.mean:.4f}{hint}", observed=mean, low=low, high=high,
                 expected=law.mean)


def _distribution(law, units, unit, inside, false_alarm):
    """The CDF test; its failure names a length the law never gives, or the point furthest out
    and whether the run's spread is wider or narrower than the law's."""
    test = statistics.cdf_test(units, list(law.accepted), false_alarm)
    if test.expected == 0.0 and not test.passed:
        first = next(r for r in inside if r.length == test.k)
        possible = [a + 1 for a, p in enumerate(law.accepted) if p > 0]
        said = (f"accept_length={test.k} on {units.count(test.k)} {unit} (first on line {first.line}), which "
                f"{law.engine.title}'s law at AL {law.length:g} never gives (only {possible})")
    else:
        mean = math.fsum(units) / len(units) if units else math.nan
        sd = math.sqrt(math.fsum((u - mean) ** 2 for u in units) / len(units)) if units else math.nan
        spread = "" if test.passed or abs(sd - law.sd) < 0.05 else \
            f"; its spread (sd {sd:.3f}) is {'wider' if sd > law.sd else 'narrower'} than the law's ({law.sd:.3f})"
        said = (f"P(accept_length <= {test.k}) = {test.observed:.4f}, {'within' if test.passed else 'outside'} "
                f"{test.low:.4f}..{test.high:.4f} around the law's {test.expected:.4f}{spread}")
    return check("distribution", test.passed, said, observed=test.observed, expected=test.expected, low=test.low,
                 high=test.high, at=test.k)


def neighbours(law):
    """The laws a log that fails ``law`` may fit: every other engine's at the same AL and ``K``,
    and this engine's at ``AL + 1`` and ``AL - 1``."""
    found = [laws.law(e, law.length, law.steps) for e in laws.ENGINES if e != law.engine.id]
    found += [laws.law(law.engine.id, law.length + shift, law.steps) for shift in (1, -1) if law.length + shift > 0]
    return [other for other in found if not other.cannot]


def render(verdict, name):
    law = verdict.law
    inside = sum(verdict.counts)
    shares = [c / max(inside, 1) for c in verdict.counts]
    mean, sd = laws.spread(shares)
    lines = [f"{name}: {verdict.records} records, {verdict.steps} steps, {verdict.requests} requests, against "
             f"{law.engine.title} at AL {law.length:g}, K = {law.steps} ({law.knob})",
             f"  P(accept_length = {', '.join(str(a) for a in range(1, law.steps + 2))})",
             f"    the law:  {' '.join(f'{p:.4f}' for p in law.accepted)}  mean {law.mean:.4f}  sd {law.sd:.3f}  "
             f"{laws.JOINT[law.engine.joint]}",
             f"    the run:  {' '.join(f'{p:.4f}' for p in shares)}  mean {mean:.4f}  sd {sd:.3f}"
             + (f"  (and {verdict.outside} outside 1..{law.steps + 1})" if verdict.outside else ""), ""]
    for check in verdict.checks:
        lines.append(f"  {'pass' if check.passed else 'FAIL'}  {check.name}: {check.said}")
    tests = sum(c.name != "lengths" and c.name != "one length per step" for c in verdict.checks)
    lines.append("")
    if verdict.passed:
        lines.append(f"MATCHES the law (false-alarm rate {FALSE_ALARM:g} in all: {FALSE_ALARM / tests:.3g} for each "
                     f"of its {tests} statistical checks)")
    else:
        lines.append("DOES NOT MATCH the law:")
        lines += [f"  - {d}" for d in verdict.differences]
        if verdict.fits:
            lines.append(f"  the log passes the law of: {'; '.join(verdict.fits)}")
    return "\n".join(lines)


def record(verdict, name, digest):
    """The runtime verification a benchmark's result can carry: status, observed AL, tolerance
    (the interval's half-width) and the evidence."""
    law = verdict.law
    low, high = verdict.interval
    return {
        "schema": SCHEMA, "status": "pass" if verdict.passed else "fail", "observed_al": verdict.observed_al,
        "tolerance": (high - low) / 2, "expected_al": law.mean, "asked_al": law.length,
        "false_alarm": FALSE_ALARM,
        "evidence": {
            "log": name, "sha256": digest, "records": verdict.records, "steps": verdict.steps,
            "requests": verdict.requests, "engine": law.engine.id, "setting": law.knob, "k": law.steps,
            "law": {"accept_length": list(range(1, law.steps + 2)), "probabilities": list(law.accepted),
                    "joint": law.engine.joint, "section": f"CONTRACT.md {law.engine.section}"},
            "interval": [low, high], "counts": list(verdict.counts), "outside": verdict.outside,
            "checks": [{"name": c.name, "passed": c.passed, "detail": c.said, **c.data} for c in verdict.checks],
            "differences": list(verdict.differences), "fits": list(verdict.fits),
        },
    }


def register(subparsers):
    p = subparsers.add_parser(
        "observe", help="check a benchmark run's acceptance log against the law it asked for",
        description="Check LOG, a run's accept_length per request per step, against the law of ENGINE asked\n"
        "for AL at K drafts per step: lengths in 1..K+1, lockstep or independent requests, the mean\n"
        "with its interval, the distribution with its band; print what differs, and write a runtime\n"
        "verification record.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", metavar="LOG", help="the run's log, JSON Lines (- for stdin)")
    p.add_argument("--engine", required=True, choices=laws.ENGINES, metavar="ENGINE",
                   help=f"the engine whose law the run asked for: {', '.join(laws.ENGINES)}")
    p.add_argument("--length", required=True, type=opts.argtype(laws_command.length), metavar="AL",
                   help="the mean acceptance length asked for (accepted drafts + 1)")
    p.add_argument("--steps", required=True, type=opts.argtype(opts.positive_int), metavar="K",
                   help="drafts per request per step (num_speculative_tokens)")
    p.add_argument("--json", type=Path, metavar="PATH", help=f"also write the runtime verification record (schema "
                   f"{SCHEMA}): status, observed_al, tolerance, evidence")
    p.add_argument("--html", type=Path, metavar="PAGE", help="also write the verdict as one self-contained HTML page "
                   "with its plots")
    p.set_defaults(run=run)


def run(args):
    def usage(message):
        print(f"simacc observe: error: {message}", file=sys.stderr)
        return Exit.USAGE

    said = laws_command.check_folders("observe", args.json, args.html)
    if said:
        return usage(said.removeprefix("simacc observe: error: ") + "; try 'simacc observe --help'")
    law = laws.law(args.engine, args.length, args.steps)
    if law.cannot:
        return usage(f"{law.engine.title} cannot take AL {args.length:g}: {law.cannot}")
    name = "<stdin>" if args.log == "-" else args.log
    try:
        data = sys.stdin.buffer.read() if args.log == "-" else Path(args.log).read_bytes()
    except OSError as e:
        return usage(f"{name}: {e.strerror}")
    try:
        steps = by_step(name, read_log(name, data))
    except LogError as e:
        return usage(str(e))
    verdict = judge(law, steps, candidates=neighbours(law))
    text = render(verdict, name)
    print(text)
    digest = hashlib.sha256(data).hexdigest()
    try:
        if args.json is not None:
            write_atomically(args.json, json.dumps(record(verdict, name, digest), indent=2) + "\n")
        if args.html is not None:
            from simacc.commands import law_pages

            write_atomically(args.html, law_pages.observe_page(verdict, name, text))
    except OSError as e:
        return usage(f"{e.filename}: {e.strerror}")
    return Exit.OK if verdict.passed else Exit.FAILED

