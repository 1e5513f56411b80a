"""``simacc check IMPL``: a property-by-property conformance verdict for one implementation.

The properties run in a pytest session in a child process (:mod:`simacc.harness.session`),
which loads the implementation; this process never imports it. It prints the header once the
child says what it loaded, shows progress as results come, and builds the verdict
(:mod:`simacc.commands.verdict`) from what it heard: an implementation that ends its process,
at import or in a call, cannot turn the check into a success.
"""

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
from pathlib import Path

from simacc.commands import verdict
from simacc.commands.exits import Exit
from simacc.commands.progress import Progress
from simacc.harness import grad_modes
from simacc.harness import session
from simacc.harness import settings as opts

OPTIONS = ("contract", "level", "device", "context", "profile", "max_examples", "seed", "timeout", "fixed_token_id",
           "xfails", "repro_dir", "corpus", "properties")
EXIT_CODES = f"""exit codes:
  {Exit.OK:d}    conformant: every property that ran passed (or failed as the xfails file expects)
  {Exit.FAILED:d}    not conformant: a failure, a hang past --timeout, a crash, an implementation that
       ended its process, or an unexpected pass of a property listed in the xfails file
  {Exit.USAGE:d}    usage error (bad IMPL, option or file; nothing is run), or pytest could not
       collect the properties
  {Exit.NOTHING_CHECKED:d}    nothing checked: no property ran the implementation (all skipped or not
       applicable, e.g. --device cuda without CUDA), or --property matched none
  {Exit.INTERRUPTED:d}  interrupted (Ctrl-C)"""


class UsageError(Exception):
    """A bad argument: one line, exit code 2, nothing run."""


class CheckError(Exception):
    """The session could not check anything (the implementation would not load, pytest could
    not collect the properties): exit code 2. ``detail`` is the end of pytest's output."""

    def __init__(self, message, detail=""):
        super().__init__(message)
        self.detail = detail


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
    opts.add_arguments(p, OPTIONS)
    p.add_argument("-n", dest="workers", type=opts.argtype(opts.workers), default="auto", metavar="WORKERS",
                   help="pytest-xdist worker processes (default auto); 0 runs the properties in one process: "
                   "quicker to start, but a crash (or a call stuck in C code) ends the whole check")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the verdict as JSON (schema simacc.check/1)")
    p.add_argument("--junitxml", type=Path, metavar="PATH", help="also write the verdict as JUnit XML")
    p.add_argument("-q", "--quiet", action="store_true", help="no header or progress, only the verdict")
    p.set_defaults(run=run, end_process=True)


