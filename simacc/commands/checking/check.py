"""``simacc check IMPL``: a property-by-property conformance verdict for one implementation.

The properties run in a pytest session in a child process
(:func:`simacc.commands.checking.conformance.run_check`), which loads the implementation; this
process never imports it. It prints the header once the child says what it loaded, shows
progress as results come, and prints the verdict (:mod:`simacc.commands.checking.verdict`).
``--list`` runs the same session up to its collection, and prints the properties that apply
with their claims.
"""

import argparse
import sys
from pathlib import Path

from simacc.commands import terminal
from simacc.commands.checking import conformance, verdict
from simacc.commands.checking.conformance import UsageError
from simacc.commands.exits import Exit, SessionError
from simacc.harness.config import settings as opts
from simacc.harness.processes.atomic import write_atomically
from simacc.harness.sessions import session

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
    opts.add_arguments(p, conformance.OPTIONS)
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
        result = conformance.run_check(opts.given(args), workers=args.workers, quiet=args.quiet,
                                       verbose=args.verbose, exitfirst=args.exitfirst)
    except (UsageError, opts.SettingsError) as e:
        print(f"simacc check: error: {e}; {HINT}", file=sys.stderr)
        return Exit.USAGE
    except SessionError as e:
        print(f"simacc check: error: {e}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr)
        return Exit.USAGE
    print(("" if args.quiet else "\n") + verdict.render(result, verbosity, terminal.colours(sys.stdout)), flush=True)
    try:
        if args.json is not None:
            conformance.write_json(result, args.json)
        if args.junitxml is not None:
            write_atomically(args.junitxml, verdict.junit(result))
        if args.html is not None:
            from simacc.commands.checking import report_html

            write_atomically(args.html, report_html.page(result))
    except OSError as e:
        print(f"simacc check: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return Exit.USAGE
    if result.interrupted:
        print("simacc check: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    return result.exit_code


def list_properties(given, verbosity=0):
    """``simacc check --list``: the session up to its collection (the implementation loaded,
    what does not apply deselected), then each property that applies with its claim; exit 0,
    or 5 when none applies."""
    chosen = conformance.chosen_from(given)
    loaded = {}

    def on_event(event):
        if event["event"] == "implementation" and not loaded:
            loaded.update(event)
            if verbosity >= 0:
                print(verdict.format_header(conformance.header_of(chosen, loaded, given)) + "\n", flush=True)

    heard = session.run(chosen, 0, on_event, extra=("--collect-only",))
    conformance.usable(chosen, heard, loaded)
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
