"""``simacc engines``: each engine's own code, version and layout through ``simacc check``, as
one markdown table (``docs/engines.md`` is its output): the row, the engine, the version, the
layout, the level, the verdict and the time.

An engine's code is whatever ``import`` finds (installed, or its wheel's files on
``PYTHONPATH``, as docs/vllm.md says), or, with ``--version NAME==VERSION``, that release's
wheel, fetched and unpacked (:mod:`simacc.commands.serving.wheels`) and put first on the check's
``PYTHONPATH``; ``--python NAME=PATH`` runs that engine's checks with another interpreter (an
environment in which its modules import: ``benchmarks/engine_env.sh``). Before any check
runs, each layout's code is read from the files (:mod:`simacc.commands.serving.engine_api`): a
layout a version does not have is a row that says so, and what changed between two versions
of one engine is said first. A row whose code is not there, or does not import, says so with
the reason; nothing is guessed. Each check runs in a process of its own, on the CPU unless
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

from simacc.commands.serving import engine_api, wheels
from simacc.commands.exits import Exit
from simacc.harness.processes import forkserver

HELP = """\
Run simacc check on each engine's own code and print the verdicts as a markdown table.

Rows: sglang's eager function, its Triton op and DFLASH; DSpark's step length, bonus and
accept (through simacc.contract.dspark_glue and dspark_serving_glue); sglang-jax's functional port;
vLLM's settings, conversion, V1 decision, V1 sampler and V2 sampler (through
simacc.contract.vllm_glue). An engine whose code is not importable here gets a row that says
why. Put an engine's wheel files on PYTHONPATH to include it (docs/vllm.md), or name its
releases with --version: each is downloaded (pip download --no-deps) into --wheel-dir,
unpacked, and checked in its own rows; what changed between two of them (a module gone, a
function moved, a parameter added or removed) is printed before any check runs.

examples:
  simacc engines --version vllm==0.33.0 --version vllm==0.34.0 --python vllm=/tmp/engines-env/vllm/bin/python
  simacc engines --only sglang-eager --version sglang==0.5.23 --python sglang=/tmp/engines-env/sglang/bin/python

exit codes:
  0  every row that ran is conformant (rows that could not run say why)
  1  some row is not conformant
  2  usage error
  5  no row could run
"""

COLUMNS = ("row", "engine", "version", "layout", "level", "verdict", "time")
WHEEL_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "simacc" / "wheels"


def _root(module):
    """The folder the top package of ``module`` lies in, as this process imports it, or None."""
    found = importlib.util.find_spec(module.split(".")[0])
    if found is None:
        return None
    if found.submodule_search_locations:
        return Path(next(iter(found.submodule_search_locations))).parent
    return Path(found.origin).parent


@dataclass(frozen=True)
class Row:
    """One engine's layout: its id (for ``--only`` and ``--impl``), its distribution and top
    module, and its IMPL, either a module path or ``file:RELATIVE:ATTR``, a file inside the top
    module's folder loaded by its path (a Triton op whose package ``__init__`` imports a
    server); an empty IMPL with ``unknown``, why none is known."""

    id: str
    engine: str
    distribution: str
    module: str
    layout: str
    impl: str
    unknown: str = ""
    given: bool = False  # the IMPL came from --impl: checked as it is

    def spec(self, root):
        """The IMPL to check with the engine's code under the folder ``root`` (None: not there),
        or ``(None, why)``."""
        if self.given:
            return self.impl, None
        if not self.impl:
            return None, self.unknown
        if root is None:
            return None, f"not importable here: no module {self.module!r} (not installed, not on PYTHONPATH)"
        if not self.impl.startswith("file:"):
            return self.impl, None
        _, relative, attribute = self.impl.split(":")
        path = Path(root, *self.module.split("."), relative)
        if not path.is_file():
            return None, f"{self.module} has no {relative} in this version"
        return f"{path}:{attribute}", None

    def calls(self):
        """What the IMPL calls in the engine's code, read without importing it: the glue's
        table for vLLM's layouts, else the IMPL's own function where it lies in the engine;
        none for a given IMPL, or another glue of simacc's (nothing of it to read there)."""
        from simacc.contract.vllm_glue import CALLS, Call

        if self.given or not self.impl:
            return ()
        if self.impl.startswith(GLUE + ":"):
            return CALLS[self.impl.split(":")[1]]
        if self.impl.startswith("file:"):
            _, relative, attribute = self.impl.split(":")
            return (Call(attribute, (f"{self.module}.{relative.removesuffix('.py').replace('/', '.')}",)),)
        module, attribute = self.impl.split(":")
        return (Call(attribute, (module,)),) if module.split(".")[0] == self.module.split(".")[0] else ()


