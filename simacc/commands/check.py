"""``simacc check IMPL``: a property-by-property conformance verdict for one implementation.

The properties run in a pytest session in a child process (:mod:`simacc.harness.sessions.session`),
which loads the implementation; this process never imports it. It prints the header once the
child says what it loaded, shows progress as results come, and builds the verdict
(:mod:`simacc.commands.verdict`) from what it heard: an implementation that ends its process,
at import or in a call, cannot turn the check into a success. ``--list`` runs the same
session up to its collection, and prints the properties that apply with their claims.
"""

import argparse
import difflib
import json
import platform
import sys
import time
from pathlib import Path

from simacc.commands import terminal, verdict
from simacc.commands.exits import Exit, SessionError
from simacc.commands.progress import Progress
from simacc.harness.config import settings as opts
from simacc.harness.config.status import Status
from simacc.harness.judging import catalogue
from simacc.harness.processes import forkserver
from simacc.harness.processes.atomic import write_atomically
from simacc.harness.sessions import session

OPTIONS = ("contract", "level", "device", "context", "run_context", "profile", "max_examples", "seed", "timeout",
           "fixed_token_id", "refused_drafts", "tokenizer", "xfails", "repro_dir", "corpus", "properties", "database",
           "database_readonly")
EXIT_CODES = f"""exit codes:
  {Exit.OK:d}    conformant: every property that ran passed (or failed as the xfails file expects)
  {Exit.FAILED:d}    not conformant: a failure, a hang past --timeout, a crash, an implementation that
       ended its process or modified the harness, an unexpected pass of a property listed
       in the xfails file; or incomplete: the session ended before it could vouch for the rest
  {Exit.USAGE:d}    usage error (bad IMPL, option or file; nothing is run), or pytest could not
       collect the properties
  {Exit.NOTHING_CHECKED:d}    nothing checked: no property ran the implementation (all skipped or not
       applicable, e.g. --device cuda without CUDA), or --property matched none
       (--list: no property applies)
  {Exit.INTERRUPTED:d}  interrupted (Ctrl-C or SIGTERM); the verdict so far is printed

output: the header, a progress line on a terminal (a line per property on a log), the
failures with their details, what did not run grouped by reason, and one summary line.
-v adds the whole table (and a progress line per test on a log); -q prints only the
failures and the summary. Colour on a terminal; NO_COLOR turns it off, FORCE_COLOR on."""


class UsageError(Exception):
    """A bad argument: one line, exit code 2, nothing run."""


def register(subparsers):
    p = subparsers.add_parser(
        "check",
        help="check an implementation against every property and print a verdict",
        description="Run the property suite against IMPL (pytest and xdist underneath, in a child process) "
        "and print a verdict per property.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("impl", nargs="?", default=None, metavar="IMPL", type=opts.argtype(str),
                   help="'package.module:attribute' or 'path/to/file.py:attribute' (env SIMACC_IMPL)")
    opts.add_arguments(p, OPTIONS, parse=CONTRACT_PARSE)
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure (the rest: not run)")
    p.add_argument("--list", action="store_true", help="list the properties that apply to IMPL, each with its "
                   "claim, and run none (-v: their tests, and what does not apply and why)")
    p.add_argument("-n", dest="workers", type=opts.argtype(opts.workers), default="auto", metavar="WORKERS",
                   help="pytest-xdist worker processes (default auto), each running torch on its share of the "
                   "cores; 0 runs the properties in one process: quicker to start, but a crash (or a call stuck in "
                   "C code) ends the whole check")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the verdict as JSON (schema simacc.check/1)")
    p.add_argument("--junitxml", type=Path, metavar="PATH", help="also write the verdict as JUnit XML")
    p.add_argument("--html", type=Path, metavar="REPORT", help="also write the verdict as one self-contained HTML "
                   "page, a failing distribution plotted against the expected one (plots need matplotlib)")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="the whole table, and on a log a progress line "
                      "per test")
    loud.add_argument("-q", "--quiet", action="store_true", help="no header or progress: the failures and the "
                      "summary line only")
    p.set_defaults(run=run, end_process=True)


HINT = "try 'simacc check --help'"
RANKS = "ranks_agree_given_the_same_inputs_and_seed"


