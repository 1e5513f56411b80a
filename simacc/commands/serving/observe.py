"""``simacc observe LOG --engine E --length AL --steps K``: a benchmark run's own acceptance output
checked against the law it asked for (CONTRACT.md §28), with a record in the shape of a runtime
verification (status, observed AL, tolerance, power, evidence) that the benchmark's result can
carry.

LOG is what the engine wrote (:mod:`simacc.commands.serving.observe_formats`: simacc's JSON Lines of
``accept_length`` per request per step, vLLM's responses or Prometheus scrape, sglang's server
log or responses, ATOM's stats), read in one pass in memory that grows with the steps and the
requests, not the records (:mod:`simacc.commands.serving.observe_tally`). The verdict
(:mod:`simacc.commands.serving.observe_checks`): every length in ``1..K+1``; the joint law within a
step; no drift within the run; no serial dependence within a request; the mean, with Bernstein's
interval at the law's variance; the distribution, with the per-point Chernoff band. The statistical checks share :data:`FALSE_ALARM` (a union bound), and the verdict
states its power: a log too small to see a shift of 0.1 in AL is INCONCLUSIVE, never a match.
"""

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from simacc.commands import terminal
from simacc.commands.exits import Exit
from simacc.commands.serving import arguments
from simacc.commands.serving import observe_formats as formats
from simacc.commands.serving.observe_checks import FALSE_ALARM, POWER, SHIFT, judge, shift
from simacc.commands.serving.observe_tally import LogError, Tally
from simacc.contract import laws
from simacc.harness.config import settings as opts
from simacc.harness.processes.atomic import write_atomically

SCHEMA = "simacc.observe/2"
EXIT_CODES = f"""exit codes:
  {Exit.OK:d}  the run matches the law (false-alarm rate {FALSE_ALARM:g} for the whole verdict), and the log is
     large enough to see a shift of AL by {SHIFT:g} (in {POWER:.0%} of runs)
  {Exit.FAILED:d}  it does not: the output says what differs (a length outside 1..K+1 included)
  {Exit.USAGE:d}  usage error or unreadable input: a bad option, an AL the engine cannot take, a file of an
     unknown or damaged format (the error names the line and what was expected), a request
     twice in a step or out of step order, a step with no request; nothing is written
  {Exit.INCONCLUSIVE:d}  INCONCLUSIVE: every check passed, but the log is too small to see a shift of AL by
     {SHIFT:g}: the output says the smallest shift it would see

LOG: the engine's output as it wrote it (--format, or detected), or - for stdin. simacc's own
JSON Lines: one object per request per step, {{"step": 0, "request": 7, "accept_length": 3}}
(accept_length = accepted drafts + 1; "drafted": d for a step of d < K drafts). docs/laws.md
says what to save from each engine's run, and the one command that checks it."""


def neighbours(law):
    """The laws a log that fails ``law`` may fit: every other engine's at the same AL and ``K``,
    and this engine's at ``AL + 1`` and ``AL - 1``."""
    found = [laws.law(e, law.length, law.steps) for e in laws.ENGINES if e != law.engine.id]
    found += [laws.law(law.engine.id, law.length + shift, law.steps) for shift in (1, -1) if law.length + shift > 0]
    return [other for other in found if not other.cannot]


def render(verdict, name, source_format):
    law = verdict.law
    inside = sum(verdict.counts)
    shares = [c / max(inside, 1) for c in verdict.counts]
    mean, sd = laws.spread(shares)
    what = {"records": f"{verdict.records} records, {verdict.steps} steps, {verdict.requests} requests",
            "counts": f"{verdict.records} steps counted (a histogram: the distribution and the mean are judged)",
            "mean": f"a mean over {verdict.records} steps (only the mean is judged)"}[verdict.supports]
    lines = [f"{name} ({source_format}): {what}, against {law.engine.title} at AL {law.length:g}, K = {law.steps} "
             f"({law.knob})"]
    if verdict.supports != "mean":
        lines += [f"  P(accept_length = {', '.join(str(a) for a in range(1, law.steps + 2))})",
                  f"    the law:  {' '.join(f'{p:.4f}' for p in law.accepted)}  mean {law.mean:.4f}  sd {law.sd:.3f}  "
                  f"{laws.JOINT[law.engine.joint]}",
                  f"    the run:  {' '.join(f'{p:.4f}' for p in shares)}  mean {mean:.4f}  sd {sd:.3f}"
                  + (f"  (and {verdict.outside} outside 1..{law.steps + 1})" if verdict.outside else "")
                  + (f"  (and {verdict.fewer} records of fewer drafts)" if verdict.fewer else "")]
    lines.append("")
    for check in verdict.checks:
        lines.append(f"  {'pass' if check.passed else 'FAIL'}  {check.name}: {check.said}")
    tests = _statistical(verdict)
    lines += ["", f"power: {verdict.power.said()}, at its false-alarm rate", ""]
    rate = f"false-alarm rate {FALSE_ALARM:g} in all: {FALSE_ALARM / tests:.3g} for each of its {tests} statistical " \
           "checks" if tests > 1 else f"false-alarm rate {FALSE_ALARM:g} for its one statistical check"
    if verdict.status == "pass":
        lines.append(f"MATCHES the law ({rate})")
    elif verdict.status == "inconclusive":
        lines.append(f"INCONCLUSIVE: every check passed, but the log is too small to see a shift of AL by {SHIFT:g} "
                     f"(it sees {verdict.power.shift:.3g}); a log of about "
                     f"{_needed(verdict)} {verdict.power.unit} would")
    else:
        lines.append("DOES NOT MATCH the law:")
        lines += [f"  - {d}" for d in verdict.differences]
        if verdict.fits:
            lines.append(f"  the log passes the law of: {'; '.join(verdict.fits)}")
    return "\n".join(lines)


