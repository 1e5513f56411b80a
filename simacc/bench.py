"""``simacc bench``: how fast the harness is and how fast it catches bugs (issue #6).

Four measurements, printed as tables and written as JSON (schema ``simacc.bench/1``):

* examples per second of every property, from the check runner's verdict on each
  contract's reference (one process, so the times are the property's own);
* wall time of the whole property suite with ``-n auto`` and with ``-n 0`` on this machine;
* for every mutant, the median number of examples to the first failure over several seeds
  (each mutant through the properties expected to kill it);
* the reference's per-call latency against the naive per-row loop of the zoo, measured in
  the same run with ``benchmarks/latency.py``'s ``measure``.

It takes minutes and is not part of CI: speed is measured here, never asserted in tests.
"""

import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = "simacc.bench/1"
CONTRACTS = ("eagle", "legacy", "dflash")
SUITE_PROFILE = "ci"  # derandomized: the -n auto and -n 0 runs do the same work


@dataclass
class Bench:
    header: dict
    properties: list
    suite: dict
    mutants: list
    latency: list

    def to_json(self):
        return {"schema": SCHEMA, **self.__dict__}


def _project_root():
    import properties

    return Path(properties.__file__).resolve().parent.parent


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
    from simacc import verdict
    from simacc.check import run_check
    from simacc.impl import REFERENCES

    rows = []
    for contract in CONTRACTS:
        result = run_check(REFERENCES[contract], contract=contract, device="cpu", profile=SUITE_PROFILE,
                           workers=0, quiet=True)
        for r in result.results:
            if r.status not in verdict.CHECKED:
                continue
            rate = r.examples / r.seconds if r.examples and r.seconds else None
            rows.append(dict(contract=contract, id=r.id, status=r.status, examples=r.examples,
                             seconds=round(r.seconds, 3), per_second=None if rate is None else round(rate, 1)))
        progress(f"property speeds: {contract} done")
    return rows


def suite_wall_times(progress):
    """Seconds for ``pytest properties`` with ``-n auto`` and ``-n 0``, same profile."""
    root = _project_root()
    times = {}
    for workers in ("auto", "0"):
        command = [sys.executable, "-m", "pytest", str(root / "properties"), "-q", "-p", "no:cacheprovider",
                   "--hypothesis-profile", SUITE_PROFILE, "-n", workers]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
        times[f"-n {workers}"] = round(time.perf_counter() - start, 1)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        times[f"-n {workers} outcome"] = last.strip("= ")
        progress(f"suite -n {workers}: {times[f'-n {workers}']} s ({last.strip('= ')})")
    return times


def mutant_medians(seeds, workers):
    """``[{name, kind, median, examples}]``: examples to the first failure per seed."""
    from simacc import mutants, zoo

    result = mutants.run_zoo(list(zoo.MUTANTS.values()), seeds=seeds, workers=workers, expected_only=True,
                             profile="default")
    return [dict(name=r.name, kind=r.kind, verdict=r.verdict, median=r.median_examples,
                 examples=[run.examples for run in r.runs]) for r in result.rows if r.runs]


def medians_from(path):
    """The same rows from a ``simacc mutants --json`` file, instead of running the zoo again."""
    from simacc import mutants

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema") != mutants.SCHEMA:
        raise ValueError(f"{path} is not a simacc mutants JSON file (schema {mutants.SCHEMA})")
    return [dict(name=r["name"], kind=r["kind"], verdict=r["verdict"], median=r["median_examples"],
                 examples=[run["examples"] for run in r["runs"]])
            for r in data["rows"] if r["runs"] and r["kind"] != "correct"]


