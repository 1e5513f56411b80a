"""``simacc check IMPL``: a property-by-property conformance verdict for one implementation
(issue #4).

The property suite runs under pytest (and xdist) in a child process, exactly as CI runs
it; the plugin writes each test report as a JSON line (``--simacc-results``) and this
process follows that file for progress and builds the verdict from it. A child process
gives every check a clean interpreter and keeps a crashing implementation away from the
verdict; xdist reports a worker that died under a test as that test's failure and starts a
new worker.

Everything the child would reject (IMPL, contract, profile, xfails file, JSON path) is
checked here first, so a usage error is one line and exit code 2 before any test runs.
"""

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simacc import argtypes, env, verdict
from simacc.impl import CONTRACTS, REFERENCES

CONFORMANT, NOT_CONFORMANT, USAGE = 0, 1, 2
INTERRUPTED = 130
STOP_GRACE_S = 10  # how long an interrupted child may take to stop before it is killed
EXIT_GRACE_S = 30  # how long a finished child may linger (a thread the implementation left running)


class UsageError(Exception):
    """A bad argument: one line, exit code 2, nothing run."""


class CheckError(Exception):
    """pytest could not run the properties (a collection or internal error): exit code 2.
    ``detail`` is the end of pytest's own output."""

    def __init__(self, message, detail=""):
        super().__init__(message)
        self.detail = detail


def register(subparsers):
    from simacc.argtypes import DEVICE_HELP, device_choice, positive_int, positive_seconds, workers

    p = subparsers.add_parser(
        "check",
        help="check an implementation against every property and print a verdict",
        description="Run the property suite against IMPL (pytest and xdist underneath) and print "
        "a verdict per property. Exit 0 conformant (or nothing could be checked, e.g. --device cuda "
        "without CUDA), 1 not conformant, 2 usage error.",
    )
    p.add_argument("impl", nargs="?", default=None, metavar="IMPL",
                   help="'package.module:attribute' or 'path/to/file.py:attribute' (env SIMACC_IMPL; "
                   "default: the reference of --contract, else of eagle)")
    p.add_argument("--contract", choices=CONTRACTS, help="force the contract instead of inferring it from the signature")
    p.add_argument("--device", type=device_choice, help=f"{DEVICE_HELP} (default all; cuda is skipped where it is missing)")
    p.add_argument("--max-examples", type=positive_int, metavar="N", help="examples per property (overrides the profile)")
    p.add_argument("--hypothesis-profile", dest="profile", metavar="P", help="Hypothesis profile: default, ci or thorough")
    p.add_argument("--seed", type=int, metavar="S", help="Hypothesis seed, for a reproducible run")
    p.add_argument("-n", dest="workers", type=workers, default="auto", metavar="WORKERS",
                   help="pytest-xdist workers (default auto; 0 runs in one process, without crash isolation)")
    p.add_argument("--timeout", type=positive_seconds, metavar="S", help="per-call time limit in seconds (default 30)")
    p.add_argument("--xfails", metavar="FILE", help="property ids expected to fail, one a line, '#' comments")
    p.add_argument("--repro-dir", metavar="DIR", help="where repro files of failures go (default .simacc/failures)")
    p.add_argument("--property", dest="select", action="append", metavar="ID", help="check only this property (repeatable)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the verdict as JSON (schema simacc.check/1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no header or progress, only the verdict")
    p.set_defaults(run=run)


def run(args):
    try:
        if args.json is not None and not args.json.resolve().parent.is_dir():
            raise UsageError(f"--json {args.json}: no such folder {args.json.parent}")
        result = run_check(
            args.impl, contract=args.contract, device=args.device, profile=args.profile,
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


def _settings(impl_spec, contract, device, profile, max_examples, seed, timeout, xfails, repro_dir):
    """Resolve every choice (options, then ``SIMACC_*``, then defaults) and validate it."""
    import hypothesis
    import torch
    from hypothesis import settings

    import simacc
    from simacc import devices, impl, plugin, profiles
    from simacc.observe import DEFAULT_TIMEOUT

    contract = contract or env.get("CONTRACT")
    if contract is not None and contract not in CONTRACTS:
        raise UsageError(f"unknown contract {contract!r} (SIMACC_CONTRACT); expected one of {CONTRACTS}")
    spec = impl_spec or env.get("IMPL") or REFERENCES[contract or "eagle"]
    try:
        chosen = impl.load(spec, contract)
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
        "contract_from": "forced" if contract else "inferred from the signature",
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
        f"  contract:  {header['contract']} ({header['contract_from']})",
        f"  devices:   {', '.join(header['devices'])} (CUDA {cuda})",
        f"  profile:   {header['profile']}, {header['max_examples']} examples per property, seed {seed}",
        f"  limits:    {header['timeout_s']:g} s per call" + (f"; xfails {header['xfails']}" if header["xfails"] else ""),
        f"  versions:  simacc {header['simacc']}, torch {header['torch']}, hypothesis {header['hypothesis']}, "
        f"python {header['python']}",
    ]
    return "\n".join(lines)


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