GLUE = "simacc.contract.vllm_glue"
DSPARK, DSPARK_SERVING = "simacc.contract.dspark_glue", "simacc.contract.dspark_serving_glue"  # sglang's DSpark files
NO_JAX_RELEASE = ("no IMPL known: the sglang-jax release pip finds (0.0.1.post1) has no simulated "
                  "acceptance; give its function with --impl sglang-jax=MODULE:FUNCTION (docs/jax.md's glue)")
RUNNER_CUTS = (
    "A row whose verdict says \"refused drafts cut by its runner\" was checked with `--refused-drafts runner`, as a "
    "port of its sampler would be: that version keeps a draft the request's grammar refuses, and every draft after "
    "it, from its sampler (vLLM 0.33: V1's scheduler drops them or pads them with -1 after `validate_tokens`; V2's "
    "runner makes them -1 with `grammar_invalid_drafts`), so the sampler is handed them so (CONTRACT.md §15.4). "
    "It does that for a grammar's refusals only. A draft cut by top-k, top-p, min-p or bad words reaches vLLM "
    "0.33's sampler as it is, and its synthetic mode, which reads no logit before accepting, accepts it at its "
    "rate and emits it (V1 `rejection_sampler.py:826-830` and `:931-936`, V2 `rejection_sampler_utils.py:612-617`), "
    "as 0.34's does. A `-inf` logit cannot say which of the two cut it, so these rows do not judge that.")
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
    Row("vllm-v1-decision", "vLLM", "vllm", "vllm", "V1 decision (§16.1; vLLM 0.33 and earlier)",
        f"{GLUE}:v1_synthetic_accept"),
    Row("vllm-v1-sampler", "vLLM", "vllm", "vllm", "V1 sampler (§16.2; vLLM 0.33 and earlier)",
        f"{GLUE}:v1_synthetic_rejection_sample"),
    Row("vllm-v2-sampler", "vLLM", "vllm", "vllm", "V2 sampler (§17)", f"{GLUE}:v2_synthetic_rejection_sample"),
)


@dataclass(frozen=True)
class Source:
    """Where one engine's code comes from: ``version`` None for whatever import finds here,
    else a release and the ``folder`` its wheel is unpacked in, or ``why`` it cannot be had;
    ``python``, the interpreter its checks run with."""

    distribution: str
    version: str | None = None
    folder: Path | None = None
    why: str = ""
    python: str = sys.executable

    def root(self, row):
        """The folder the row's top module lies in, or None."""
        return self.folder if self.version else _root(row.module)

    def version_of(self):
        """The version a row of this source shows."""
        if self.version:
            return self.version
        if self.python != sys.executable:  # what that interpreter imports, PYTHONPATH included
            done = subprocess.run([self.python, "-c", "import importlib.metadata as m, sys; "
                                   "print(m.version(sys.argv[1]))", self.distribution], capture_output=True, text=True)
            return done.stdout.strip() or "not found"
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return "not found"


@dataclass(frozen=True)
class Verdict:
    row: Row
    version: str
    level: str
    verdict: str
    seconds: float | None
    ran: bool
    conformant: bool = False
    refused_drafts: str = "sampler"  # --refused-drafts it was checked with (CONTRACT.md §15.4)


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
    parser.add_argument("--version", action="append", default=[], metavar="NAME==VERSION",
                        help="check this release of an engine (vllm==0.34.0), its wheel downloaded with pip download "
                        "--no-deps and unpacked on the checks' PYTHONPATH, in rows of its own; repeatable, in order")
    parser.add_argument("--wheel-dir", default=str(WHEEL_DIR), metavar="DIR",
                        help=f"where --version's wheels are downloaded and unpacked, and kept (default {WHEEL_DIR}); "
                        "a wheel already there is used as it is")
    parser.add_argument("--python", action="append", default=[], metavar="NAME=PATH",
                        help="run that engine's checks with this interpreter, simacc installed in it "
                        "(benchmarks/engine_env.sh makes one for vllm and sglang)")
    parser.set_defaults(run=run)