def latencies(repeats, progress):
    """Median per-call microseconds of the reference and of the per-row loop, and the ratio."""
    import simacc
    from simacc.zoo import correct

    latency = _latency_module()
    rows = []
    for bs in latency.BATCH_SIZES:
        for width in latency.WIDTHS:
            for mode in latency.MODES:
                ref = latency.measure(simacc.generate_simulated_accept_index, bs, width, mode, repeats)
                loop = latency.measure(correct.per_row_loop, bs, width, mode, max(10, repeats // 10), warmup=5)
                rows.append(dict(bs=bs, width=width, mode=mode, reference_us=round(ref, 1),
                                 loop_us=round(loop, 1), loop_over_reference=round(loop / ref, 2)))
        progress(f"latency: bs={bs} done")
    return rows


def render(bench):
    lines = ["examples per second, per property (each contract's reference, CPU, one process, "
             f"profile {SUITE_PROFILE})",
             f"  {'contract':<8}  {'property':<56}  {'examples':>8}  {'time s':>7}  {'ex/s':>7}"]
    for r in sorted(bench.properties, key=lambda r: (r["per_second"] is None, -(r["per_second"] or 0))):
        rate = "-" if r["per_second"] is None else f"{r['per_second']:.0f}"
        examples = "-" if r["examples"] is None else str(r["examples"])
        lines.append(f"  {r['contract']:<8}  {r['id']:<56}  {examples:>8}  {r['seconds']:>7.2f}  {rate:>7}")
    s = bench.suite
    lines += ["", f"whole property suite (pytest properties, profile {SUITE_PROFILE}): "
              f"-n auto {s['-n auto']} s, -n 0 {s['-n 0']} s"]
    source = f"from {bench.header['zoo']}" if bench.header.get("zoo") else "expected killers only"
    lines += ["", f"examples to the first failure, per mutant (median over seeds; {source})",
              f"  {'mutant':<40}  {'kind':<22}  {'median':>6}  per seed"]
    for r in sorted(bench.mutants, key=lambda r: -(r["median"] or 0)):
        median = "-" if r["median"] is None else f"{r['median']:g}"
        lines.append(f"  {r['name']:<40}  {r['kind']:<22}  {median:>6}  {r['examples']}")
    lines += ["", "call latency, median us: reference vs the per-row loop (same run)",
              f"  {'bs':>4}  {'W':>2}  {'mode':<17}  {'reference':>9}  {'loop':>9}  {'loop/ref':>8}"]
    for r in bench.latency:
        lines.append(f"  {r['bs']:>4}  {r['width']:>2}  {r['mode']:<17}  {r['reference_us']:>9.1f}  "
                     f"{r['loop_us']:>9.1f}  {r['loop_over_reference']:>8.2f}")
    return "\n".join(lines)


def register(subparsers):
    from simacc.argtypes import positive_int

    p = subparsers.add_parser(
        "bench",
        help="measure property speed, suite wall time, mutant kill speed and call latency",
        description="Benchmarks of the harness (minutes; not part of CI): examples per second per "
        "property, the suite's wall time with -n auto vs -n 0, median examples to kill each mutant, "
        "and the reference's call latency against a naive per-row loop.",
    )
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON (schema simacc.bench/1)")
    p.add_argument("--seeds", type=positive_int, default=5, metavar="N", help="seeds per mutant (default 5)")
    p.add_argument("--repeats", type=positive_int, default=500, metavar="N",
                   help="timed reference calls per latency row (the loop gets a tenth; default 500)")
    p.add_argument("-n", dest="workers", type=positive_int, default=2, metavar="WORKERS",
                   help="mutant checks run at a time (default 2)")
    p.add_argument("--zoo", metavar="PATH",
                   help="take the mutants' examples to failure from this `simacc mutants --json` file "
                   "instead of running them again")
    p.set_defaults(run=run)


def run(args):
    from simacc.check import write_json

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
        suite=suite_wall_times(progress),
        mutants=zoo_rows if zoo_rows is not None else mutant_medians(args.seeds, args.workers),
        latency=lat,
    )
    result.header["wall_s"] = round(time.perf_counter() - start, 1)
    print(render(result))
    if args.json:
        write_json(result, args.json)
    return 0