def run(args):
    """``simacc check``: the verdict on stdout, its exit code returned."""
    args.simacc_impl = args.impl
    verbosity = 1 if args.verbose else -1 if args.quiet else 0
    try:
        for path in (args.json, args.junitxml, args.html):
            if path is not None and not path.resolve().parent.is_dir():
                raise UsageError(f"{path}: no such folder {path.parent}")
        if args.list:
            return list_properties(opts.given(args), verbosity)
        result = run_check(opts.given(args), workers=args.workers, quiet=args.quiet, verbose=args.verbose,
                           exitfirst=args.exitfirst)
    except (UsageError, opts.SettingsError) as e:
        print(f"simacc check: error: {e}; {HINT}", file=sys.stderr)
        return Exit.USAGE
    except SessionError as e:
        print(f"simacc check: error: {e}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr)
        return Exit.USAGE
    print(("" if args.quiet else "\n") + verdict.render(result, verbosity, terminal.colours(sys.stdout)), flush=True)
    try:
        if args.json is not None:
            write_atomically(args.json, json.dumps(result.to_json(), indent=2) + "\n")
        if args.junitxml is not None:
            write_atomically(args.junitxml, verdict.junit(result))
        if args.html is not None:
            from simacc.commands import report_html

            write_atomically(args.html, report_html.page(result))
    except OSError as e:
        print(f"simacc check: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return Exit.USAGE
    if result.interrupted:
        print("simacc check: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    return result.exit_code


def contract_name(text):
    """``--contract``'s value: the name of a contract of the catalogue's (``ValueError`` naming
    them), whose records are imported only when the option is given."""
    from simacc import strategies as sx

    return sx.contract(text).name


CONTRACT_PARSE = {"contract": contract_name}


def write_json(result, path):
    """Write ``result.to_json()`` to ``path`` atomically (the other commands' JSON too)."""
    write_atomically(path, json.dumps(result.to_json(), indent=2) + "\n")


def header_of(chosen, loaded, given=None):
    """The verdict's header: the settings and what the child said it loaded (and, with the
    options ``given``, where the fixed id came from)."""
    return {
        "impl": chosen.impl,
        "file": loaded.get("source", ""),
        "version": loaded.get("version", ""),
        "contract": loaded.get("contract"),
        "contract_from": loaded.get("contract_from"),
        "writes_a_fixed_id": loaded.get("writes_a_fixed_id"),  # what the header says of the contract
        "samples_drafts_against_logits": loaded.get("samples_drafts_against_logits"),
        "level": loaded.get("level", chosen.level),
        "fixed_token_id": loaded.get("fixed_token_id"),
        "fixed_token_id_from": opts.origin("fixed_token_id", given or {}),
        "refused_drafts": chosen.refused_drafts,
        "tokenizer": str(chosen.tokenizer) if chosen.tokenizer else None,
        "device": chosen.device,
        "devices": list(chosen.devices),
        "cuda_available": loaded.get("cuda_available"),
        "contexts": list(chosen.contexts),
        "run_context": chosen.run_context,
        "profile": chosen.profile,
        "max_examples": chosen.max_examples,
        "seed": chosen.seed,
        "timeout_s": chosen.timeout,
        "xfails": str(chosen.xfails) if chosen.xfails else None,
        "repro_dir": str(chosen.repro_dir),
        "corpus": str(chosen.corpus),
        "simacc": loaded.get("simacc"),
        "torch": loaded.get("torch"),
        "hypothesis": loaded.get("hypothesis"),
        "python": platform.python_version(),
    }


def run_check(given, *, workers="auto", quiet=False, verbose=False, exitfirst=False):
    """Check the implementation ``given`` names (``{option: value}``, as :func:`opts.given`
    reads them) and return the :class:`~simacc.commands.verdict.Verdict`. Prints the header
    (stdout) and the progress (stderr) unless ``quiet``; ``exitfirst`` stops at the first
    failure. Raises :class:`UsageError` and :class:`SessionError`."""
    chosen = _chosen(given)
    progress = Progress(sys.stderr, quiet, verbose)
    loaded = {}

    def on_event(event):
        kind = event["event"]
        if kind == "implementation" and not loaded:
            loaded.update(event)
            if not quiet:
                print(verdict.format_header(header_of(chosen, loaded, given)), flush=True)
        elif kind == "collected":
            progress.collected(event["nodeids"], event.get("session", 0))
        elif kind == "other_modes":  # the tests the later sessions will run, before they start
            progress.collected(event["nodeids"], "later")
        elif kind == "started":
            progress.started(event["nodeid"])
        elif kind == "result":
            progress.finished(verdict.result_of(event))
        elif kind == "warning":
            progress.warn(event["message"])

    start = time.monotonic()
    # the session server, and with it now (on the other core, while the server imports torch)
    # the rank server, where the rank property may run (ARCHITECTURE.md, "A simacc check run")
    forkserver.server(ranks_now=not chosen.properties or any(catalogue.selects(p, RANKS) for p in chosen.properties))
    try:
        heard = session.run(chosen, workers, on_event, extra=("-x",) if exitfirst else ())
    finally:
        progress.close()
    result = _verdict(chosen, heard, loaded, given, exitfirst)
    result.seconds = round(time.monotonic() - start, 1)
    return result


def _chosen(given):
    chosen = opts.resolve(given)
    if chosen.impl is None or chosen.references:
        raise UsageError("no implementation selected: give IMPL ('package.module:attribute' or "
                         "'path/to/file.py:attribute') or set SIMACC_IMPL")
    return chosen


def _usable(chosen, heard, loaded):
    """Raise the :class:`SessionError` that says why ``heard`` holds no verdict, if it does not."""
    errors = heard.of("impl_error")
    if errors:
        raise SessionError(errors[0]["message"])
    if heard.of("collect_error"):
        first = heard.of("collect_error")[0]
        raise SessionError(f"pytest could not collect {first['nodeid'] or 'the properties'}", first["message"])
    interrupted = bool(heard.of("interrupted"))
    death = None if interrupted else heard.death  # (Status, line): how the child ended, if it never finished
    if not loaded and not heard.finished and not interrupted:
        why = death[1] if death else f"it ended with exit code {heard.returncode}"
        raise SessionError(f"IMPL {chosen.impl!r}: the process importing it died before it said what it loaded: {why}",
                         heard.output)
    if not heard.of("collected") and heard.returncode not in (0, 5) and not interrupted:
        raise SessionError(f"pytest exited with code {heard.returncode} before running any property", heard.output)


def _verdict(chosen, heard, loaded, given=None, exitfirst=False):
    """The verdict of a finished session, or the exception that says why there is none."""
    _usable(chosen, heard, loaded)
    interrupted = bool(heard.of("interrupted"))
    death = None if interrupted else heard.death  # (Status, line): how the child ended, if it never finished
    finished = heard.finished
    stopped = "interrupted" if interrupted else "; ".join(
        dict.fromkeys(e["not_run"] for e in heard.of("finished") if e.get("not_run"))) if finished else (
        f"the pytest process died: {death[1]}" if death else
        f"the pytest process ended early, with exit code {heard.returncode}")
    collected = [n for e in heard.of("collected") for n in e["nodeids"]]
    results = [verdict.result_of(e) for e in heard.of("result")]
    if death:  # the one process of the session died under the test it was running
        reported = {r.nodeid for r in results}
        results += [verdict.result_of({"nodeid": e["nodeid"], "status": death[0].value,
                                       "message": f"the process running it died: {death[1]}"})
                    for e in heard.of("started") if e["nodeid"] not in reported]
    not_applicable = {k: v for e in heard.of("not_applicable") for k, v in e["items"].items()}
    header = header_of(chosen, loaded, given)
    header["pytest_command"] = heard.command
    result = verdict.build(header, collected, results, not_applicable, stopped, interrupted, exitfirst)
    internal = [e["message"] for e in heard.of("internal_error")]
    if internal:
        result.notes.append(f"pytest stopped with an internal error: {internal[0]}")
    if not interrupted and (not finished or internal) and result.exit_code != Exit.FAILED:
        # every row it reported passed, but the session never said it was done: no success
        result.exit_code = Exit.FAILED
        result.incomplete = "pytest stopped with an internal error" if internal else stopped
    if not finished and not interrupted:
        result.notes.append(stopped + (f"; its output ended with: {heard.output.splitlines()[-1]}" if heard.output
                                       else ""))
    unmatched = _unmatched(chosen.properties, [*collected, *not_applicable])
    if chosen.properties and not result.results and not not_applicable:
        result.reason = f"--property {', '.join(chosen.properties)} matches no property{_near(chosen.properties)}"
    else:
        result.notes += [f"--property {p} matches no property{_near([p])}" for p in unmatched]
    result.notes += list(dict.fromkeys(e["message"] for e in heard.of("warning")))
    for r in result.results:
        if r.status == Status.FAIL:
            r.replay = replay(r, chosen)
    return result


def _unmatched(patterns, nodeids):
    """The ``--property`` patterns that select none of the tests ``nodeids``."""
    names = [verdict.split_nodeid(n)[1] for n in nodeids]
    return [p for p in patterns if not any(catalogue.selects(p, name) for name in names)]


def _near(patterns):
    """``; did you mean ...?`` for property ids close to ``patterns`` (empty when none is)."""
    from simacc import properties

    ids = [prop.id for prop in properties.every_property()]
    near = [m for p in patterns for m in difflib.get_close_matches(p.partition("[")[0], ids, n=1, cutoff=0.6)]
    return f"; did you mean {' or '.join(dict.fromkeys(near))}?" if near else ""


def list_properties(given, verbosity=0):
    """``simacc check --list``: the session up to its collection (the implementation loaded,
    what does not apply deselected), then each property that applies with its claim; exit 0,
    or 5 when none applies."""
    chosen = _chosen(given)
    loaded = {}

    def on_event(event):
        if event["event"] == "implementation" and not loaded:
            loaded.update(event)
            if verbosity >= 0:
                print(verdict.format_header(header_of(chosen, loaded, given)) + "\n", flush=True)

    heard = session.run(chosen, 0, on_event, extra=("--collect-only",))
    _usable(chosen, heard, loaded)
    collected = list(dict.fromkeys(n for e in heard.of("collected") for n in e["nodeids"]))
    not_applicable = {k: v for e in heard.of("not_applicable") for k, v in e["items"].items()}
    print("\n".join(listing(collected, not_applicable, verbosity)))
    return Exit.OK if collected else Exit.NOTHING_CHECKED


def listing(collected, not_applicable, verbosity=0):
    """The lines of ``--list``: a property a line with its claim (with ``verbosity`` 1, its
    tests below it and then what does not apply, grouped by why)."""
    from simacc import properties

    claims = {prop.id: prop.summary for prop in properties.every_property()}
    tests = {}
    for nodeid in collected:
        tests.setdefault(verdict.split_nodeid(nodeid)[0], []).append(verdict.split_nodeid(nodeid)[1])
    skipped = {verdict.split_nodeid(n)[0] for n in not_applicable} - set(tests)
    width = max([0, *map(len, tests)])
    lines = []
    for pid, names in tests.items():
        lines.append(f"{pid:<{width}}  {claims.get(pid, '')}".rstrip())
        if verbosity > 0:
            lines += [f"    {name}" for name in names]
    if verbosity > 0 and not_applicable:
        reasons = {}
        for nodeid, why in not_applicable.items():
            reasons.setdefault(why, set()).add(verdict.split_nodeid(nodeid)[0])
        lines += ["", "not applicable:"]
        lines += [f"  {why}: {', '.join(sorted(pids))}" for why, pids in reasons.items()]
    said = f"{len(tests)} {'property applies' if len(tests) == 1 else 'properties apply'}" if tests \
        else "no property applies"
    if skipped:
        said += f"; {len(skipped)} {'does' if len(skipped) == 1 else 'do'} not" + (" (-v says why)" if verbosity <= 0
                                                                                  else "")
    return [*lines, "", said] if lines else [said]


def replay(result, chosen):
    """The command that replays the failure ``result`` (a row) of a run with ``chosen``
    settings (:func:`simacc.harness.model.recording.replay_command`)."""
    from simacc.harness.model.recording import replay_command

    return replay_command(chosen.impl, repro=result.repro, test=result.nodeid and verdict.split_nodeid(result.nodeid)[1],
                          fixed_token_id=chosen.fixed_token_id, seed=chosen.seed, database=chosen.database,
                          tokenizer=chosen.tokenizer and opts.shown(chosen.tokenizer))
