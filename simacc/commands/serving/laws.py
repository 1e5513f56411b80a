"""``simacc laws --length AL --steps K``: every engine's law at one mean acceptance length, side
by side (CONTRACT.md §23-§27), for a benchmark that pins one AL and compares engines at it.

Each row is the engine asked for ``AL``: the setting it takes in its own unit (or why it cannot
take it), the law of one request's accepted drafts with its mean and spread, whether a step's
requests draw on their own or in lockstep, and what that does to a step's mean over the batch.
A row is simacc's reference (exact: :mod:`simacc.contract.laws`) unless the engine's own code is
importable here: sglang's sampler and vLLM's resolver, conversion and V2 sampler then run, and
the row is what they drew, its mean with an interval at the stated false-alarm rate.
"""

import argparse
import importlib.metadata
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from simacc.commands.exits import Exit
from simacc.commands.serving import arguments
from simacc.contract import laws
from simacc.harness.config import settings as opts
from simacc.harness.judging import statistics
from simacc.harness.processes.atomic import write_atomically

SCHEMA = "simacc.laws/1"
EXIT_CODES = f"""exit codes:
  {Exit.OK:d}  the table is printed (an engine that cannot take the AL is a row that says why)
  {Exit.USAGE:d}  usage error: a bad option, or a --json/--html path in a missing folder

A row comes from the engine's own code where it is importable (sglang's sample_simulated_acc_len,
vLLM through simacc.contract.vllm_glue: docs/vllm.md), else from simacc's reference; the notes
say which, and why not. The laws, their units and sources: CONTRACT.md §23-§27, docs/laws.md."""


def register(subparsers):
    p = subparsers.add_parser(
        "laws", help="every engine's law at one mean acceptance length, side by side",
        description="For one mean acceptance length AL (accepted drafts + 1) and K drafts per step: each\n"
        "engine's setting in its own unit (or why it cannot take AL), the law of one request's accepted\n"
        "drafts, its mean and spread, whether a step's requests draw on their own or in lockstep, and\n"
        "the spread of a step's mean over a batch.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--length", required=True, type=opts.argtype(arguments.length), metavar="AL",
                   help="the mean acceptance length asked for, the target's token included")
    p.add_argument("--steps", required=True, type=opts.argtype(opts.positive_int), metavar="K",
                   help="drafts per request per step (num_speculative_tokens)")
    p.add_argument("--batch", type=opts.argtype(opts.positive_int), default=64, metavar="N",
                   help="requests per step, for the spread of a step's mean (default 64)")
    p.add_argument("--draws", type=opts.argtype(opts.positive_int), default=1000, metavar="N",
                   help="draws of an engine's own code, where it runs (default 1000; vLLM's V2 sampler interpreted "
                   "on a CPU draws about 15 requests a second)")
    p.add_argument("--references", action="store_true",
                   help="simacc's references for every row, even where an engine's code is importable")
    p.add_argument("--json", type=Path, metavar="PATH", help=f"also write the table as JSON (schema {SCHEMA})")
    p.add_argument("--html", type=Path, metavar="PAGE",
                   help="also write the table and a plot of the laws as one self-contained HTML page")
    p.set_defaults(run=run)


@dataclass(frozen=True)
class Row:
    """An engine's row: its :class:`~simacc.contract.laws.Law`, the law shown (exact, or the
    shares its code drew), the mean length with its interval where sampled, where it came from."""

    law: object
    accepted: tuple
    mean: float | None
    interval: tuple | None
    source: str
    notes: tuple

    @property
    def sd(self):
        return laws.spread(self.accepted)[1]

    def step_mean_sd(self, batch):
        return laws.step_mean_sd(self.sd, self.law.engine.joint, batch)

    def to_json(self, batch):
        law = self.law
        return {"engine": law.engine.id, "title": law.engine.title, "section": law.engine.section,
                "unit": law.engine.unit, "setting": law.knob or None, "cannot": law.cannot or None,
                "accepted": list(self.accepted) or None, "mean_al": self.mean,
                "mean_al_interval": list(self.interval) if self.interval else None,
                "sd": self.sd if not law.cannot else None, "joint": law.engine.joint,
                "step_mean_sd": self.step_mean_sd(batch) if not law.cannot else None,
                "source": self.source, "notes": list(self.notes)}


