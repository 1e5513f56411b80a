"""``simacc check IMPL``: a property-by-property conformance verdict for one implementation
(issues #4, #10.3, #14).

The property suite runs under pytest *in this process* (``pytest.main``), with a small
plugin object (:class:`_Collector`) that hears every test report. With xdist (``-n auto``,
the default) this process is only the controller and the properties run in worker
processes: a crashing implementation takes down a worker, which xdist reports as that
test's failure and replaces. ``-n 0`` runs them here too: the quickest start, without crash
isolation. Compared with a child ``python -m pytest``, that is one process start-up (and
torch import) less before the first property runs.

This module is also a pytest plugin of its own sessions (``-p simacc.commands.check``, loaded by the
workers too): it marks the tests that never call the implementation, and ends each worker
as soon as its reports are sent.

Because the session shares this process with whoever called :func:`run_check` (a test, the
zoo), :func:`_restored` gives back what a check changes for good, and the property modules
are imported afresh for it (:func:`_fresh_properties`). The command ends its process once
the verdict is out (:func:`simacc.commands.cli.end_process`): the interpreter's teardown is slow
with torch loaded, and would wait forever for a non-daemon thread the implementation left
running.

Everything pytest would reject (IMPL, contract, profile, xfails file, JSON path) is checked
first, so a usage error is one line and exit code 2 before any test runs.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import shlex
import signal
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from simacc.commands import verdict
from simacc.commands.progress import Progress
from simacc.commands.verdict import CONFORMANT, NOT_CONFORMANT, NOTHING_CHECKED
from simacc.harness import argtypes, env
from simacc.harness.impl import CONTRACTS, LEVELS, REFERENCES

USAGE, INTERRUPTED = 2, 130
_ONE_AT_A_TIME = threading.RLock()  # see run_check; reentrant: a session may run a check inside
EXIT_CODES = f"""exit codes:
  {CONFORMANT}    conformant: every property that ran passed (or failed as --xfails expects)
  {NOT_CONFORMANT}    not conformant: a failure, a hang past --timeout, a crash, or an unexpected
       pass of a property listed in --xfails
  {USAGE}    usage error (bad IMPL, option or file; nothing is run), or pytest could not
       collect the properties
  {NOTHING_CHECKED}    nothing checked: no property ran the implementation (all skipped or not
       applicable, e.g. --device cuda without CUDA), or --property matched none
  {INTERRUPTED}  interrupted (Ctrl-C)"""


class UsageError(Exception):
    """A bad argument: one line, exit code 2, nothing run."""


class CheckError(Exception):
    """pytest could not run the properties (a collection or internal error): exit code 2.
    ``detail`` is the end of pytest's own output."""

    def __init__(self, message, detail=""):
        super().__init__(message)
        self.detail = detail


def register(subparsers):
    from simacc.harness.argtypes import (
        DEVICE_HELP,
        device_choice,
        positive_int,
        positive_seconds,
        workers,
    )

    p = subparsers.add_parser(
        "check",
        help="check an implementation against every property and print a verdict",
        description="Run the property suite against IMPL (pytest and xdist underneath) and print "
        "a verdict per property.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("impl", nargs="?", default=None, metavar="IMPL",
                   help="'package.module:attribute' or 'path/to/file.py:attribute' (env SIMACC_IMPL; "
                   "default: the reference of --contract, else of eagle)")
    p.add_argument("--contract", choices=CONTRACTS, help="force the contract instead of inferring it from the signature")
    p.add_argument("--fixed-token-id", type=argtypes.fixed_token_id, metavar="N",
                   help="the id fixed mode must write where the contract takes it as an argument "
                   "(functional; default 100, sglang-jax uses 32; env SIMACC_FIXED_TOKEN_ID)")
    p.add_argument("--level", choices=LEVELS, help="exact (default): L must be the documented draw from torch's CPU "
                   "generator; semantic: for ports that draw L their own way (each call held to the L its outputs "
                   "show, the distribution of L tested; generator-exact properties not applicable)")
    p.add_argument("--device", type=device_choice, help=f"{DEVICE_HELP} (default all; cuda is skipped where it is missing)")
    p.add_argument("--max-examples", type=positive_int, metavar="N", help="examples per property (overrides the profile)")
    p.add_argument("--hypothesis-profile", dest="profile", metavar="P", help="Hypothesis profile: default, ci or thorough")
    p.add_argument("--seed", type=int, metavar="S", help="Hypothesis seed, for a reproducible run")
    p.add_argument("-n", dest="workers", type=workers, default="auto", metavar="WORKERS",
                   help="pytest-xdist worker processes (default auto); 0 runs the properties in this "
                   "process: quicker to start, but a crash (or a call stuck in C code) ends the whole check")
    p.add_argument("--timeout", type=positive_seconds, metavar="S", help="per-call time limit in seconds (default 30)")
    p.add_argument("--xfails", metavar="FILE", help="property ids expected to fail, one a line, '#' comments")
    p.add_argument("--repro-dir", metavar="DIR", help="where repro files of failures go (default .simacc/failures)")
    p.add_argument("--property", dest="select", action="append", metavar="ID", help="check only this property (repeatable)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the verdict as JSON (schema simacc.check/1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no header or progress, only the verdict")
    p.set_defaults(run=run, end_process=True)