def _pytest_command(header, package_dir, scratch, results, workers, select):
    command = [
        sys.executable, "-m", "pytest", str(package_dir), *_config_args(package_dir, scratch),
        "-p", "simacc.plugin", "-p", "no:cacheprovider", "-q", "--no-header", "-rN",
        "--impl", header["impl"], "--contract", header["contract"], "--device", header["device"],
        "--hypothesis-profile", header["profile"], "--max-examples", str(header["max_examples"]),
        "--simacc-timeout", str(header["timeout_s"]), "--repro-dir", header["repro_dir"],
        "--simacc-results", str(results), "-n", workers,
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
    command = ["python", "-m", "pytest", str(rootdir / result.nodeid), "-p", "simacc.plugin",
               "--impl", header["impl"], "--contract", header["contract"]]
    if header["seed"] is not None:
        command += ["--hypothesis-seed", str(header["seed"])]
    return shlex.join(command)


class _Progress:
    """Reads the report lines as they come and says on stderr when each test is done."""

    def __init__(self, quiet):
        self.quiet = quiet
        self.order, self.reports, self.collect_errors, self.warnings = [], [], [], []
        self.done = 0
        self.exitstatus = None  # pytest's, once the session has finished
        self._phases = {}

    def add(self, record):
        event = record["event"]
        if event == "collected":
            self.order = list(dict.fromkeys([*self.order, *record["nodeids"]]))
        elif event == "finished":
            self.exitstatus = record["exitstatus"]
        elif event == "collect-error":
            self.collect_errors.append(record)
        elif event == "warning":  # config warnings only (an unknown --xfails id), not the suite's own
            if record["category"] == "PytestConfigWarning" and record["message"] not in self.warnings:
                self.warnings.append(record["message"])
                if not self.quiet:
                    print(f"warning: {record['message']}", file=sys.stderr, flush=True)
        elif event == "report":
            self.reports.append(record)
            phases = self._phases.setdefault(record["nodeid"], [])
            phases.append(record)
            if record["when"] in ("teardown", "???"):
                self._show(record["nodeid"], phases)

    def _show(self, nodeid, phases):
        self.done += 1
        if self.quiet:
            return
        r = verdict.node_result(nodeid, phases)
        name = verdict.split_nodeid(nodeid)[2]
        examples = "" if r.examples is None else f", {r.examples} examples"
        total = f"/{len(self.order)}" if self.order else ""
        print(f"[{self.done}{total}] {name}: {r.status} ({r.seconds:.1f} s{examples})", file=sys.stderr, flush=True)


def _follow(proc, path, progress):
    """Feed the report lines to ``progress`` until the child exits (and once after); return
    pytest's exit status. A child that lingers after its session finished (a non-daemon
    thread the implementation started) is ended after :data:`EXIT_GRACE_S`."""
    buffer = ""
    finished_at = None
    with open(path, encoding="utf-8") as f:
        while True:
            running = proc.poll() is None
            buffer += f.read()
            *lines, buffer = buffer.split("\n")
            for line in lines:
                if line.strip():
                    progress.add(json.loads(line))
            if not running:
                return proc.returncode
            if progress.exitstatus is not None:
                finished_at = finished_at or time.monotonic()
                if time.monotonic() - finished_at > EXIT_GRACE_S:
                    _stop(proc)
                    return progress.exitstatus
            time.sleep(0.1)


def _stop(proc):
    """Interrupt the child like a Ctrl-C, then end its whole process group."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _end_group(proc)


def _end_group(proc):
    """Kill whatever is left in the child's process group (xdist workers, processes the
    implementation started), so that a check leaves nothing running."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(path, lines=30):
    text = Path(path).read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
    return "\n".join(text[-lines:])


def run_check(impl_spec=None, *, contract=None, device=None, profile=None, max_examples=None, seed=None,
              workers=None, timeout=None, xfails=None, repro_dir=None, select=None, quiet=False):
    """Check ``impl_spec`` against the property suite and return the :class:`~simacc.verdict.Verdict`.

    Prints the header (stdout) and one progress line per finished test (stderr) unless
    ``quiet``. ``select`` restricts the run to these property ids. Raises
    :class:`UsageError` for bad arguments and :class:`CheckError` when pytest could not
    run the properties.
    """
    import properties

    header = _settings(impl_spec, contract, device, profile, max_examples, seed, timeout, xfails, repro_dir)
    try:
        workers = argtypes.workers(str(workers)) if workers is not None else "auto"
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"workers {e}") from None
    if not quiet:
        print(format_header(header), flush=True)
    package_dir = Path(properties.__file__).resolve().parent
    progress = _Progress(quiet)
    with tempfile.TemporaryDirectory(prefix="simacc-check-") as scratch:
        scratch = Path(scratch)
        results, output = scratch / "results.jsonl", scratch / "pytest.out"
        results.touch()
        command = _pytest_command(header, package_dir, scratch, results, workers, select)
        header["pytest_command"] = shlex.join(command)
        with open(output, "wb") as out:
            # its own process group, so that everything it starts can be ended with it
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            try:
                returncode = _follow(proc, results, progress)
            except BaseException:
                _stop(proc)
                raise
            _end_group(proc)
        if progress.collect_errors:
            first = progress.collect_errors[0]
            raise CheckError(f"pytest could not collect {first['nodeid'] or 'the properties'}", first["longrepr"].strip())
        if returncode == 5 or (returncode == 0 and not progress.reports):
            raise CheckError("no property was selected" + (f" (--property {', '.join(select)})" if select else ""))
        if not progress.reports and returncode != 0:
            raise CheckError(f"pytest exited with code {returncode} before running any property", _tail(output))
        stopped = "" if returncode in (0, 1) else f"pytest stopped with exit code {returncode}"
        result = verdict.build(header, progress.order, progress.reports, stopped)
        if stopped and _tail(output, 1):
            result.notes.append(f"{stopped}; its output ended with: {_tail(output, 1)}")
    unmatched = [pid for pid in select or () if not any(r.id.split("[")[0] == pid for r in result.results)]
    result.notes += [f"--property {pid} matches no property" for pid in unmatched]
    result.notes += progress.warnings
    for r in result.results:
        if r.status == verdict.FAIL:
            r.replay = _replay(r, header, package_dir.parent)
    return result