def reference_row(law, batch, why_not=""):
    source = f"reference, CONTRACT.md {law.engine.section}" + (f" ({why_not})" if why_not else "")
    mean = None if law.cannot else law.mean
    return Row(law, law.accepted, mean, None, source, tuple(law.notes(batch)))


def sampled_row(law, batch, lengths, source, notes=()):
    """A row from ``lengths`` an engine's code drew: the shares of each, the mean with its
    interval, and whether they agree with the reference law (the CDF test)."""
    k = law.steps
    shares = tuple(lengths.count(a + 1) / len(lengths) for a in range(k + 1))
    interval = statistics.mean_interval(lengths, 1, k + 1)
    test = statistics.cdf_test(lengths, list(law.accepted))
    agreement = (f"agrees with the reference law (CDF test at {statistics.FALSE_ALARM:g})" if test.passed else
                 f"DIFFERS from the reference law: P(length <= {test.k})={test.observed:.4f}, but should be "
                 f"{test.expected:.4f} (band {test.low:.4f}..{test.high:.4f})")
    return Row(law, shares, math.fsum(lengths) / len(lengths), interval, source,
               (*notes, agreement, *law.notes(batch)))


def run_sglang(law, draws, progress):
    """``(lengths, source, notes)`` drawn by sglang's own sampler, or ``(None, why not, ())``."""
    method = "multinomial" if law.engine.id == "sglang-multinomial" else "match-expected"
    try:
        from sglang.srt.speculative.spec_utils import sample_simulated_acc_len
    except Exception as e:  # noqa: BLE001 - any import failure is a reason to fall back, said in the row
        return None, f"sglang not importable here: {type(e).__name__}: {e}".splitlines()[0], ()
    import torch

    progress(f"{law.engine.title}: sglang's sample_simulated_acc_len, {draws} draws")
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(0)  # the CPU's only: fork_rng(devices=[]) puts back no other
        lengths = [int(sample_simulated_acc_len(law.value, method, law.steps + 1)) for _ in range(draws)]
    return lengths, f"sglang {_version('sglang')}'s sample_simulated_acc_len, {draws} draws", ()


VLLM_BATCH = 64  # requests per call of vLLM's V2 sampler: the interpreter's cost grows faster past it


def run_vllm(law, draws, progress):
    """``(lengths, source, notes)`` from vLLM's own resolver, conversion and V2 sampler (each
    request ``K`` real drafts, greedy, its own seed), or ``(None, why not, ())``."""
    import torch

    from simacc.contract import vllm, vllm_glue

    why = vllm_glue.unavailable()
    if why:
        return None, why, ()
    progress(f"vLLM: its resolver, conversion and V2 sampler, {draws} requests")
    k = law.steps
    rates = vllm_glue.resolve_synthetic_rates(num_speculative_tokens=k, synthetic_acceptance_length=law.value)
    conditional = vllm_glue.conditional_rates(unconditional_rates=rates)
    lengths = []
    while len(lengths) < draws:
        size = min(VLLM_BATCH, draws - len(lengths))
        logits = size * (k + 1)
        _, num_sampled = vllm_glue.v2_synthetic_rejection_sample(
            target_logits=torch.zeros(logits, 8), draft_sampled=torch.ones(logits, dtype=torch.int64),
            cu_num_logits=torch.arange(0, logits + 1, k + 1), pos=torch.arange(logits) % (k + 1) + 16,
            temperature=torch.zeros(size), seed=torch.arange(len(lengths), len(lengths) + size),
            num_speculative_steps=k, synthetic_conditional_rates=conditional)
        lengths += num_sampled.tolist()
    reference = vllm.resolve_synthetic_rates(num_speculative_tokens=k, synthetic_acceptance_length=law.value)
    said = ("its resolver gives the reference's rates" if rates == reference else
            f"its resolver gives the rates {rates}, not the reference's {reference}")
    return lengths, f"vLLM {_version('vllm')}'s resolver, conversion and V2 sampler, {draws} requests", (said,)