def _environment(options, source):
    """The environment a check of ``source`` runs in."""
    env = dict(os.environ)
    env.pop("SGLANG_SIMULATE_ACC_TOKEN_ID", None)  # no sglang release reads it (CONTRACT.md §5.2): the fixed id is 100
    if source.version:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source.folder), env.get("PYTHONPATH")) if p)
    if options.device == "cpu":  # vLLM turns Triton off without a driver unless this is set and empty
        env.setdefault("TRITON_INTERPRET", "1")
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    return env


GLUE_PROBE = """\
import json, sys
from simacc.contract import vllm_glue as g
broken = {}
for layout in sys.argv[1:]:
    try:
        for call in g.CALLS[layout]:
            g.find(layout, call.name)
    except g.NotInThisVersion:
        pass  # read from the files already: the row says so
    except Exception as e:
        broken[layout] = f"{type(e).__name__}: {e}"
print(json.dumps(broken))
"""


def glue_imports(rows, options, source):
    """``{row id: why}`` for the rows whose glue's vLLM modules do not import where their
    checks would run (one interpreter for all of them). The glue imports vLLM on its first
    call, so without this a missing dependency would fail every property instead of saying so."""
    glued = {row.impl.split(":")[1]: row.id for row in rows if not row.given and row.impl.startswith(GLUE + ":")}
    if not glued or source.why:
        return {}
    done = subprocess.run([source.python, "-c", GLUE_PROBE, *glued], capture_output=True, text=True,
                          env=_environment(options, source))
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        return dict.fromkeys(glued.values(), said[-1] if said else f"exit {done.returncode}")
    return {glued[layout]: why for layout, why in json.loads(done.stdout.splitlines()[-1]).items()}


def _check(spec, options, source, refused_drafts):
    """``(exit code, verdict JSON or None, last line of output, seconds)`` of one check."""
    env = _environment(options, source)
    with tempfile.TemporaryDirectory(prefix="simacc-engines-") as folder:
        report = Path(folder) / "v.json"
        start = time.perf_counter()
        done = subprocess.run([source.python, "-m", "simacc", "check", spec, "--device", options.device,
                               "--max-examples", str(options.max_examples), "--timeout", str(options.timeout), "--seed", "0",
                               "-n", "0", "-q", "--refused-drafts", refused_drafts,
                               "--json", str(report)], capture_output=True, text=True, cwd=folder, env=env)
        seconds = time.perf_counter() - start
        data = json.loads(report.read_text()) if report.is_file() else None
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return done.returncode, data, said[-1] if said else "", seconds


def read(row, source):
    """What the row's code calls, as the source's files have it (:class:`engine_api.Found`
    each), or None where there is nothing to read."""
    root = source.root(row)
    calls = row.calls()
    if root is None or not calls or source.why:
        return None
    return [engine_api.find(root, call) for call in calls]


def judge(row, source, found, broken, options):
    """The :class:`Verdict` of one row of one source; ``found``, what :func:`read` read;
    ``broken``, why its glue does not import (:func:`glue_imports`), or None."""
    version = source.version_of()
    if source.why:
        return Verdict(row, version, "", f"not run: {source.why}", None, False)
    spec, why = row.spec(source.root(row))
    if spec is None:
        return Verdict(row, version, "", f"not run: {why}", None, False)
    gone = found and engine_api.missing(row.calls(), found)
    if gone:
        return Verdict(row, version, "", f"not in {row.engine} {version}: {gone}", None, False)
    if broken:
        return Verdict(row, version, "", f"not run: vLLM's code does not import here: {broken}"
                       f"{_missing(row.distribution, source)}", None, False)
    who = refused_drafts(row, found)
    code, data, last, seconds = _check(spec, options, source, who)
    level = data["header"]["level"] if data else ""
    if code == Exit.USAGE or data is None:
        said = last.removeprefix("simacc check: error: ")
        return Verdict(row, version, level, f"not run: {said}{_missing(row.distribution, source)}", seconds, False)
    statuses = [r["status"] for r in data["results"]]
    cut = "; refused drafts cut by its runner" if who == "runner" else ""
    if code == Exit.OK:
        return Verdict(row, version, level, f"conformant ({statuses.count('pass')} properties pass{cut})", seconds,
                       True, True, who)
    failed = [r for r in data["results"] if r["status"] not in ("pass", "not applicable", "skipped", "xfail")]
    if code == Exit.FAILED:
        first = failed[0] if failed else None
        detail = f": {first['id']}: {first['message'].splitlines()[0]}" if first else ""
        return Verdict(row, version, level, f"NOT CONFORMANT ({len(failed)} failed{cut}){detail}", seconds, True,
                       False, who)
    return Verdict(row, version, level, f"not run: {last}", seconds, False)