def run(args):
    """``simacc check``: the verdict on stdout, its exit code returned."""
    try:
        if args.json is not None and not args.json.resolve().parent.is_dir():
            raise UsageError(f"--json {args.json}: no such folder {args.json.parent}")
        result = run_check(
            args.impl, contract=args.contract, level=args.level, fixed_token_id=args.fixed_token_id,
            device=args.device, profile=args.profile,
            max_examples=args.max_examples, seed=args.seed, workers=args.workers, timeout=args.timeout,
            xfails=args.xfails, repro_dir=args.repro_dir, select=args.select, quiet=args.quiet,
        )
    except UsageError as e:
        print(f"simacc check: error: {e}", file=sys.stderr)
        return USAGE
    except CheckError as e:
        print(f"simacc check: error: {e}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print("simacc check: interrupted", file=sys.stderr)
        return INTERRUPTED
    print(verdict.render(result))
    if args.json is not None:
        try:
            write_json(result, args.json)
        except OSError as e:
            print(f"simacc check: error: --json {args.json}: {e.strerror}", file=sys.stderr)
            return USAGE
    return result.exit_code


def write_json(result, path):
    """Write the verdict to ``path`` atomically: a temporary file beside it, then a rename,
    so a reader never sees half a file and an error leaves nothing behind."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(result.to_json(), f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _settings(impl_spec, contract, level, fixed_token_id, device, profile, max_examples, seed, timeout, xfails,
              repro_dir):
    """Resolve every choice (options, then ``SIMACC_*``, then defaults) and validate it."""
    import hypothesis
    import torch
    from hypothesis import settings

    import simacc
    from simacc.harness import devices, impl, plugin, profiles, selection
    from simacc.harness.runner import DEFAULT_TIMEOUT

    contract = contract or env.get("CONTRACT")
    if contract is not None and contract not in CONTRACTS:
        raise UsageError(f"unknown contract {contract!r} (SIMACC_CONTRACT); expected one of {CONTRACTS}")
    spec = impl_spec or env.get("IMPL") or REFERENCES[contract or "eagle"]
    try:
        chosen = impl.load(spec, contract, level or env.get("LEVEL", "exact"))
    except impl.ImplError as e:
        raise UsageError(str(e)) from None
    device = device or env.get("DEVICE", "all")
    profile = profile or env.get("PROFILE") or settings.get_current_profile_name()
    try:
        argtypes.device_choice(device)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"SIMACC_DEVICE: {e}") from None
    if profile not in profiles.EXAMPLES:
        raise UsageError(f"unknown Hypothesis profile {profile!r}; registered: {', '.join(profiles.EXAMPLES)}")
    try:
        timeout = argtypes.positive_seconds(timeout or env.get("TIMEOUT") or DEFAULT_TIMEOUT)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"SIMACC_TIMEOUT {e}") from None
    if fixed_token_id is None:
        try:
            fixed_token_id = selection.fixed_token_id()
        except ValueError as e:
            raise UsageError(f"SIMACC_FIXED_TOKEN_ID: {e}") from None
    xfails = xfails or env.get("XFAILS")
    if xfails:
        try:
            plugin.read_xfails(xfails)
        except Exception as e:  # pytest.UsageError: the same one-line message pytest would give
            raise UsageError(str(e)) from None
    chosen_profile = settings.get_profile(profile)
    return {
        "impl": spec,
        "file": chosen.source,
        "version": chosen.version,
        "contract": chosen.contract,
        "contract_from": chosen.contract_from,
        "level": chosen.level,
        "fixed_token_id": fixed_token_id,
        "device": device,
        "devices": list(devices.expand(device)),
        "cuda_available": torch.cuda.is_available(),
        "profile": profile,
        "max_examples": max_examples or chosen_profile.max_examples,
        "seed": seed,
        "derandomize": chosen_profile.derandomize,
        "timeout_s": timeout,
        "xfails": str(xfails) if xfails else None,
        "repro_dir": str(repro_dir or env.get("REPRO_DIR") or ".simacc/failures"),
        "simacc": simacc.__version__,
        "torch": torch.__version__,
        "hypothesis": hypothesis.__version__,
        "python": platform.python_version(),
    }


def format_header(header):
    seed = header["seed"] if header["seed"] is not None else ("derandomized" if header["derandomize"] else "random")
    cuda = "available" if header["cuda_available"] else "not available"
    lines = [
        f"simacc check {header['impl']}",
        f"  file:      {header['file'] or '(none)'}",
        f"  version:   {header['version'] or '(none)'}",
        f"  contract:  {header['contract']} ({header['contract_from']}); level {header['level']}"
        + (f"; fixed token id {header['fixed_token_id']}" if header["contract"] == "functional" else ""),
        f"  devices:   {', '.join(header['devices'])} (CUDA {cuda})",
        f"  profile:   {header['profile']}, {header['max_examples']} examples per property, seed {seed}",
        f"  limits:    {header['timeout_s']:g} s per call" + (f"; xfails {header['xfails']}" if header["xfails"] else ""),
        f"  versions:  simacc {header['simacc']}, torch {header['torch']}, hypothesis {header['hypothesis']}, "
        f"python {header['python']}",
    ]
    return "\n".join(lines)


def pytest_collection_modifyitems(items):
    """(``-p simacc.commands.check``) Mark the tests that never call the implementation (the
    caller's checks test simacc's own code): passing, they do not make a run "checked"."""
    for item in items:
        if "impl" not in getattr(item, "fixturenames", ()):
            item.user_properties.append(("simacc_runs_impl", False))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """In an xdist worker of a check (``-p simacc.commands.check``), the last thing it does: end the
    process at once. Its reports are all sent by now; the interpreter's teardown would
    only keep the check waiting, over a second with torch loaded on a busy machine, and
    forever (up to xdist's 10 s) with a non-daemon thread the implementation left behind."""
    if hasattr(config, "workerinput"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _config_args(package_dir, scratch):
    """The project's own pytest configuration when the properties sit in a checkout;
    otherwise a minimal one, so that an unrelated ini or conftest around an installed
    package (or in the current folder) cannot change the run."""
    root = package_dir.parent
    project = root / "pyproject.toml"
    if project.is_file() and "[tool.pytest.ini_options]" in project.read_text(encoding="utf-8"):
        return ["--rootdir", str(root), "-c", str(project)]
    ini = scratch / "pytest.ini"
    ini.write_text("[pytest]\naddopts = --strict-markers\n", encoding="utf-8")
    return ["--rootdir", str(root), "-c", str(ini), "--confcutdir", str(package_dir)]


def _pytest_args(header, package_dir, scratch, workers, select):
    """pytest's arguments for the run. Whatever a check does not read is left out: asserts
    are not rewritten (the properties fail through simacc's helpers), no cache, no hunt for
    unraisable exceptions (a garbage collection per session), little terminal output."""
    command = [
        str(package_dir), *_config_args(package_dir, scratch),
        "-p", "simacc.harness.plugin", "-p", "simacc.commands.check", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
        "--assert=plain", "-q", "--no-header", "-rN",
        "--impl", header["impl"], "--contract", header["contract"], "--level", header["level"],
        "--fixed-token-id", str(header["fixed_token_id"]), "--device", header["device"],
        "--hypothesis-profile", header["profile"], "--max-examples", str(header["max_examples"]),
        "--simacc-timeout", str(header["timeout_s"]), "--repro-dir", header["repro_dir"], "-n", workers,
    ]
    if header["seed"] is not None:
        command += ["--hypothesis-seed", str(header["seed"])]
    if header["xfails"]:
        command += ["--xfails", header["xfails"]]
    for pid in select or ():
        command += ["--property", pid]
    return command


def _replay(result, header, rootdir):
    """The one-line command that replays a failure: the repro file when one was written,
    else the pytest node (Hypothesis's example database replays it first)."""
    if result.repro:
        return f"simacc repro {shlex.quote(result.repro)}"
    if not result.nodeid:
        return None
    command = ["python", "-m", "pytest", str(rootdir / result.nodeid), "-p", "simacc.harness.plugin",
               "--impl", header["impl"], "--contract", header["contract"], "--level", header["level"]]
    if header["seed"] is not None:
        command += ["--hypothesis-seed", str(header["seed"])]
    return shlex.join(command)


class _Collector:
    """The pytest plugin object of a check: it hears every report of the session (xdist
    forwards its workers' reports to this process), keeps the records the verdict is built
    from and tells :class:`_Progress`."""

    def __init__(self, progress):
        self.progress = progress
        self.order, self.records, self.collect_errors, self.warnings = [], [], [], []
        self.interrupted = False
        self._phases = {}

    def property_ids(self):
        """The ids of the properties collected or reported (a row may hide them: a note
        can stand for a device's rows)."""
        return {verdict.split_nodeid(nodeid)[0] for nodeid in [*self.order, *self._phases]}

    def _collected(self, nodeids):
        self.order = list(dict.fromkeys([*self.order, *nodeids]))
        self.progress.collected(len(self.order))

    def pytest_collection_finish(self, session):
        if session.items:  # without xdist; with it the workers collect
            self._collected(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self._collected(ids)

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(report)

    def pytest_runtest_logstart(self, nodeid, location):
        self._stop_if_interrupted()
        self.progress.started(nodeid)

    def pytest_runtest_logreport(self, report):
        self._stop_if_interrupted()
        record = verdict.record(report)
        self.records.append(record)
        phases = self._phases.setdefault(report.nodeid, [])
        phases.append(record)
        if report.when in ("teardown", "???"):  # ???: xdist, the worker died under this test
            self.progress.finished(verdict.node_result(report.nodeid, phases))

    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        # configuration warnings only (an --xfails entry that matches nothing), once each
        # (every xdist worker sends its own), not the suite's own warnings
        message = str(warning_message.message)
        if issubclass(warning_message.category, pytest.PytestConfigWarning) and message not in self.warnings:
            self.warnings.append(message)
            self.progress.warn(message)

    def pytest_keyboard_interrupt(self, excinfo):
        if isinstance(excinfo.value, KeyboardInterrupt):
            self.interrupted = True

    def _stop_if_interrupted(self):
        """Stop the session for a Ctrl-C that the implementation's runner took for the
        implementation's own error (it lands inside a call with ``-n 0``)."""
        if self.interrupted:
            raise KeyboardInterrupt


@contextlib.contextmanager
def _noticing_interrupts(collector):
    """Ctrl-C raises ``KeyboardInterrupt`` as always, and the collector remembers it, so that
    the run stops even when the exception itself was caught on the way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        collector.interrupted = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _restored():
    """Give back what a check changes for good in this process (a test or the zoo may be the
    caller): loading an IMPL appends its folder to ``sys.path``; in the session, pytest
    prepends the rootdir there and removes ``PYTEST_CURRENT_TEST`` (a calling test's own),
    Hypothesis's plugin loads the profile and forces the seed and undoes neither, and every
    property seeds torch's CPU generator."""
    import torch
    from hypothesis import core, settings

    profile, seed, path = settings.get_current_profile_name(), core.global_force_seed, list(sys.path)
    environ, rng = dict(os.environ), torch.get_rng_state()
    try:
        yield
    finally:
        settings.load_profile(profile)
        core.global_force_seed = seed
        sys.path[:] = path
        for name in os.environ.keys() - environ.keys():
            del os.environ[name]
        os.environ.update(environ)
        torch.set_rng_state(rng)


def _tail(path, lines=30):
    text = Path(path).read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
    return "\n".join(text[-lines:])


def run_check(impl_spec=None, *, contract=None, level=None, fixed_token_id=None, device=None, profile=None,
              max_examples=None, seed=None, workers=None, timeout=None, xfails=None, repro_dir=None, select=None,
              quiet=False):
    """Check ``impl_spec`` against the property suite and return the :class:`~simacc.commands.verdict.Verdict`.

    Prints the header (stdout) and the progress (stderr) unless ``quiet``. ``select``
    restricts the run to these property ids. Raises :class:`UsageError` for bad arguments,
    :class:`CheckError` when pytest could not run the properties, and ``KeyboardInterrupt``
    when the run was interrupted. Checks from several threads run one after the other:
    pytest runs in this process, one session at a time (its capture of the output, the
    global state it changes).
    """
    with _ONE_AT_A_TIME, _restored():
        header = _settings(impl_spec, contract, level, fixed_token_id, device, profile, max_examples, seed, timeout,
                           xfails, repro_dir)
        try:
            workers = argtypes.workers(str(workers)) if workers is not None else "auto"
        except argparse.ArgumentTypeError as e:
            raise UsageError(f"workers {e}") from None
        if not quiet:
            print(format_header(header), flush=True)
        collector = _Collector(Progress(sys.stderr, quiet))
        exitstatus, output = _session(header, workers, select, collector)
    return _verdict(header, collector, exitstatus, output, select)


def _session(header, workers, select, collector):
    """Run the pytest session in this process: ``(pytest's exit status, the end of its
    terminal output)``; the output goes to a file, read only when pytest fails to run."""
    with tempfile.TemporaryDirectory(prefix="simacc-check-") as scratch:
        scratch = Path(scratch)
        args = _pytest_args(header, _properties_dir(), scratch, workers, select)
        header["pytest_command"] = shlex.join(["python", "-m", "pytest", *args])
        try:
            with open(scratch / "pytest.out", "w", encoding="utf-8") as out, _fresh_properties(), \
                    _noticing_interrupts(collector), contextlib.redirect_stdout(out):
                exitstatus = int(pytest.main(args, plugins=[collector]))
        finally:
            collector.progress.close()
        return exitstatus, _tail(scratch / "pytest.out")


def _properties_dir():
    # found, not imported: the session imports the property modules (_fresh_properties)
    return Path(importlib.util.find_spec("properties").origin).resolve().parent


@contextlib.contextmanager
def _fresh_properties():
    """Let the session import the property modules afresh, and give the caller's back after.
    ``@given`` takes Hypothesis's settings when its module is imported, so modules imported
    before (by a calling test's session, or an earlier check) would run with that profile
    and ``max_examples``, not this check's."""
    saved = {name: module for name, module in sys.modules.items() if _is_property_module(name)}
    for name in saved:
        del sys.modules[name]
    try:
        yield
    finally:
        for name in [name for name in sys.modules if _is_property_module(name)]:
            del sys.modules[name]
        sys.modules.update(saved)


def _is_property_module(name):
    return name == "properties" or name.startswith("properties.")


def _verdict(header, collector, exitstatus, output, select):
    """The :class:`~simacc.commands.verdict.Verdict` of a finished session, or the exception that
    says why there is none."""
    if collector.interrupted:
        raise KeyboardInterrupt
    if collector.collect_errors:
        first = collector.collect_errors[0]
        raise CheckError(f"pytest could not collect {first.nodeid or 'the properties'}", str(first.longrepr).strip())
    if not collector.records and exitstatus not in (0, 5):  # 5: nothing collected, a verdict of its own
        raise CheckError(f"pytest exited with code {exitstatus} before running any property", output)
    stopped = "" if exitstatus in (0, 1, 5) else f"pytest stopped with exit code {exitstatus}"
    result = verdict.build(header, collector.order, collector.records, stopped)
    if stopped and output:
        result.notes.append(f"{stopped}; its output ended with: {output.splitlines()[-1]}")
    collected = collector.property_ids()
    unmatched = [pid for pid in select or () if pid not in collected]
    result.notes += [f"--property {pid} matches no property" for pid in unmatched]
    if not result.results and unmatched:
        result.reason = f"--property {', '.join(unmatched)} matches no property"
    result.notes += collector.warnings
    for r in result.results:
        if r.status == verdict.FAIL:
            r.replay = _replay(r, header, _properties_dir().parent)
    return result
