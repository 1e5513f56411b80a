"""``simacc fuzz IMPL --minutes M``: explore until the time is up, keeping every find where
every later run, on any machine that shares the example database, replays it first.

**Passes.** A session is passes over the whole catalogue, each one pytest session of the
properties (:class:`simacc.harness.sessions.session.Running`) with its modules in a shuffled order.
Each pass gives every property more examples than the last (:data:`SCHEDULE`),
so a session reaches every property within its first seconds, and a bug that one property
finds in its first examples is not left waiting behind another property's thousands. (A
pass costs a few seconds of start-up, mostly importing torch, whatever its length: hence
the first pass has 100 examples, not 10.) HypoFuzz instead gives more time to the tests
that keep reaching new behaviour, which needs coverage of the implementation; growing
passes need nothing of it. HypoFuzz runs the same properties (each item is a Hypothesis
test, :meth:`simacc.harness.judging.catalogue.Property.hypothesis_test`), but side by side
on the same cores it found none of the rare-case mutants this engine found (the batch of 7
in 3 trials of 3, 7.7 to 33 s; docs/fuzzing.md, "Measured"), and it stops at a worker's
first find with today's Hypothesis: this engine stays.

**Workers.** ``-n N`` runs N passes at a time, all with the same example database, so the
find of one worker is replayed first by the next pass of every other. Their examples are
independent: each pass draws Hypothesis's own random seeds in a process of its own. (With
``--seed S`` each worker has a stream of seeds from S instead, and its passes can be run
again; but Hypothesis keeps no database for a seeded test, so a seeded session replays the
database and writes its finds to repro files only.) Each pass runs its properties in one
pytest-xdist worker: a crash, or a call stuck in C code, fails that property and the pass
goes on. Across machines: the same command on each, with a shared ``--database``
(docs/fuzzing.md).

**Finds.** A failing property writes its repro file (one per distinct failure,
:func:`simacc.harness.model.repro_files.file_name`) and its example to the database. A failure
whose repro file was not there when the session started is new.

**Stopping.** At the time limit, on Ctrl-C or on SIGTERM, every pass under way is
interrupted as a Ctrl-C would interrupt it (the property it was running is not counted;
what it found is in the database already), and the summary says what ran.
"""

import argparse
import dataclasses
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from simacc.commands import terminal
from simacc.commands.checking import conformance, verdict
from simacc.commands.exits import Exit, SessionError
from simacc.harness.config import contracts
from simacc.harness.config import settings as opts
from simacc.harness.config.status import CHECKED, FAILED, Status, failures_first, worst
from simacc.harness.processes import interrupts
from simacc.harness.processes.atomic import write_atomically
from simacc.harness.sessions import session

OPTIONS = tuple(name for name in conformance.OPTIONS if name != "profile")  # a fuzz session is the thorough profile
SCHEDULE = (100, 400, 1600, 6400)  # examples per property in each pass; the last one repeats
STOP_GRACE_S = 20  # how long an interrupted pass may take to end before it is killed
POLL_S = 0.2
SCHEMA = "simacc.fuzz/1"
EXIT_CODES = f"""exit codes:
  {Exit.OK:d}    the time was up and no property failed
  {Exit.FAILED:d}    a property failed (new, or found again; each has its replay command)
  {Exit.USAGE:d}    usage error: a bad IMPL, option or file, an example database that cannot be
       reached, or pytest could not collect the properties
  {Exit.NOTHING_CHECKED:d}    nothing to fuzz: no property applies, or --property matched none; or nothing
       fuzzed: the time was up before any property finished a run
  {Exit.INTERRUPTED:d}  interrupted (Ctrl-C or SIGTERM): the summary says what ran"""


class NothingToFuzz(Exception):
    """No property ran the implementation in a whole pass: exit 5, with why."""


class FirstFailure(Exception):
    """``-x``: a failure was found, and the session stops."""


