"""``simacc mutants``: run the property suite against every implementation of the zoo
and print which properties killed each mutant (:mod:`simacc.commands.checking.zoo_runs` runs
and judges them). Exit 1 if any mutant survives or any correct implementation is rejected, 5 if
no entry could run here.

Run as a program, the command works in a child process under a supervisor
(:func:`simacc.commands.supervised.supervised`): its exit status is the one the child reports
once every entry is judged, so an entry that ends its process (or a worker that dies) is a
failure, never a success.
"""

import difflib
import os
import sys

from simacc.commands.checking.zoo_runs import (ACCEPTED, DEFAULT_WORKERS, KILLED, NOT_RUN, NOTHING_RAN, REJECTED,
                                               SURVIVED, ZooError, run_zoo)


def render(zoo):
    """The kill table, then notes on expected killers that missed, then a summary."""
    rows = zoo.rows
    name_w = max(len("implementation"), *(len(r.name) for r in rows))
    contract_w = max(10, *(len(r.contract) for r in rows))  # vLLM's names are longer than sglang's
    lines = [f"{'implementation':<{name_w}}  {'contract':<{contract_w}}  {'verdict':<8}  {'examples':>8}  "
             f"{'shrunk':<10}  bug / killed by"]
    for r in rows:
        examples = "-" if r.median_examples is None else f"{r.median_examples:g}"
        lines.append(f"{r.name:<{name_w}}  {r.contract:<{contract_w}}  {r.verdict:<8}  {examples:>8}  {r.shrunk:<10}  "
                     f"{r.bug}")
        if r.killed_by:
            label = "FAILED" if r.verdict == REJECTED else "killed by"
            lines.append(f"{'':<{name_w + contract_w + 36}}{label}: {', '.join(r.killed_by)}")
    notes = [f"note: {r.name}: expected killer(s) {', '.join(r.missed)} did not fail in every seed"
             for r in rows if r.missed and r.verdict == KILLED]
    counts = {v: sum(r.verdict == v for r in rows) for v in (KILLED, SURVIVED, ACCEPTED, REJECTED, NOT_RUN)}
    h = zoo.header
    seeds = "derandomized" if h["seeds"] == [None] else f"seeds {h['seeds'][0]}..{h['seeds'][-1]}"
    summary = (f"{counts[KILLED]} killed, {counts[SURVIVED]} survived, {counts[ACCEPTED]} accepted, "
               f"{counts[REJECTED]} rejected, {counts[NOT_RUN]} not run (no device here); profile {h['profile']}, "
               f"{seeds}, {'expected killers only' if h['expected_only'] else 'full suite'}, "
               f"{h['wall_s']:g} s (exit {zoo.exit_code})")
    return "\n".join([*lines, *notes, "", summary])


def register(subparsers):
    from simacc.harness.config import settings as opts

    p = subparsers.add_parser(
        "mutants",
        help="run the suite against the mutant zoo and the correct alternatives",
        description="Check every mutant (one realistic mistake each) and every correct alternative "
        "implementation of simacc.zoo with the property suite. Exit 0 when every mutant is killed and "
        "every correct implementation accepted, 1 otherwise, 2 on a usage error, 5 when no entry could "
        "run here (e.g. only CUDA entries without CUDA).",
    )
    p.add_argument("--json", metavar="PATH", help="also write the table as JSON (schema simacc.mutants/1)")
    p.add_argument("--seeds", type=opts.argtype(opts.positive_int), default=1, metavar="N",
                   help="run every entry under seeds 1..N (default 1: the current profile, derandomized under CI=true)")
    p.add_argument("--max-examples", type=opts.argtype(opts.positive_int), metavar="N",
                   help="examples per property (default: the profile's)")
    p.add_argument("-n", dest="workers", type=opts.argtype(opts.workers), default=str(DEFAULT_WORKERS), metavar="WORKERS",
                   help=f"entries checked at a time, each in a worker process (default {DEFAULT_WORKERS}; 0: in this process)")
    p.add_argument("--profile", dest="profile", type=opts.argtype(opts.OPTIONS["profile"].parse), metavar="NAME",
                   help="simacc's Hypothesis profile (default ci when CI is set, else default; default with --seeds > 1)")
    p.add_argument("--device", type=opts.argtype(opts.OPTIONS["device"].parse), default="cpu",
                   help="devices for the entries whose mistake shows anywhere (default cpu; "
                   "entries whose mistake only shows on CUDA always run on cuda)")
    p.add_argument("--expected-only", action="store_true",
                   help="run each mutant only through the properties expected to kill it (fast; CI's choice)")
    p.add_argument("--only", action="append", metavar="NAME", help="check only this entry (repeatable)")
    p.set_defaults(run=run)
    from simacc.commands.supervised import supervise_command

    supervise_command(p)


def run(args):
    from simacc import zoo as zoo_module
    from simacc.commands.checking.conformance import write_json

    entries = list(zoo_module.ENTRIES.values())
    if args.only:
        unknown = sorted(set(args.only) - set(zoo_module.ENTRIES))
        if unknown:
            names = sorted(zoo_module.ENTRIES)
            near = [m for name in unknown for m in difflib.get_close_matches(name, names, n=3, cutoff=0.6)]
            hint = f"did you mean {' or '.join(dict.fromkeys(near))}? " if near else ""
            print(f"simacc mutants: error: no zoo entry named {', '.join(map(repr, unknown))}; {hint}"
                  f"the entries are {', '.join(names)}", file=sys.stderr)
            return 2
        entries = [e for e in entries if e.name in args.only]
    workers = os.cpu_count() if args.workers == "auto" else int(args.workers)
    try:
        result = run_zoo(entries, seeds=args.seeds, max_examples=args.max_examples, workers=workers,
                         device=args.device, expected_only=args.expected_only, profile=args.profile)
    except ZooError as e:
        print(f"simacc mutants: error: {e}", file=sys.stderr)
        return 1
    print(render(result))
    if result.exit_code == NOTHING_RAN:
        print("simacc mutants: nothing ran: every selected entry needs a device missing here", file=sys.stderr)
    if args.json:
        write_json(result, args.json)
    return result.exit_code