OWN_CODE = {"sglang": run_sglang, "sglang-multinomial": run_sglang, "vllm": run_vllm}  # engines simacc can run


def rows(length, steps, batch, draws, references=False, progress=lambda line: None):
    """Every engine's :class:`Row`; the engines' own code runs unless ``references``."""
    table = []
    for engine in laws.ENGINES.values():
        law = laws.law(engine.id, length, steps)
        own = None if references or law.cannot else OWN_CODE.get(engine.id)
        if own is None:
            table.append(reference_row(law, batch))
            continue
        lengths, said, notes = own(law, draws, progress)  # said: where the lengths came from, or why none
        table.append(reference_row(law, batch, said) if lengths is None else
                     sampled_row(law, batch, lengths, said, notes))
    return table


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _share(p):
    return "0" if p == 0 else "1" if p == 1 else f"{p:.3f}"


def _mean(row):
    if row.interval is None:
        return f"{row.mean:.6g}"
    return f"{row.mean:.4f} [{row.interval[0]:.3f}, {row.interval[1]:.3f}]"


def render(table, length, steps, batch):
    """The text table: what to set and the mean it delivers; each law; the notes."""
    width = max(len(r.law.engine.title) for r in table)
    settings = max(len(r.law.knob) for r in table)
    lines = [f"AL {length:g} (accepted drafts + 1) asked of each engine, K = {steps} drafts per step, "
             f"{batch} requests per step", "",
             f"  {'engine':<{width}}  {'setting (its unit)':<{settings}}  delivers AL"]
    for r in table:
        if r.law.cannot:
            lines.append(f"  {r.law.engine.title:<{width}}  cannot: {r.law.cannot}")
        else:
            lines.append(f"  {r.law.engine.title:<{width}}  {r.law.knob:<{settings}}  {_mean(r)}")
    cells = "".join(f"{a:>6}" for a in range(steps + 1))
    lines += ["", f"  {'engine':<{width}}  P(accepted = {cells[1:]})      sd  a step's requests  sd of a step's mean"]
    for r in table:
        if r.law.cannot:
            continue
        shares = "".join(f"{_share(p):>6}" for p in r.accepted)
        lines.append(f"  {r.law.engine.title:<{width}}  {' ' * 13}{shares[1:]}  {r.sd:6.3f}  "
                     f"{laws.JOINT[r.law.engine.joint]:<17}  {r.step_mean_sd(batch):.3f}")
    lines += ["", "notes:"]
    for r in table:
        lines.append(f"  {r.law.engine.title}: " + "; ".join((r.source, *r.notes)))
    return "\n".join(lines)


def to_json(table, length, steps, batch, draws):
    return {"schema": SCHEMA, "length": length, "steps": steps, "batch": batch, "draws": draws,
            "false_alarm": statistics.FALSE_ALARM, "rows": [r.to_json(batch) for r in table]}


def run(args):
    said = arguments.check_folders("laws", args.json, args.html)
    if said:
        print(f"{said}; try 'simacc laws --help'", file=sys.stderr)
        return Exit.USAGE
    table = rows(args.length, args.steps, args.batch, args.draws, args.references,
                 progress=lambda line: print(line, file=sys.stderr, flush=True))
    text = render(table, args.length, args.steps, args.batch)
    print(text)
    try:
        if args.json is not None:
            data = to_json(table, args.length, args.steps, args.batch, args.draws)
            write_atomically(args.json, json.dumps(data, indent=2) + "\n")
        if args.html is not None:
            from simacc.commands.serving import law_pages

            write_atomically(args.html, law_pages.laws_page(table, args.length, args.steps, args.batch, text))
    except OSError as e:
        print(f"simacc laws: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return Exit.USAGE
    return Exit.OK