def refused_drafts(row, found):
    """``--refused-drafts`` for the row's check: ``runner`` where the version's files have the
    step by which its runner makes a draft its grammar refuses -1 before the sampler (a ``cuts``
    call of the glue's table, read in ``found``), else ``sampler`` (CONTRACT.md §15.4)."""
    cuts = [f for call, f in zip(row.calls(), found or ()) if call.cuts]
    return "runner" if any(f.module is not None for f in cuts) else "sampler"


def _missing(distribution, source):
    """``; sglang 0.5.23 declares 78 requirements, 60 not installed here (a, b, c, ...)``: why its
    code may not import, from its metadata; nothing when it declares none or all are here, or
    when another interpreter runs the check (what it has installed is its own)."""
    if source.python != sys.executable:
        return ""
    try:
        found = (importlib.metadata.Distribution.at(next(source.folder.glob("*.dist-info"))) if source.version
                 else importlib.metadata.distribution(distribution))
    except (importlib.metadata.PackageNotFoundError, StopIteration):
        return ""
    declared = found.requires or []
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
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for v in verdicts:
        seconds = "" if v.seconds is None else f"{v.seconds:.0f} s"
        verdict = v.verdict.replace("|", "\\|")
        lines.append(f"| {v.row.id} | {v.row.engine} | {v.version} | {v.row.layout} | {v.level or '-'} | {verdict} "
                     f"| {seconds} |")
    return "\n".join(lines)


def differences(plan, readings):
    """What changed between consecutive versions of each engine, per layout, as markdown
    bullets (empty when no engine has two versions); ``plan``: ``[(rows, sources)]``."""
    lines = []
    for rows, sources in plan:
        for old, new in zip(sources, sources[1:]):
            both = [row for row in rows if readings.get((row.id, old)) and readings.get((row.id, new))]
            if both:
                lines.append(f"- **{both[0].engine} {old.version} → {new.version}**")
            for row in both:
                before, after = readings[(row.id, old)], readings[(row.id, new)]
                gone = engine_api.missing(row.calls(), after)
                said = ([f"layout gone: {gone}"] if gone and not engine_api.missing(row.calls(), before)
                        else engine_api.changes(row.calls(), before, after))
                lines += [f"  - {row.layout}: {line}" for line in said] or [f"  - {row.layout}: unchanged"]
    return "\n".join(lines)


def _usage(message):
    print(f"simacc engines: error: {message}", file=sys.stderr)
    return Exit.USAGE


def _sources(args):
    """``[(distribution, [Source, ...])]`` in the rows' order, or a usage error's message."""
    known = list(dict.fromkeys(row.distribution for row in ROWS))
    releases, pythons = {}, {}
    for text in args.version:
        try:
            name, version = wheels.parse(text)
        except ValueError as e:
            return f"--version {e}"
        if name not in known:
            return f"--version {text}: no engine distributes {name!r}; the engines are {', '.join(known)}"
        releases.setdefault(name, []).append(version)
    for text in args.python:
        name, _, path = text.partition("=")
        if name not in known or not path:
            return f"--python {text!r} is not NAME=PATH with NAME one of {', '.join(known)}"
        if not os.access(path, os.X_OK) or not Path(path).is_file():
            return f"--python {text}: {path} is not an interpreter (no executable file there)"
        pythons[name] = path
    plan = []
    for name in known:
        python = pythons.get(name, sys.executable)
        if name not in releases:
            plan.append((name, [Source(name, python=python)]))
            continue
        sources = []
        for version in dict.fromkeys(releases[name]):
            folder, why = wheels.unpacked(name, version, args.wheel_dir)
            sources.append(Source(name, version, folder, why, python))
        plan.append((name, sources))
    return plan