def register(subparsers):
    p = subparsers.add_parser(
        "fuzz",
        help="explore until the time is up, in growing passes over every property, keeping each find",
        description="Run the properties in passes until --minutes have passed (or Ctrl-C): each pass over every "
        f"property, with {', '.join(map(str, SCHEDULE))}, then {SCHEDULE[-1]} examples per property again and "
        "again, in -n worker processes that share one example database. Every failing "
        "example is written to the database (replayed first by every later run that uses it) and to a repro file.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("impl", nargs="?", default=None, metavar="IMPL", type=opts.argtype(str),
                   help="'package.module:attribute' or 'path/to/file.py:attribute' (env SIMACC_IMPL)")
    p.add_argument("--minutes", type=opts.argtype(opts.positive_number("minutes")), required=True,
                   help="how long to fuzz (fractions allowed)")
    opts.add_arguments(p, OPTIONS, parse=conformance.CONTRACT_PARSE)
    p.add_argument("-n", "--workers", type=opts.argtype(opts.positive_int), default=cores(), metavar="N",
                   help=f"passes run at a time, each in its own process (default: this machine's cores, {cores()})")
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure")
    p.add_argument("--json", type=Path, metavar="PATH", help=f"also write the summary as JSON (schema {SCHEMA})")
    p.add_argument("-q", "--quiet", action="store_true", help="no header or progress, only the summary")
    p.set_defaults(run=run, end_process=True)


def cores():
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def examples_in_pass(number, max_examples=None):
    """Examples per property in pass ``number`` (from 1): ``--max-examples`` in every pass
    when given, else :data:`SCHEDULE`."""
    return max_examples or SCHEDULE[min(number, len(SCHEDULE)) - 1]


@dataclass
class Failure:
    """A distinct failure of the session: a repro file, or a test without one."""

    name: str  # id[parameters-device], as a test is shown
    message: str
    replay: str | None
    new: bool
    seconds: float  # into the session when first found
    worker: int
    pass_number: int


@dataclass
class Tally:
    """What a session ran and found: examples and completed runs per property, the worst
    status of each, the distinct failures."""

    known: set  # repro files there before the session: their failures are not new
    examples: Counter = field(default_factory=Counter)
    runs: Counter = field(default_factory=Counter)
    status: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)
    not_applicable: dict = field(default_factory=dict)
    passes: int = 0  # run to their end
    cut: int = 0  # interrupted when the session stopped

    def add(self, result, worker, pass_number, seconds, chosen):
        """Count one result; the :class:`Failure` when it is a failure not seen before."""
        if result.examples is not None:  # None: not a Hypothesis test
            self.examples[result.id] += result.examples
        self.runs[result.id] += 1
        self.status[result.id] = worst(filter(None, (self.status.get(result.id), result.status)))
        if result.status not in FAILED:
            return None
        name = verdict.split_nodeid(result.nodeid)[1]
        key = result.repro or name
        if key in self.failures:
            return None
        message = (result.message.splitlines() or [result.status.value])[0]
        shown = dataclasses.replace(result, repro=str(opts.shown(result.repro))) if result.repro else result
        replay = conformance.replay(shown, chosen)
        found = Failure(name, message, replay, not result.repro or result.repro not in self.known, seconds, worker,
                        pass_number)
        self.failures[key] = found
        return found


@dataclass
class Worker:
    """One worker: its seed stream and the pass it is running."""

    number: int
    seeds: random.Random  # its seeds under --seed, and its order of the property modules
    passes: int = 0
    running: object = None  # the session.Running of the pass under way
    chosen: object = None  # that pass's settings (its seed, its examples)
    stopped: bool = False  # interrupted by the session, not ended by itself