def run(args):
    """``simacc check``: the verdict on stdout, its exit code returned."""
    args.simacc_impl = args.impl
    try:
        for path in (args.json, args.junitxml):
            if path is not None and not path.resolve().parent.is_dir():
                raise UsageError(f"{path}: no such folder {path.parent}")
        result = run_check(opts.given(args), workers=args.workers, quiet=args.quiet)
    except (UsageError, opts.SettingsError) as e:
        print(f"simacc check: error: {e}", file=sys.stderr)
        return Exit.USAGE
    except CheckError as e:
        print(f"simacc check: error: {e}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr)
        return Exit.USAGE
    print(verdict.render(result))
    try:
        if args.json is not None:
            write_atomically(args.json, json.dumps(result.to_json(), indent=2) + "\n")
        if args.junitxml is not None:
            write_atomically(args.junitxml, verdict.junit(result))
    except OSError as e:
        print(f"simacc check: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return Exit.USAGE
    if result.interrupted:
        print("simacc check: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    return result.exit_code


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file beside it and a rename, so a reader
    never sees half a file and an error leaves nothing behind."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(result, path):
    """Write ``result.to_json()`` to ``path`` atomically (the other commands' JSON too)."""
    write_atomically(path, json.dumps(result.to_json(), indent=2) + "\n")


def header_of(chosen, loaded):
    """The verdict's header: the settings and what the child said it loaded."""
    return {
        "impl": chosen.impl,
        "file": loaded.get("source", ""),
        "version": loaded.get("version", ""),
        "contract": loaded.get("contract"),
        "contract_from": loaded.get("contract_from"),
        "level": loaded.get("level", chosen.level),
        "fixed_token_id": loaded.get("fixed_token_id"),
        "device": chosen.device,
        "devices": list(chosen.devices),
        "cuda_available": loaded.get("cuda_available"),
        "contexts": list(chosen.contexts),
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


def format_header(header):
    seed = header["seed"] if header["seed"] is not None else ("derandomized" if header["profile"] == "ci" else "random")
    cuda = "available" if header["cuda_available"] else "not available"
    examples = header["max_examples"] or "the profile's"
    lines = [
        f"simacc check {header['impl']}",
        f"  file:      {header['file'] or '(none)'}",
        f"  version:   {header['version'] or '(none)'}",
        f"  contract:  {header['contract']} ({header['contract_from']}); level {header['level']}; "
        f"fixed token id {header['fixed_token_id']}",
        f"  devices:   {', '.join(header['devices'])} (CUDA {cuda})",
        f"  grad mode: {grad_modes.describe(header['contexts'])}",
        f"  profile:   simacc-{header['profile']}, {examples} examples per property, seed {seed}",
        f"  limits:    {header['timeout_s']:g} s per call" + (f"; xfails {header['xfails']}" if header["xfails"] else ""),
        f"  versions:  simacc {header['simacc']}, torch {header['torch']}, hypothesis {header['hypothesis']}, "
        f"python {header['python']}",
    ]
    return "\n".join(lines)


def run_check(given, *, workers="auto", quiet=False):
    """Check the implementation ``given`` names (``{option: value}``, as :func:`opts.given`
    reads them) and return the :class:`~simacc.commands.verdict.Verdict`. Prints the header
    (stdout) and the progress (stderr) unless ``quiet``. Raises :class:`UsageError` and
    :class:`CheckError`."""
    chosen = opts.resolve(given)
    if chosen.impl is None or chosen.references:
        raise UsageError("no implementation selected: give IMPL ('package.module:attribute' or "
                         "'path/to/file.py:attribute') or set SIMACC_IMPL")
    progress = Progress(sys.stderr, quiet)
    loaded = {}

    def on_event(event):
        kind = event["event"]
        if kind == "implementation" and not loaded:
            loaded.update(event)
            if not quiet:
                print(format_header(header_of(chosen, loaded)), flush=True)
        elif kind == "collected":
            progress.collected(len(event["nodeids"]))
        elif kind == "started":
            progress.started(event["nodeid"])
        elif kind == "result":
            progress.finished(verdict.result_of(event))
        elif kind == "warning":
            progress.warn(event["message"])

    try:
        heard = session.run(chosen, workers, on_event)
    finally:
        progress.close()
    return _verdict(chosen, heard, loaded)


def _verdict(chosen, heard, loaded):
    """The verdict of a finished session, or the exception that says why there is none."""
    errors = heard.of("impl_error")
    if errors:
        raise CheckError(errors[0]["message"])
    if heard.of("collect_error"):
        first = heard.of("collect_error")[0]
        raise CheckError(f"pytest could not collect {first['nodeid'] or 'the properties'}", first["message"])
    interrupted = bool(heard.of("interrupted"))
    if not loaded and not heard.finished and not interrupted:
        raise CheckError(f"IMPL {chosen.impl!r}: the process that imported it ended (exit {heard.returncode}) "
                         "before it said what it loaded", heard.output)
    if not heard.of("collected") and heard.returncode not in (0, 5) and not interrupted:
        raise CheckError(f"pytest exited with code {heard.returncode} before running any property", heard.output)
    stopped = "interrupted" if interrupted else "" if heard.finished else (
        f"the pytest process ended early, with exit code {heard.returncode}")
    collected = [n for e in heard.of("collected") for n in e["nodeids"]]
    results = [verdict.result_of(e) for e in heard.of("result")]
    not_applicable = {k: v for e in heard.of("not_applicable") for k, v in e["items"].items()}
    header = header_of(chosen, loaded)
    header["pytest_command"] = heard.command
    result = verdict.build(header, collected, results, not_applicable, stopped, interrupted)
    if stopped and not interrupted:
        result.notes.append(stopped + (f"; its output ended with: {heard.output.splitlines()[-1]}" if heard.output
                                        else ""))
    if chosen.properties and not result.results and not not_applicable:
        result.reason = f"--property {', '.join(chosen.properties)} matches no property"
    result.notes += list(dict.fromkeys(e["message"] for e in heard.of("warning")))
    for r in result.results:
        if r.status.value == "FAIL":
            r.replay = _replay(r, chosen)
    return result


def _replay(result, chosen):
    """The one-line command that replays a failure: the repro file when one was written,
    else a check of that one test with the run's seed (the example database replays it)."""
    if result.repro:
        return f"simacc repro {shlex.quote(result.repro)}"
    if not result.nodeid:
        return None
    command = ["simacc", "check", chosen.impl, "--property", verdict.split_nodeid(result.nodeid)[1], "-n", "0"]
    if chosen.seed is not None:
        command += ["--seed", str(chosen.seed)]
    return shlex.join(command)