def _command(args):
    """The command line this run stands for, for the page's first lines."""
    said = ["simacc engines", *(f"--version {v}" for v in args.version), *(f"--python {p}" for p in args.python),
            *(f"--only {o}" for o in args.only), *(f"--impl {i}" for i in args.impl)]
    if args.wheel_dir != str(WHEEL_DIR):
        said.append(f"--wheel-dir {args.wheel_dir}")
    said += [f"--max-examples {args.max_examples}", f"--device {args.device}", f"--timeout {args.timeout:g}",
             f"--output {args.output}"]
    return " ".join(said)


def run(args):
    ids = {row.id for row in ROWS}
    given = dict(pair.partition("=")[::2] for pair in args.impl)
    unknown = sorted(set(args.only) - ids | set(given) - ids)
    if unknown or not all(given.values()):
        return _usage(f"unknown row {', '.join(unknown) or 'IMPL (empty)'}; the rows are "
                      f"{', '.join(row.id for row in ROWS)}")
    selected = [dataclasses.replace(row, impl=given[row.id], given=True) if row.id in given else row
                for row in ROWS if not args.only or row.id in args.only]
    sources = _sources(args)
    if isinstance(sources, str):
        return _usage(sources)
    shared = forkserver.server()  # each row's check (in this interpreter) forks its session from it
    if shared is not None:
        forkserver.offer(shared)
    plan = [([row for row in selected if row.distribution == name], found) for name, found in sources]
    plan = [(rows, found) for rows, found in plan if rows]
    readings = {(row.id, source): read(row, source) for rows, found in plan for source in found for row in rows}
    changed = differences(plan, readings)
    if changed:
        print(f"What changed between versions (read from their files, nothing imported):\n{changed}\n",
              file=sys.stderr, flush=True)
    verdicts = []
    for rows, found in plan:
        for source in found:
            broken = glue_imports([row for row in rows if not (readings[(row.id, source)] and engine_api.missing(
                row.calls(), readings[(row.id, source)]))], args, source)
            for row in rows:
                verdicts.append(judge(row, source, readings[(row.id, source)], broken.get(row.id), args))
                print(f"{row.engine} {verdicts[-1].version} {row.layout}: {verdicts[-1].verdict}", file=sys.stderr,
                      flush=True)
    text = table(verdicts)
    print(text)
    if args.output:
        _write(args, text, changed, verdicts)
    if not any(v.ran for v in verdicts):
        return Exit.NOTHING_CHECKED
    return Exit.OK if all(v.conformant for v in verdicts if v.ran) else Exit.FAILED


def _write(args, text, changed, verdicts):
    import platform

    import torch

    machine = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, " \
              f"{'CUDA ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}"
    page = ("# Engines\n\nEach engine's own code through `simacc check`, one row per engine, version and layout: "
            f"generated by\n\n    {_command(args)}\n\n"
            f"on {machine} (the interpreter running `simacc engines`; `--python` names another for an engine's "
            "checks, an environment `benchmarks/engine_env.sh` makes). A `--version`'s wheel is downloaded with "
            "`pip download --no-deps` and unpacked, whole, first on the check's `PYTHONPATH`; nothing is installed. "
            "A row whose code is not there, not in that version or not importable says why. Each check runs with "
            "`--seed 0 -n 0`; the time is its wall time. Without a GPU, Triton's interpreter runs the kernels "
            "(`TRITON_INTERPRET=1`), a request at a time.\n\n" + text + "\n")
    if any(v.refused_drafts == "runner" for v in verdicts):
        page += "\n" + RUNNER_CUTS + "\n"
    if changed:
        page += ("\n## What changed between versions\n\nRead from each version's files (`ast`, nothing imported) "
                 "before any check ran:\n\n" + changed + "\n")
    reports = sorted((Path(args.output).parent / "findings").glob("*.md"))
    if reports:
        page += ("\n## Reports\n\nWhat a NOT CONFORMANT row found, written for the engine's maintainers (the case, "
                 "the lines of its code, the replay), from `findings/` beside this page:\n\n"
                 + "".join(f"- [{_title(path)}](findings/{path.name})\n" for path in reports))
    Path(args.output).write_text(page)


def _title(path):
    """A report's first heading, or its file's name."""
    return next((line.lstrip("# ").strip() for line in path.read_text().splitlines() if line.startswith("#")),
                path.stem)