def run(args):
    """``simacc fuzz``: the summary on stdout, its exit code returned."""
    args.simacc_impl = args.impl
    try:
        if args.json is not None and not args.json.resolve().parent.is_dir():
            raise opts.SettingsError(f"{args.json}: no such folder {args.json.parent}")
        # the thorough profile whatever CI or SIMACC_PROFILE say: resolved as ci with a database, a
        # session would take ci's fixed seed, and a seeded test keeps no find in the database
        chosen = opts.resolve({**opts.given(args), "profile": "thorough"}, parse=conformance.CONTRACT_PARSE)
        if chosen.impl is None or chosen.references:
            raise opts.SettingsError("no implementation selected: give IMPL ('package.module:attribute' or "
                                     "'path/to/file.py:attribute') or set SIMACC_IMPL")
        _reach_database(chosen)
    except opts.SettingsError as e:
        print(f"simacc fuzz: error: {e}", file=sys.stderr)
        return Exit.USAGE
    fuzz = Session(chosen, args.workers, args.minutes * 60, args.quiet, args.exitfirst)
    try:
        code = fuzz.run()
    except SessionError as e:
        print(f"simacc fuzz: error: {e}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr)
        return Exit.USAGE
    print(fuzz.summary(code))
    if args.json is not None:
        try:
            write_atomically(args.json, json.dumps(fuzz.to_json(code), indent=2) + "\n")
        except OSError as e:
            print(f"simacc fuzz: error: {e.filename}: {e.strerror}", file=sys.stderr)
            return Exit.USAGE
    return code


def _reach_database(chosen):
    """A database that cannot be reached is a usage error now, before any pass starts."""
    if not chosen.database:
        return
    from simacc.harness.config import profiles

    try:
        profiles.open_database(chosen.database)
    except profiles.DatabaseError as e:
        raise opts.SettingsError(str(e)) from None


class Session:
    """A fuzz session: its workers, what they found, and what it printed."""

    def __init__(self, chosen, workers, seconds, quiet=False, exitfirst=False):
        self.chosen, self.seconds, self.quiet, self.exitfirst = chosen, seconds, quiet, exitfirst
        self.workers = [Worker(n, random.Random(None if chosen.seed is None else f"simacc-fuzz:{chosen.seed}:{n}"))
                        for n in range(1, workers + 1)]
        self.tally = Tally(set(map(str, chosen.repro_dir.glob("*.json"))))
        self.loaded = {}
        self.warnings = []
        self.start = time.monotonic()
        self.stopped_by = "time is up"
        self.reason = ""  # why there was nothing to fuzz, or why nothing was fuzzed
        self.fuzzed = False  # passes ran, and none finished a run of a property (exit 5 all the same)
        self.modes = chosen.per_process()  # a pass runs one grad mode, its processes nothing else (§11.5)
        self.idle = {}  # grad mode -> why a whole pass in it ran nothing: no later pass runs it
        self.status = terminal.StatusLine(None if quiet else sys.stderr)

    @property
    def elapsed(self):
        return time.monotonic() - self.start

    def run(self):
        """Fuzz until the time is up (or Ctrl-C, or a SIGTERM, which :func:`simacc.commands.cli.main`
        takes as one); the exit code. Raises :class:`SessionError`."""
        deadline = self.start + self.seconds
        try:
            while time.monotonic() < deadline:
                for worker in self.workers:
                    if worker.running is None:
                        self._start(worker)
                    self._hear(worker)
                    if worker.running.done:
                        self._finish(worker)
                self.status.show(self._progress())
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            self.stopped_by = "interrupted"
        except FirstFailure:
            self.stopped_by = "stopped at the first failure"
        except NothingToFuzz as e:
            self._stop_all()
            self.status.clear()
            self.reason = str(e)
            return Exit.NOTHING_CHECKED
        except BaseException:
            self._stop_all()
            self.status.clear()
            raise
        self._stop_all()
        self.status.clear()
        if self.stopped_by == "interrupted":
            return Exit.INTERRUPTED
        if self.tally.failures:
            return Exit.FAILED
        if not any(status in CHECKED for status in self.tally.status.values()):
            self.reason = (f"no property finished a run in {_clock(self.elapsed)}: the session stopped while the "
                           "first ones ran (run longer, or see --timeout)")
            self.fuzzed = True
            return Exit.NOTHING_CHECKED
        return Exit.OK

    def _start(self, worker):
        from simacc.harness.config.settings import properties_dir

        worker.passes += 1
        seed = worker.seeds.getrandbits(32) if self.chosen.seed is not None else None  # None: Hypothesis's own
        modes = [m for m in self.modes if m.run_context not in self.idle]
        worker.chosen = dataclasses.replace(modes[(worker.number + worker.passes) % len(modes)], seed=seed,
                                            max_examples=examples_in_pass(worker.passes, self.chosen.max_examples))
        modules = sorted(properties_dir().glob("test_*.py"))
        worker.seeds.shuffle(modules)
        with interrupts.deferred():  # a Ctrl-C now is taken once the pass can be stopped
            worker.running = session.Running(worker.chosen, 1, targets=list(map(str, modules)))
        worker.stopped = False

    def _hear(self, worker):
        for event in worker.running.hear():
            kind = event["event"]
            if kind == "implementation" and not self.loaded:
                self.loaded.update(event)
                if not self.quiet:
                    self.status.clear()
                    print(self.header(), flush=True)
            elif kind == "impl_error":
                raise SessionError(event["message"])
            elif kind == "collect_error":
                raise SessionError(f"pytest could not collect {event['nodeid'] or 'the properties'}", event["message"])
            elif kind == "not_applicable":
                self.tally.not_applicable.update(event["items"])
            elif kind == "warning" and event["message"] not in self.warnings:
                self.warnings.append(event["message"])
                self.status.line(f"warning: {event['message']}")
            elif kind == "result" and not (worker.stopped and event.get("unfinished")):
                self._count(worker, event)

    def _count(self, worker, event):
        """Count one result of ``worker``'s pass; say a failure not seen before."""
        found = self.tally.add(verdict.result_of(event), worker.number, worker.passes, self.elapsed, worker.chosen)
        if found is not None:
            self.status.line(f"[{_clock(found.seconds)}] {'new' if found.new else 'known'} failure: "
                             f"{found.name}: {found.replay}")
            if self.exitfirst and not worker.stopped:
                raise FirstFailure

    def _finish(self, worker):
        """The pass of ``worker`` has ended: count it, or say why nothing can be fuzzed."""
        heard = worker.running.close()
        worker.running = None
        if worker.stopped:
            self.tally.cut += 1
            return
        self.tally.passes += 1
        if not heard.finished:
            if not self.loaded:
                raise SessionError(f"IMPL {self.chosen.impl!r}: the process that imported it ended (exit "
                                f"{heard.returncode}) before it said what it loaded", heard.output)
            raise SessionError(f"worker {worker.number}'s pass {worker.passes} ended early, with exit code "
                            f"{heard.returncode}", heard.output)
        results = [verdict.result_of(e) for e in heard.of("result")]
        if not any(r.status in CHECKED for r in results):
            collected = [n for e in heard.of("collected") for n in e["nodeids"]]
            found = verdict.build({"devices": list(self.chosen.devices)}, collected, results,
                                  self.tally.not_applicable)
            if self.chosen.properties and not results and not self.tally.not_applicable:
                why = f"--property {', '.join(self.chosen.properties)} matches no property"
            else:
                why = found.reason or "no property ran the implementation"
            self.idle.setdefault(worker.chosen.run_context, why)
            if len(self.idle) == len(self.modes):  # in no grad mode: nothing to fuzz
                raise NothingToFuzz(self.idle[self.modes[0].run_context])
            return
        if self.status.log:
            ran = sum(r.examples or 0 for r in results)
            seed = "" if worker.chosen.seed is None else f", seed {worker.chosen.seed}"
            self.status.line(f"[{_clock(self.elapsed)}] worker {worker.number} pass {worker.passes} "
                             f"({worker.chosen.max_examples} examples per property{seed}): "
                             f"{len(results)} tests, {ran:,} examples")

    def _stop_all(self):
        """Interrupt every pass under way, all at once, and hear what each finished."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not orphan them
        try:
            running = [w for w in self.workers if w.running is not None]
            for worker in running:
                worker.stopped = True
                self._hear(worker)
                late = worker.running.overdue()
                if late is not None:  # a hang the session ended before the watchdog could: a failure all the same
                    nodeid, seconds, limit = late
                    self._count(worker, {"event": "result", "nodeid": nodeid, "status": Status.HUNG.value,
                                         "message": f"a call was still running {seconds:.0f} s into it, past its "
                                                    f"{limit:g} s time limit, when the session stopped"})
                worker.running.interrupt()
            for worker in running:
                worker.running.stop(STOP_GRACE_S)
                self._hear(worker)
                self._finish(worker)
        finally:
            signal.signal(signal.SIGINT, previous)

    def _progress(self):
        passes = "/".join(str(w.passes) for w in self.workers)
        new = sum(f.new for f in self.tally.failures.values())
        return (f"[{_clock(self.elapsed)} of {_clock(self.seconds)}] pass {passes}, "
                f"{sum(self.tally.examples.values()):,} examples, {len(self.tally.failures)} failure(s) ({new} new)")

    def header(self):
        from simacc.harness.config import profiles

        h = conformance.header_of(self.chosen, self.loaded)
        chosen = self.chosen
        schedule = (f"{chosen.max_examples} examples per property in every pass" if chosen.max_examples else
                    f"passes of {', '.join(map(str, SCHEDULE[:-1]))}, then {SCHEDULE[-1]} examples per property "
                    "each")
        seeds = (f"seeds from {chosen.seed}, so finds go to repro files only" if chosen.seed is not None
                 else "random seeds")
        return "\n".join([
            f"simacc fuzz {h['impl']}",
            f"  file:      {h['file'] or '(none)'}",
            f"  contract:  {h['contract']} ({h['contract_from']}); level {h['level']}"
            + contracts.fixed_id_text(h["writes_a_fixed_id"], h["fixed_token_id"]),
            f"  devices:   {', '.join(h['devices'])}",
            f"  schedule:  {len(self.workers)} worker(s) for {_clock(self.seconds)}; {schedule}; {seeds}",
            f"  database:  {profiles.describe(chosen.profile, chosen.database, chosen.database_readonly)}",
            f"  repro:     {opts.shown(chosen.repro_dir)}",
        ])

    def summary(self, code):
        """What ran, for how long, the examples per property, and each failure with its
        replay command, one a line; then the outcome."""
        tally = self.tally
        if code == Exit.NOTHING_CHECKED and not self.fuzzed:
            return f"NOTHING TO FUZZ: {self.reason} (exit {int(code)})"
        cut = f" and {tally.cut} cut short" if tally.cut else ""
        lines = [f"{self.stopped_by} after {self.elapsed:.1f} s: {len(self.workers)} worker(s), {tally.passes} "
                 f"whole pass(es){cut}, {sum(tally.examples.values()):,} examples over {len(tally.runs)} properties"]
        rows = sorted(sorted(tally.runs), key=lambda p: failures_first(tally.status[p]))
        if rows:
            width = max(len("property"), *map(len, rows))
            lines += ["", f"{'property':<{width}}  {'examples':>9}  {'runs':>4}  status"]
            lines += [f"{p:<{width}}  {_count(tally.examples.get(p)):>9}  {tally.runs[p]:>4}  {tally.status[p].value}"
                      for p in rows]
        if tally.not_applicable:
            lines.append(f"({len({verdict.split_nodeid(n)[0] for n in tally.not_applicable})} properties do not "
                         "apply to this implementation)")
        for new, title in ((True, "new failures"), (False, "failures found again (their repro files were there)")):
            found = [f for f in tally.failures.values() if f.new == new]
            if found:
                lines += ["", f"{title} ({len(found)}), each with its replay command:"]
                lines += [f"  {f.name}: {f.replay}" for f in found]
        new = sum(f.new for f in tally.failures.values())
        counts = f"{len(tally.failures)} failure(s), {new} new" if tally.failures else "no failures"
        if code == Exit.NOTHING_CHECKED:
            counts = self.reason
        outcome = {Exit.INTERRUPTED: "INTERRUPTED", Exit.FAILED: "FAILURES FOUND", Exit.OK: "NO FAILURES FOUND",
                   Exit.NOTHING_CHECKED: "NOTHING FUZZED"}[code]
        return "\n".join(lines + ["", f"{outcome}: {counts} (exit {int(code)})"])

    def to_json(self, code):
        tally = self.tally
        return {
            "schema": SCHEMA,
            "exit_code": int(code),
            "stopped_by": "nothing to fuzz" if code == Exit.NOTHING_CHECKED and not self.fuzzed else self.stopped_by,
            "reason": self.reason or None,
            "seconds": round(self.elapsed, 3),
            "workers": len(self.workers),
            "passes": tally.passes,
            "passes_cut_short": tally.cut,
            "header": conformance.header_of(self.chosen, self.loaded),
            "database": self.chosen.database,
            "database_readonly": self.chosen.database_readonly,
            "properties": {p: {"examples": tally.examples.get(p), "runs": tally.runs[p],
                               "status": tally.status[p].value} for p in sorted(tally.runs)},
            "failures": [{"test": f.name, "message": f.message, "replay": f.replay, "new": f.new,
                          "found_after_s": round(f.seconds, 3), "worker": f.worker, "pass": f.pass_number}
                         for f in tally.failures.values()],
            "not_applicable": len({verdict.split_nodeid(n)[0] for n in tally.not_applicable}),
        }


def _count(n):
    return "-" if n is None else f"{n:,}"


def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"