def _statistical(verdict):
    return sum(c.name not in ("lengths", "one length per step", "K drafts each") for c in verdict.checks)


def _needed(verdict):
    """About how many units would see a shift of :data:`SHIFT`: the smallest power of two."""
    law, n = verdict.law, max(verdict.power.units, 1)
    each = FALSE_ALARM / max(_statistical(verdict), 1)
    largest = max(law.mean - 1, law.steps + 1 - law.mean)
    while shift(n, law.sd, largest, law.steps, 0.0, each, verdict.supports != "mean") > SHIFT:
        n *= 2
    return f"{n:,}"


def record(verdict, name, digest, source_format):
    """The runtime verification a benchmark's result can carry: status (pass, fail or
    inconclusive), observed AL, tolerance (the interval's half-width), the power (the smallest
    shift of AL it would see) and the evidence."""
    law = verdict.law
    low, high = verdict.interval
    return {
        "schema": SCHEMA, "status": verdict.status, "observed_al": verdict.observed_al,
        "tolerance": (high - low) / 2, "expected_al": law.mean, "asked_al": law.length,
        "false_alarm": FALSE_ALARM,
        "power": {"detectable_shift": verdict.power.shift if verdict.power.shift != float("inf") else None,
                  "probability": POWER, "units": verdict.power.units, "unit": verdict.power.unit,
                  "conclusive_below": SHIFT},
        "evidence": {
            "log": name, "format": source_format, "judged": verdict.supports, "sha256": digest,
            "records": verdict.records, "steps": verdict.steps, "requests": verdict.requests, "engine": law.engine.id,
            "setting": law.knob, "k": law.steps,
            "law": {"accept_length": list(range(1, law.steps + 2)), "probabilities": list(law.accepted),
                    "joint": law.engine.joint, "section": f"CONTRACT.md {law.engine.section}"},
            "interval": [low, high], "counts": list(verdict.counts), "outside": verdict.outside,
            "fewer_drafts": verdict.fewer,
            "checks": [{"name": c.name, "passed": c.passed, "detail": c.said, **c.data} for c in verdict.checks],
            "differences": list(verdict.differences), "fits": list(verdict.fits),
        },
    }


class Reading:
    """The progress line of a long read on stderr (a terminal, or ``--progress``), in the
    style of ``simacc check``'s: rewritten in place on a terminal; on a log, a line every 10% of
    the file (of stdin, every million records)."""

    def __init__(self, stream, asked):
        live = terminal.isatty(stream)
        self.status = terminal.StatusLine(stream if live or asked else None)
        self.next_line, self.next_records, self.last = 0.1, 10**6, 0.0

    def __call__(self, source, records):
        if self.status.stream is None:
            return
        now = time.monotonic()
        share = source.done / source.size if source.size else None
        of = f" ({share:.0%} of {source.size / 1e6:,.0f} MB)" if share is not None else ""
        text = f"simacc observe: reading {source.name}: {records:,} records, {source.done / 1e6:,.0f} MB{of}"
        if self.status.live:
            if now - self.last >= 0.2:
                self.status.show(text)
                self.last = now
        elif share is not None and share >= self.next_line:
            self.status.line(text)
            self.next_line = share + 0.1
        elif share is None and records >= self.next_records:
            self.status.line(text)
            self.next_records = records + 10**6

    def close(self):
        self.status.clear()


