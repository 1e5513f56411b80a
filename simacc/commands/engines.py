"""``simacc engines``: each engine's own code, version and layout through ``simacc check``, as
one markdown table (``docs/engines.md`` is its output): the engine, the version found, the
layout, the level, the verdict and the time.

An engine's code is whatever ``import`` finds (installed, or its wheel's files on
``PYTHONPATH``, as docs/vllm.md says). A row whose code is not there, or does not import
(sglang's serving modules need its serving dependencies), says so with the reason the
check gave; nothing is guessed. Each check runs in a process of its own, on the CPU unless
``--device`` says otherwise; without a GPU, Triton's interpreter runs the Triton kernels.
"""

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from simacc.commands.exits import Exit

HELP = """\
Run simacc check on each engine's own code and print the verdicts as a markdown table.

Rows: sglang's eager function, its Triton op and DFLASH; DSpark's step length, bonus and
accept (through simacc.contract.dspark_glue and dspark_serving_glue); sglang-jax's functional port;
vLLM's settings, conversion, V1 decision, V1 sampler and V2 sampler (through
simacc.contract.vllm_glue). An engine whose code is not importable here gets a row that says
why. Put an engine's wheel files on PYTHONPATH to include it (docs/vllm.md).

exit codes:
  0  every row that ran is conformant (rows that could not run say why)
  1  some row is not conformant
  5  no row could run
"""


@dataclass(frozen=True)
class Row:
    """One engine's layout: its id (for ``--impl``), its distribution and top module, and its
    IMPL, either a module path or ``file:RELATIVE:ATTR``, a file inside the top module's folder
    loaded by its path (a Triton op whose package ``__init__`` imports a server); an empty IMPL
    with ``unknown``, why none is known."""

    id: str
    engine: str
    distribution: str
    module: str
    layout: str
    impl: str
    unknown: str = ""
    given: bool = False  # the IMPL came from --impl: checked as it is

    def spec(self):
        """The IMPL to check, or ``(None, why)`` when the code is not here."""
        if self.given:
            return self.impl, None
        if not self.impl:
            return None, self.unknown
        found = importlib.util.find_spec(self.module.split(".")[0])
        if found is None:
            return None, f"not importable here: no module {self.module!r} (not installed, not on PYTHONPATH)"
        if not self.impl.startswith("file:"):
            return self.impl, None
        _, relative, attribute = self.impl.split(":")
        path = Path(next(iter(found.submodule_search_locations))) / relative
        if not path.is_file():
            return None, f"{self.module} has no {relative} in this version"
        return f"{path}:{attribute}", None

    def version(self):
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return "not found"


GLUE = "simacc.contract.vllm_glue"
DSPARK, DSPARK_SERVING = "simacc.contract.dspark_glue", "simacc.contract.dspark_serving_glue"  # sglang's DSpark files
NO_JAX_RELEASE = ("no IMPL known: the sglang-jax release pip finds (0.0.1.post1) has no simulated "
                  "acceptance; give its function with --impl sglang-jax=MODULE:FUNCTION (docs/jax.md's glue)")
