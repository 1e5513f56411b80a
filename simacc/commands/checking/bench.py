"""``simacc bench``: how fast the harness is and how fast it catches bugs.

Measurements, printed as tables and written as JSON (schema ``simacc.bench/1``):

* examples per second of every property against each contract's reference, on the CPU, in
  this process (:mod:`simacc.harness.sessions.inprocess`, ``ci`` settings: the time is the property's own);
* wall time of the whole CI suite (``CI=true pytest``) with ``-n auto`` and with ``-n 0``,
  and of ``simacc check`` of the reference with the default profile, start-up included;
* for every mutant, the median number of examples to the first failure over several seeds
  and the size of its shrunk case (each mutant through the properties expected to kill it);
* the reference's per-call latency next to a plain eager implementation with no checks
  (``benchmarks/latency.py``), on the CPU and, where it exists, on CUDA.

It takes minutes and is not part of CI: speed is measured here, never asserted in tests.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = "simacc.bench/1"
SUITE_PROFILE = "ci"  # derandomized: the -n auto and -n 0 runs do the same work


@dataclass
class Bench:
    header: dict
    properties: list
    suite: dict
    mutants: list
    latency: dict

    def to_json(self):
        return {"schema": SCHEMA, **self.__dict__}


def _project_root():
    from simacc.harness.config.settings import properties_dir

    return properties_dir().parent


def _latency_module():
    path = _project_root() / "benchmarks" / "latency.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run simacc bench from a checkout of simacc")
    spec = importlib.util.spec_from_file_location("simacc_bench_latency", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def property_speeds(progress):
    """``[{contract, id, examples, seconds, per_second}]`` for every applicable property."""
    from simacc import properties
    from simacc.harness.call import impl
    from simacc.harness.config import contracts, profiles
    from simacc.harness.config.status import CHECKED
    from simacc.harness.sessions import inprocess

    chosen = profiles.for_session(SUITE_PROFILE)
    rows = []
    for contract in contracts.NAMES:
        for r in inprocess.run(impl.reference(contract), "cpu", properties.every_property(), settings=chosen):
            if r.status not in CHECKED:
                continue
            rate = r.examples / r.seconds if r.examples and r.seconds else None
            rows.append(dict(contract=contract, id=r.id, status=r.status.value, examples=r.examples,
                             seconds=round(r.seconds, 3), per_second=None if rate is None else round(rate, 1)))
        progress(f"property speeds: {contract} done")
    return rows


def wall_times(progress):
    """Seconds for the CI suite (``CI=true pytest``) with ``-n auto`` and ``-n 0``, and for
    ``simacc check`` of the reference with the default profile, each a fresh process."""
    root = _project_root()
    ci = {**os.environ, "CI": "true"}
    local = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("SIMACC_")}
    runs = {
        "suite -n auto": ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto"], ci),
        "suite -n 0": ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"], ci),
        "simacc check": ([sys.executable, "-m", "simacc", "check", "simacc:generate_simulated_accept_index", "-q"], local),
    }
    times = {}
    for name, (command, env) in runs.items():
        start = time.perf_counter()
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env)
        times[name] = round(time.perf_counter() - start, 1)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else f"exit {done.returncode}"
        times[f"{name} outcome"] = last.strip("= ")
        progress(f"{name}: {times[name]} s ({times[f'{name} outcome']})")
    return times


def mutant_medians(seeds, workers):
    """``[{name, kind, median, examples}]``: examples to the first failure per seed."""
    from simacc import zoo
    from simacc.commands.checking import zoo_runs

    result = zoo_runs.run_zoo(list(zoo.MUTANTS.values()), seeds=seeds, workers=workers, expected_only=True,
                              profile="default")
    return [dict(name=r.name, kind=r.kind, verdict=r.verdict, median=r.median_examples, shrunk=r.shrunk,
                 examples=[run.examples for run in r.runs]) for r in result.rows if r.runs]


def medians_from(path):
    """The same rows from a ``simacc mutants --json`` file, instead of running the zoo again."""
    from simacc.commands.checking import zoo_runs

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    if not isinstance(data, dict) or data.get("schema") != zoo_runs.SCHEMA:
        raise ValueError(f"{path} is not a simacc mutants JSON file (schema {zoo_runs.SCHEMA})")
    return [dict(name=r["name"], kind=r["kind"], verdict=r["verdict"], median=r["median_examples"],
                 shrunk=r.get("shrunk", ""), examples=[run["examples"] for run in r["runs"]])
            for r in data["rows"] if r["runs"] and r["kind"] != "correct"]


def latencies(repeats, progress):
    """``{device: rows}`` of ``benchmarks/latency.py``'s table, on the CPU and on CUDA where
    it exists."""
    import torch

    latency = _latency_module()
    tables = {}
    for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
        tables[device] = latency.table(device, repeats)
        progress(f"latency on {device} done")
    return tables


def render(bench):
    latency = _latency_module()
    lines = ["examples per second, per property (each contract's reference, CPU, in-process, "
             f"profile {SUITE_PROFILE})",
             f"  {'contract':<8}  {'property':<56}  {'examples':>8}  {'time s':>7}  {'ex/s':>7}"]
    for r in sorted(bench.properties, key=lambda r: (r["per_second"] is None, -(r["per_second"] or 0))):
        rate = "-" if r["per_second"] is None else f"{r['per_second']:.0f}"
        examples = "-" if r["examples"] is None else str(r["examples"])
        lines.append(f"  {r['contract']:<8}  {r['id']:<56}  {examples:>8}  {r['seconds']:>7.2f}  {rate:>7}")
    lines += ["", "wall times (fresh processes, start-up included)"]
    lines += [f"  {name:<14} {seconds:>6} s  {bench.suite[f'{name} outcome']}"
              for name, seconds in bench.suite.items() if not name.endswith("outcome")]
    source = f"from {bench.header['zoo']}" if bench.header.get("zoo") else "expected killers only"
    lines += ["", f"examples to the first failure, per mutant (median over seeds; {source})",
              f"  {'mutant':<40}  {'kind':<22}  {'median':>6}  {'shrunk':<10}  per seed"]
    for r in sorted(bench.mutants, key=lambda r: -(r["median"] or 0)):
        median = "-" if r["median"] is None else f"{r['median']:g}"
        lines.append(f"  {r['name']:<40}  {r['kind']:<22}  {median:>6}  {r['shrunk']:<10}  {r['examples']}")
    for device, rows in bench.latency.items():
        lines += ["", latency.render(rows, device)]
    return "\n".join(lines)


def register(subparsers):
    from simacc.harness.config import settings as opts

    positive_int = opts.argtype(opts.positive_int)

    p = subparsers.add_parser(
        "bench",
        help="measure property speed, suite and check wall times, mutant kill speed and call latency",
        description="Benchmarks of the harness (minutes; not part of CI): examples per second per "
        "property, the CI suite's wall time with -n auto vs -n 0 and simacc check's, median examples "
        "to kill each mutant, and the reference's call latency next to a plain eager implementation.",
    )
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON (schema simacc.bench/1)")
    p.add_argument("--seeds", type=positive_int, default=5, metavar="N", help="seeds per mutant (default 5)")
    p.add_argument("--repeats", type=positive_int, default=500, metavar="N",
                   help="timed calls per latency row and implementation (default 500)")
    p.add_argument("-n", dest="workers", type=positive_int, default=2, metavar="WORKERS",
                   help="mutant checks run at a time (default 2)")
    p.add_argument("--zoo", metavar="PATH",
                   help="take the mutants' examples to failure from this `simacc mutants --json` file "
                   "instead of running them again")
    p.set_defaults(run=run)


def run(args):
    from simacc.commands.checking.conformance import write_json

    def progress(message):
        print(message, file=sys.stderr, flush=True)

    import torch

    start = time.perf_counter()
    try:
        zoo_rows = medians_from(args.zoo) if args.zoo else None
        lat = latencies(args.repeats, progress)
    except (OSError, ValueError) as e:
        print(f"simacc bench: error: {e}", file=sys.stderr)
        return 2
    result = Bench(
        header=dict(torch=torch.__version__, threads=torch.get_num_threads(), seeds=args.seeds,
                    repeats=args.repeats, workers=args.workers, zoo=args.zoo),
        properties=property_speeds(progress),
        suite=wall_times(progress),
        mutants=zoo_rows if zoo_rows is not None else mutant_medians(args.seeds, args.workers),
        latency=lat,
    )
    result.header["wall_s"] = round(time.perf_counter() - start, 1)
    print(render(result))
    if args.json:
        write_json(result, args.json)
    return 0
