"""Fuzzing figures for docs/fuzzing.md: how soon ``simacc fuzz`` and HypoFuzz find a bug that
needs a rare case, and how long replaying an example database of N failing examples takes.
Measures, never asserts.

    python benchmarks/fuzz_find.py find [--trials 5] [--workers 1 2] [--minutes 3] [--rarer]
    python benchmarks/fuzz_find.py engines [--trials 3] [--workers 1] [--minutes 3] [--rarer]
    python benchmarks/fuzz_find.py replay [--sizes 1 10 100 1000]

``find`` fuzzes ``tests/harness/rare_mutant.py`` (a miscount only for a batch of 7 with
``spec_steps == 9``; ``--rarer``: of 23) over the whole catalogue on the CPU, each trial in a fresh folder (an
empty example database), with ``-x`` so the session ends at its first failure (of any
property), and reports when it was heard (seconds from the start of the command, start-up
included).

``engines`` times the same find with ``simacc fuzz`` and with HypoFuzz (``hypothesis fuzz
--no-dashboard -n N -- --pyargs simacc.properties ...``, which needs ``pip install -e
'.[fuzz]'``) in turn, trial after trial (the order alternating), under the same load: each
in a fresh folder, seconds from the start of the command until the first failure of any
property is in the example database (HypoFuzz stores an unshrunk find at once), at most
``--minutes`` each. The database keys are those of the items HypoFuzz collects
(``Property.hypothesis_test``), polled every 0.2 s.

``replay`` stores N failing examples of ``num_correct_drafts_is_length_minus_one`` against
``simacc.zoo.eagle:counts_only_the_first_row`` (it fails on nearly every batch of two or
more, but not on the one-request case Hypothesis tries first, so each unshrunk random run
stores an example of its own) in a directory database, and in a Redis one when ``redis-server`` is
installed, then times (a) Hypothesis's replay of them alone in this process (``REPLAY``'s
phases) and (b) a whole ``simacc check --max-examples 1 --database ... --database-readonly``
of that property.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RARE = f"{ROOT / 'tests' / 'harness' / 'rare_mutant.py'}:miscounts_a_rare_batch"
RARER = f"{ROOT / 'tests' / 'harness' / 'rare_mutant.py'}:miscounts_a_rarer_batch"
ALWAYS = "simacc.zoo.eagle:counts_only_the_first_row"
PROPERTY = "num_correct_drafts_is_length_minus_one"


def simacc(*argv, cwd):
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "simacc", *argv], cwd=cwd, capture_output=True, text=True)
    return done, time.perf_counter() - start


def find(trials, workers, minutes, spec=RARE):
    rows = {}
    for n in workers:
        found = []
        for trial in range(trials):
            with tempfile.TemporaryDirectory(prefix="simacc-find-") as folder:
                done, seconds = simacc("fuzz", spec, "--device", "cpu", "-n", str(n), "-x", "--minutes", str(minutes),
                                       "-q", "--json", "fuzz.json", cwd=folder)
                report = json.loads((Path(folder) / "fuzz.json").read_text())
                hits = sorted((f["found_after_s"], f["test"]) for f in report["failures"])
                found.append(hits[0][0] if hits else None)
                print(f"workers {n} trial {trial + 1}: " + (f"found after {hits[0][0]:.1f} s by {hits[0][1]}" if hits
                      else f"not found in {seconds:.0f} s"), flush=True)
        times = [t for t in found if t is not None]
        rows[n] = {"trials": trials, "found": len(times), "median_s": statistics.median(times) if times else None,
                   "min_s": min(times, default=None), "max_s": max(times, default=None)}
    return rows


def _keys(spec):
    """The example-database keys of every Hypothesis test a session of ``spec`` on the CPU
    collects, as HypoFuzz collects them (its failures are stored under these and their
    ``.secondary``)."""
    import pytest
    from hypothesis.internal.reflection import function_digest

    keys = []

    class Keys:
        def pytest_collection_finish(self, session):
            for item in session.items:
                inner = item.obj.hypothesis.inner_test
                inner._hypothesis_internal_add_digest = item.nodeid.encode()  # as HypoFuzz does
                keys.append(function_digest(inner))

    with tempfile.TemporaryDirectory(prefix="simacc-keys-") as folder:
        here = os.getcwd()
        os.chdir(folder)
        try:
            pytest.main(["--collect-only", "-q", "-m", "hypothesis", "--pyargs", "simacc.properties",
                         f"--simacc-impl={spec}", "--simacc-device=cpu", "-p", "no:cacheprovider"], plugins=[Keys()])
        finally:
            os.chdir(here)
    return [k + suffix for k in keys for suffix in (b"", b".secondary")]


def _hypofuzz(spec, workers, minutes, keys, folder):
    """Seconds from the start of HypoFuzz until a failure is in the database, or None."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    database = DirectoryBasedExampleDatabase(str(Path(folder) / ".hypothesis" / "examples"))
    hypothesis = Path(sys.executable).with_name("hypothesis")
    start = time.perf_counter()
    child = subprocess.Popen([str(hypothesis), "fuzz", "--no-dashboard", "-n", str(workers), "--", "--pyargs",
                              "simacc.properties", f"--simacc-impl={spec}", "--simacc-device=cpu"],
                             cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while time.perf_counter() - start < minutes * 60 and child.poll() is None:
            if any(next(iter(database.fetch(k)), None) is not None for k in keys):
                return time.perf_counter() - start
            time.sleep(0.2)
        return None
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def engines(trials, workers, minutes, spec=RARE):
    """``find`` with each engine in turn, trial after trial, the order alternating."""
    keys = _keys(spec)
    found = {"simacc fuzz": [], "hypofuzz": []}
    for trial in range(trials):
        order = list(found) if trial % 2 == 0 else list(reversed(found))
        for engine in order:
            with tempfile.TemporaryDirectory(prefix="simacc-engines-") as folder:
                if engine == "hypofuzz":
                    seconds = _hypofuzz(spec, workers, minutes, keys, folder)
                else:
                    done, took = simacc("fuzz", spec, "--device", "cpu", "-n", str(workers), "-x", "--minutes",
                                        str(minutes), "-q", "--json", "fuzz.json", cwd=folder)
                    hits = sorted(f["found_after_s"] for f in json.loads((Path(folder) / "fuzz.json").read_text())
                                  ["failures"])
                    seconds = hits[0] if hits else None
            found[engine].append(seconds)
            print(f"trial {trial + 1} {engine}: " + (f"found after {seconds:.1f} s" if seconds is not None
                  else f"not found in {minutes * 60:.0f} s"), flush=True)
    return {engine: {"trials": trials, "found": sum(t is not None for t in times), "seconds": times,
                     "median_s": _median(times)} for engine, times in found.items()}


def _median(times):
    """The median time to a find, a trial that found nothing counted as slower than any; None
    where that is such a trial."""
    ranked = sorted(times, key=lambda t: float("inf") if t is None else t)
    middle = ranked[(len(ranked) - 1) // 2:len(ranked) // 2 + 1]
    return None if None in middle else statistics.mean(middle)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _populate(database, n):
    """Store ``n`` failing examples of PROPERTY against ALWAYS in ``database``: one random
    example a run, none shrunk, each saved as Hypothesis saves a find."""
    from hypothesis import Phase, settings

    from simacc import properties
    from simacc.harness.call import impl as impls
    from simacc.harness.call.runner import Runner
    from simacc.harness.config import profiles

    prop = properties.find(PROPERTY)
    under = settings(profiles.for_session("default"), database=database, phases=[Phase.generate], max_examples=50,
                     report_multiple_bugs=False)
    implementation = impls.load(ALWAYS)
    while True:
        stored = len(list(database.fetch(_key(prop, implementation))))
        if stored >= n:
            return stored
        with Runner(implementation, "cpu", hypothesis=under) as runner:
            try:
                prop.run(runner)
            except Exception:  # noqa: BLE001 - every run fails, and saves its example
                pass


def _key(prop, implementation):
    from hypothesis.internal.reflection import function_digest

    from simacc.harness.config import profiles

    test = prop.hypothesis_test(implementation, "cpu", {}, profiles.for_session("default"))
    return function_digest(test.hypothesis.inner_test)


def _replay_here(database):
    from hypothesis import settings

    from simacc import properties
    from simacc.harness.call import impl as impls
    from simacc.harness.call.runner import Runner
    from simacc.harness.config import profiles

    under = settings(profiles.for_session("default"), database=database, phases=profiles.REPLAY)
    start = time.perf_counter()
    with Runner(impls.load(ALWAYS), "cpu", hypothesis=under) as runner:
        try:
            prop = properties.find(PROPERTY)
            prop.run(runner)
        except Exception:  # noqa: BLE001 - the replay fails, as it should
            pass
    return time.perf_counter() - start


def replay(sizes):
    from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase, ReadOnlyDatabase

    from simacc.harness.config import profiles

    server = None
    binary = shutil.which("redis-server")
    rows = []
    with tempfile.TemporaryDirectory(prefix="simacc-replay-") as folder:
        url = None
        if binary:
            port = _free_port()
            server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL)
            url = f"redis://127.0.0.1:{port}/0"
            time.sleep(0.5)
        try:
            for n in sizes:
                directory = Path(folder) / f"db{n}"
                if url:
                    redis_db = profiles.open_database(url)
                    redis_db.redis.flushdb()
                    stored = _populate(MultiplexedDatabase(DirectoryBasedExampleDatabase(directory), redis_db), n)
                else:
                    stored = _populate(DirectoryBasedExampleDatabase(directory), n)
                here = _replay_here(ReadOnlyDatabase(DirectoryBasedExampleDatabase(directory)))
                row = {"stored": stored, "replay_here_s": round(here, 3)}
                for name, location in (("directory", str(directory)), ("redis", url)):
                    if location:
                        done, seconds = simacc("check", ALWAYS, "--property", PROPERTY, "--device", "cpu", "-n", "0",
                                               "--max-examples", "1", "--database", location, "--database-readonly",
                                               "-q", cwd=folder)
                        row[f"check_{name}_s"] = round(seconds, 2)
                rows.append(row)
                print(row, flush=True)
        finally:
            if server is not None:
                server.terminate()
                server.wait()
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("find", help="time to the first find of the rare-case mutant")
    f.add_argument("--trials", type=int, default=5)
    f.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    f.add_argument("--minutes", type=float, default=3)
    f.add_argument("--rarer", action="store_true", help="the mutant that needs a case in about 10,000")
    e = sub.add_parser("engines", help="time to the first find with simacc fuzz and with HypoFuzz, in turn")
    e.add_argument("--trials", type=int, default=3)
    e.add_argument("--workers", type=int, default=1)
    e.add_argument("--minutes", type=float, default=3)
    e.add_argument("--rarer", action="store_true", help="the mutant that needs a case in about 10,000")
    r = sub.add_parser("replay", help="replay time of a database of N failing examples")
    r.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.what == "find":
        figures = find(args.trials, args.workers, args.minutes, RARER if args.rarer else RARE)
    elif args.what == "engines":
        figures = engines(args.trials, args.workers, args.minutes, RARER if args.rarer else RARE)
    else:
        figures = replay(args.sizes)
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