ROWS = (
    Row("sglang-eager", "sglang", "sglang", "sglang", "eager (`generate_simulated_accept_index`)",
        "sglang.srt.speculative.spec_utils:generate_simulated_accept_index"),
    Row("sglang-triton", "sglang", "sglang", "sglang", "Triton op (`simulated_accept`)",
        "file:kernels/ops/speculative/simulated_accept.py:simulated_accept"),
    Row("sglang-dflash", "sglang", "sglang", "sglang", "DFLASH (`apply_dflash_simulated_acceptance`)",
        "sglang.srt.speculative.dflash_utils:apply_dflash_simulated_acceptance"),
    Row("sglang-dspark-length", "sglang", "sglang", "sglang", "DSpark step length (`begin_simulated_step`, §19)",
        f"{DSPARK_SERVING}:begin_simulated_step"),
    Row("sglang-dspark-bonus", "sglang", "sglang", "sglang", "DSpark bonus (`simulated_bonus_sample`, §20)",
        "file:kernels/ops/speculative/dspark/simulated_bonus.py:simulated_bonus_sample"),
    Row("sglang-dspark-bonus-graph", "sglang", "sglang", "sglang",
        "DSpark fold's bonus (`simulated_bonus_sample_graph`, §20.5)", f"{DSPARK}:simulated_bonus_sample_graph"),
    Row("sglang-dspark-tail-torch", "sglang", "sglang", "sglang", "DSpark accept tail, torch (`static_accept_tail_torch`, "
        "§21)", f"{DSPARK}:static_accept_tail_torch"),
    Row("sglang-dspark-tail-triton", "sglang", "sglang", "sglang", "DSpark accept tail, Triton (`static_accept_tail`'s "
        "kernel, §21)", f"{DSPARK}:static_accept_tail_triton"),
    Row("sglang-dspark-eager", "sglang", "sglang", "sglang", "DSpark accept, separate ops (`AcceptGreedy`, "
        "`build_accept_outs`, §21.4)", f"{DSPARK_SERVING}:eager_accept"),
    Row("sglang-jax", "sglang-jax", "sglang-jax", "sgl_jax", "functional", "", NO_JAX_RELEASE),
    Row("vllm-settings", "vLLM", "vllm", "vllm", "settings (§13)", f"{GLUE}:resolve_synthetic_rates"),
    Row("vllm-conversion", "vLLM", "vllm", "vllm", "conversion (§14)", f"{GLUE}:conditional_rates"),
    Row("vllm-v1-decision", "vLLM", "vllm", "vllm", "V1 decision (§16.1)", f"{GLUE}:v1_synthetic_accept"),
    Row("vllm-v1-sampler", "vLLM", "vllm", "vllm", "V1 sampler (§16.2)", f"{GLUE}:v1_synthetic_rejection_sample"),
    Row("vllm-v2-sampler", "vLLM", "vllm", "vllm", "V2 sampler (§17)", f"{GLUE}:v2_synthetic_rejection_sample"),
)


@dataclass(frozen=True)
class Verdict:
    row: Row
    version: str
    level: str
    verdict: str
    seconds: float | None
    ran: bool
    conformant: bool = False


def register(subparsers):
    parser = subparsers.add_parser("engines", help="check each engine's own code and print a table of verdicts",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", metavar="PATH", help="also write the table, with how it was made, to PATH "
                        "(docs/engines.md)")
    parser.add_argument("--max-examples", type=int, default=5, metavar="N",
                        help="examples per property in each check (default 5: the samplers run a request at a time "
                        "in Triton's interpreter)")
    parser.add_argument("--device", default="cpu", help="the device each check runs on (default cpu)")
    parser.add_argument("--timeout", type=float, default=600, metavar="S",
                        help="each check's limit per call (default 600: a statistical property's batch of hundreds "
                        "of requests, interpreted)")
    parser.add_argument("--only", action="append", default=[], metavar="ROW",
                        help=f"this row only ({', '.join(row.id for row in ROWS)}); repeatable")
    parser.add_argument("--impl", action="append", default=[], metavar="ROW=IMPL",
                        help="check IMPL for that row instead of its own (a port elsewhere, a glue of your own)")
    parser.set_defaults(run=run)


def _check(spec, options):
    """``(exit code, verdict JSON or None, last line of output, seconds)`` of one check."""
    env = dict(os.environ)
    if options.device == "cpu":  # vLLM turns Triton off without a driver unless this is set and empty
        env.setdefault("TRITON_INTERPRET", "1")
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    with tempfile.TemporaryDirectory(prefix="simacc-engines-") as folder:
        report = Path(folder) / "v.json"
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "simacc", "check", spec, "--device", options.device,
                               "--max-examples", str(options.max_examples), "--timeout", str(options.timeout), "--seed", "0",
                               "-n", "0", "-q",
                               "--json", str(report)], capture_output=True, text=True, cwd=folder, env=env)
        seconds = time.perf_counter() - start
        data = json.loads(report.read_text()) if report.is_file() else None
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return done.returncode, data, said[-1] if said else "", seconds


