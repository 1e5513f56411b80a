"""``simacc fuzz``: keep exploring with the ``thorough`` profile until the time is up.

A plain loop rather than HypoFuzz: each round is one pytest run over the property modules
(in a shuffled order, so a short budget does not always spend itself on the first module)
with a fresh ``--hypothesis-seed``; the recording hooks write a repro file for every
failure. A failure found again keeps its file name (:func:`simacc.harness.repro_files.file_name`), so
the folder already holds one file per distinct failure, and a file name the loop has not
seen before is a new failure. When the time is up, or on
Ctrl-C (or SIGTERM), the running round is interrupted like a Ctrl-C in pytest and the
files written so far stay. No extra dependency, and the same hooks and files as the normal suite.
"""

import dataclasses
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simacc.harness import session
from simacc.harness import settings as opts

STOP_GRACE_S = 20  # how long an interrupted round may take to stop before it is killed
POLL_S = 2  # how often a running round's new repro files are looked at
PYTEST_DONE = (0, 1)  # all passed, some failed; anything else (usage error, nothing collected) stops


def register(subparsers):
    p = subparsers.add_parser(
        "fuzz",
        help="explore with the thorough profile until the time is up, writing a repro file per distinct failure",
        description="Run the properties over and over with the thorough Hypothesis profile and "
        "fresh seeds until --minutes have passed (or Ctrl-C). Exit 1 if any failure was found.",
    )
    p.add_argument("impl", nargs="?", default=None, metavar="IMPL", help="implementation under test (env SIMACC_IMPL)")
    p.add_argument("--minutes", type=opts.argtype(opts.positive_number("minutes")), required=True,
                   help="how long to fuzz (fractions allowed)")
    opts.add_arguments(p, ("device", "contract", "level", "repro_dir", "fixed_token_id", "timeout"))
    p.add_argument("-k", dest="select", default=None, metavar="EXPR", help="only properties matching this pytest -k expression")
    p.add_argument("-n", dest="workers", default=None, help="pytest-xdist workers per round (default: none)")
    p.set_defaults(run=run)


def _round_command(chosen, args, seed, scratch):
    from simacc.harness.plugin import properties_dir

    modules = sorted(properties_dir().glob("test_*.py"))
    random.Random(seed).shuffle(modules)
    this_round = dataclasses.replace(chosen, profile="thorough", seed=seed)
    command = session.arguments(this_round, args.workers or 0, Path(scratch) / "events.jsonl", scratch,
                                targets=list(map(str, modules)))
    return [sys.executable, "-m", "pytest", *command, "--tb=no", *(["-k", args.select] if args.select else [])]


def _report_new(directory, seen, found):
    """Add the repro files not in ``seen`` to it and to ``found``, saying so: each is a
    distinct failure, since a failure found again rewrites its own file."""
    for path in sorted(set(directory.glob("*.json")) - seen):
        seen.add(path)
        found.append(path)
        print(f"new failure: {opts.shown(path)}", flush=True)


def _stop(proc):
    """Interrupt a round the way Ctrl-C would, then kill it if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run(args):
    args.simacc_impl = args.impl
    try:
        chosen = opts.resolve(opts.given(args))
    except opts.SettingsError as e:
        print(f"simacc fuzz: error: {e}", file=sys.stderr)
        return 2
    if chosen.impl is None:
        print("simacc fuzz: error: no implementation selected: give IMPL or set SIMACC_IMPL", file=sys.stderr)
        return 2
    from simacc.harness import impl

    try:  # a bad IMPL is a usage error, said once, before any round starts
        impl.load(chosen.impl, chosen.contract, chosen.level)
    except impl.ImplError as e:
        print(f"simacc fuzz: {e}", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="simacc-fuzz-")
    directory = chosen.repro_dir
    directory.mkdir(parents=True, exist_ok=True)
    seen = set(directory.glob("*.json"))  # earlier finds are not new
    found = []
    start = time.monotonic()
    deadline = start + args.minutes * 60
    rounds = 0
    stopped_by = "time is up"
    proc = None
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a CI time limit stops it like Ctrl-C
    try:
        while time.monotonic() < deadline:
            rounds += 1
            seed = random.SystemRandom().getrandbits(32)
            left = deadline - time.monotonic()
            print(f"round {rounds}: seed {seed}, {left:.0f} s left, {len(found)} distinct failure(s) so far", flush=True)
            # its own session: a Ctrl-C reaches the round only through _stop, exactly once
            proc = subprocess.Popen(_round_command(chosen, args, seed, scratch), start_new_session=True)
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    proc.wait(min(POLL_S, max(deadline - time.monotonic(), 0.01)))
                except subprocess.TimeoutExpired:
                    _report_new(directory, seen, found)  # report finds as they come
            finished = proc.poll() is not None
            _stop(proc)
            _report_new(directory, seen, found)
            if finished and proc.returncode not in PYTEST_DONE:
                print(f"round {rounds}: pytest exited with code {proc.returncode} (see above); stopping", flush=True)
                return 2
    except KeyboardInterrupt:
        stopped_by = "interrupted"
        if proc is not None:
            _stop(proc)
        _report_new(directory, seen, found)
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"{stopped_by} after {time.monotonic() - start:.0f} s and {rounds} round(s): "
          f"{len(found)} distinct new failure(s)" + "".join(f"\n  {opts.shown(p)}" for p in found), flush=True)
    if found:
        print(f"replay one with: simacc repro {opts.shown(found[0])}", flush=True)
    return 1 if found else 0