def register(subparsers):
    p = subparsers.add_parser(
        "observe", help="check a benchmark run's acceptance output against the law it asked for",
        description="Check LOG, what the engine wrote of its acceptance (a per-step log, vLLM's responses or\n"
        "Prometheus scrape, sglang's server log or responses, ATOM's stats), against the law of ENGINE\n"
        "asked for AL at K drafts per step: lengths in 1..K+1, lockstep or independent requests, no\n"
        "drift, no serial dependence, the mean with its interval, the distribution with its band, as\n"
        "far as the format carries them; state the power, print what differs, and write a runtime\n"
        "verification record.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", metavar="LOG", help="the run's output (- for stdin)")
    p.add_argument("--engine", required=True, choices=laws.ENGINES, metavar="ENGINE",
                   help=f"the engine whose law the run asked for: {', '.join(laws.ENGINES)}")
    p.add_argument("--length", required=True, type=opts.argtype(arguments.length), metavar="AL",
                   help="the mean acceptance length asked for (accepted drafts + 1)")
    p.add_argument("--steps", required=True, type=opts.argtype(opts.positive_int), metavar="K",
                   help="drafts per request per step (num_speculative_tokens)")
    p.add_argument("--format", choices=formats.FORMATS, metavar="FORMAT",
                   help=f"LOG's format (detected when left out): {', '.join(formats.FORMATS)}")
    p.add_argument("--before", type=Path, metavar="SCRAPE", help="vllm-prometheus: the scrape taken before the run, "
                   "subtracted from LOG's")
    p.add_argument("--decode-log-interval", type=opts.argtype(opts.positive_int), default=1, metavar="N",
                   help="sglang-log: the server's --decode-log-interval (default 1: a line per step)")
    p.add_argument("--progress", action="store_true", help="a progress line on stderr even when it is not a "
                   "terminal (a line every 10%%)")
    p.add_argument("--json", type=Path, metavar="PATH", help=f"also write the runtime verification record (schema "
                   f"{SCHEMA}): status, observed_al, tolerance, power, evidence")
    p.add_argument("--html", type=Path, metavar="PAGE", help="also write the verdict as one self-contained HTML page "
                   "with its plots")
    p.set_defaults(run=run)


def _open(path):
    """``(stream, size)`` of a LOG argument (stdin for -)."""
    if path == "-":
        return sys.stdin.buffer, None
    stream = open(path, "rb")
    return stream, os.fstat(stream.fileno()).st_size


def read(args, law, name, progress=None):
    """``(tally, format, sha256)`` of LOG under ``law``; a :class:`LogError` or ``OSError``."""
    tally = Tally(law)
    stream, size = _open(args.log)
    with contextlib.closing(stream) if args.log != "-" else contextlib.nullcontext():
        source = formats.Source(name, stream, size, progress)
        kind = args.format or formats.detect(source)
        if args.before is not None and kind != "vllm-prometheus":
            raise LogError(f"{name}: --before is for two vllm-prometheus scrapes, but LOG is {kind}")
        if kind == "records":
            formats.read_records(source, tally)
        elif kind == "vllm-responses":
            formats.read_vllm_responses(source, tally)
        elif kind == "vllm-prometheus":
            before = None
            if args.before is not None:
                with open(args.before, "rb") as earlier:
                    before = formats.Source(str(args.before), earlier)
                    formats.read_prometheus(source, tally, before)
            else:
                formats.read_prometheus(source, tally)
        elif kind == "sglang-log":
            formats.read_sglang_log(source, tally, args.decode_log_interval)
        elif kind == "sglang-responses":
            formats.read_sglang_responses(source, tally)
        else:
            formats.read_atom_stats(source, tally)
        for _ in source.chunks():  # the rest of a file a reader stopped short of, for its digest
            pass
    if not tally.records:
        raise LogError(f"{name}: no records ({formats.FORMATS[kind]})")
    return tally, kind, source.digest.hexdigest()


def run(args):
    def usage(message):
        print(f"simacc observe: error: {message}", file=sys.stderr)
        return Exit.USAGE

    said = arguments.check_folders("observe", args.json, args.html)
    if said:
        return usage(said.removeprefix("simacc observe: error: ") + "; try 'simacc observe --help'")
    law = laws.law(args.engine, args.length, args.steps)
    if law.cannot:
        return usage(f"{law.engine.title} cannot take AL {args.length:g}: {law.cannot}")
    name = "<stdin>" if args.log == "-" else args.log
    progress = Reading(sys.stderr, args.progress)
    try:
        try:
            tally, kind, digest = read(args, law, name, progress)
            verdict = judge(tally, candidates=neighbours(law))
        finally:  # the status line goes before anything else is printed, whatever ended the read
            progress.close()
    except LogError as e:
        message = str(e)
        return usage(message if message.startswith(name) else f"{name}: {message}")
    except OSError as e:
        return usage(f"{e.filename or name}: {e.strerror}")
    text = render(verdict, name, kind)
    print(text)
    try:
        if args.json is not None:
            write_atomically(args.json, json.dumps(record(verdict, name, digest, kind), indent=2) + "\n")
        if args.html is not None:
            from simacc.commands.serving import law_pages

            write_atomically(args.html, law_pages.observe_page(verdict, name, text))
    except OSError as e:
        return usage(f"{e.filename}: {e.strerror}")
    return {"pass": Exit.OK, "fail": Exit.FAILED, "inconclusive": Exit.INCONCLUSIVE}[verdict.status]