def judge(row, options):
    """The :class:`Verdict` of one row."""
    spec, why = row.spec()
    version = row.version()
    if spec is None:
        return Verdict(row, version, "", f"not run: {why}", None, False)
    code, data, last, seconds = _check(spec, options)
    level = data["header"]["level"] if data else ""
    if code == Exit.USAGE or data is None:
        said = last.removeprefix("simacc check: error: ")
        return Verdict(row, version, level, f"not run: {said}{_missing(row.distribution)}", seconds, False)
    statuses = [r["status"] for r in data["results"]]
    if code == Exit.OK:
        return Verdict(row, version, level, f"conformant ({statuses.count('pass')} properties pass)", seconds, True,
                       True)
    failed = [r for r in data["results"] if r["status"] not in ("pass", "not applicable", "skipped", "xfail")]
    if code == Exit.FAILED:
        first = failed[0] if failed else None
        detail = f": {first['id']}: {first['message'].splitlines()[0]}" if first else ""
        return Verdict(row, version, level, f"NOT CONFORMANT ({len(failed)} failed){detail}", seconds, True)
    return Verdict(row, version, level, f"not run: {last}", seconds, False)


def _missing(distribution):
    """``; sglang 0.5.23 declares 78 requirements, 60 not installed here (a, b, c, ...)``: why its
    code may not import, from its metadata; nothing when it declares none or all are here."""
    try:
        declared = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return ""
    names = [re.match(r"[A-Za-z0-9._-]+", r).group() for r in declared if "extra ==" not in r]
    missing = []
    for name in names:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if not missing:
        return ""
    shown = ", ".join(missing[:6]) + (", ..." if len(missing) > 6 else "")
    return f"; {distribution} declares {len(names)} requirements, {len(missing)} not installed here ({shown})"


def table(verdicts):
    lines = ["| engine | version | layout | level | verdict | time |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        seconds = "" if v.seconds is None else f"{v.seconds:.0f} s"
        verdict = v.verdict.replace("|", "\\|")
        lines.append(f"| {v.row.engine} | {v.version} | {v.row.layout} | {v.level or '-'} | {verdict} | {seconds} |")
    return "\n".join(lines)


def run(args):
    ids = {row.id for row in ROWS}
    given = dict(pair.partition("=")[::2] for pair in args.impl)
    unknown = sorted(set(args.only) - ids | set(given) - ids)
    if unknown or not all(given.values()):
        print(f"simacc engines: error: unknown row {', '.join(unknown) or 'IMPL (empty)'}; the rows are "
              f"{', '.join(row.id for row in ROWS)}", file=sys.stderr)
        return Exit.USAGE
    rows = [dataclasses.replace(row, impl=given[row.id], given=True) if row.id in given else row
            for row in ROWS if not args.only or row.id in args.only]
    verdicts = []
    for row in rows:
        verdicts.append(judge(row, args))
        print(f"{row.engine} {row.layout}: {verdicts[-1].verdict}", file=sys.stderr, flush=True)
    text = table(verdicts)
    print(text)
    if args.output:
        import platform

        import torch

        machine = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, " \
                  f"{'CUDA ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}"
        Path(args.output).write_text(
            "# Engines\n\nEach engine's own code through `simacc check`, one row per layout: generated by\n\n"
            f"    simacc engines --max-examples {args.max_examples} --device {args.device} --timeout {args.timeout:g} "
            f"--output {args.output}\n\n"
            f"on {machine}, each engine's wheel unpacked on `PYTHONPATH` (`pip download --no-deps`, as\n"
            "docs/vllm.md says); a row whose code is not importable says why. Each check runs with\n"
            "`--seed 0 -n 0`; the time is its wall time. Without a GPU, Triton's interpreter runs the kernels\n"
            "(`TRITON_INTERPRET=1`), a request at a time.\n\n" + text + "\n")
    if not any(v.ran for v in verdicts):
        return Exit.NOTHING_CHECKED
    return Exit.OK if all(v.conformant for v in verdicts if v.ran) else Exit.FAILED
