"""``simacc repro``: replay a repro file's case, show where the outputs differ from the
contract's reference, or promote the case to the project's regression corpus; or clean the
repro folder (``--prune``, ``--keep N``, :mod:`simacc.commands.checking.prune`).

Replaying calls the property's own body with the recorded case, in the grad mode it was
found in, so a replay checks exactly what the suite checked; a serving-loop failure's file
holds a program, which replays step by step. The device is an argument, not part of the
case: a case found on CUDA replays on a CPU.

A repro file is data, never code (``docs/trust.md``): it is read only if it is a regular
file, at most its size limit, and every field is checked against the contract; and the
implementation it names is imported only when the user says so, with ``--impl`` or
``--trust-recorded-impl`` (a file from a CI artifact could name any module). Run as a
program, the replay happens in a child process under a supervisor, so an implementation
that ends its process cannot make a replay pass.

Nothing checked is never success: a replay that cannot happen here (the device
asked for is missing, or the recorded one is and ``--no-fallback`` forbids cpu) exits 5,
pytest's "nothing ran", never 0.
"""

import argparse
import dataclasses
import functools
import inspect
import os
import shlex
import sys

from simacc.commands.checking import prune
from simacc.commands.exits import Exit, SessionError
from simacc.commands.supervised import supervise_command
from simacc.harness.config import contracts, devices
from simacc.harness.config import settings as opts
from simacc.harness.judging import distributions
from simacc.harness.processes.stream import clip

MAX_LINE = 2000  # characters of a failure's message shown on its line

USAGE = """simacc repro PATH (--impl IMPL | --trust-recorded-impl) [--device DEVICE] [--no-fallback] [--promote] [...]
       simacc repro --database URL --impl IMPL [--database-readonly] [--device DEVICE] [...]
       simacc repro --prune (--impl IMPL | --trust-recorded-impl) [--keep N] [--repro-dir DIR] [--remove-unreadable] [...]
       simacc repro --keep N [--repro-dir DIR] [--remove-unreadable]"""
DESCRIPTION = """\
Replay the case in a repro file against an implementation and show, element by
element, where its outputs differ from the contract's reference. Or clean the repro
folder: --keep N removes all but the newest N files, --prune replays every file left
and removes those whose case passes now. Each file gets one line (kept, removed or
unreadable), then a summary; an unreadable file is removed only with --remove-unreadable.

A case replays against --impl, or, with --trust-recorded-impl, against the implementation
recorded in its file: replaying imports it, and a file from elsewhere could name any module,
so it is never imported unasked (without either, the file's implementation is printed and
nothing runs). It replays on the device recorded (or --device). A case recorded on a CUDA
device that is missing here replays on cpu, with a note, unless --no-fallback; a --device
that is missing is never replaced. A CPU/CUDA parity case replays only on a CUDA device.

Only regular files are read, each up to the size limit, and every field must fit the
contract: a case no reference could run is unusable (exit 2; --prune --remove-unreadable
removes it).

With --database (or SIMACC_DATABASE) and no PATH: replay the example database's examples
against --impl, and nothing else (no example is generated; a property the database holds
nothing of is skipped), and print the verdict as simacc check does, with its exit codes.
Without --database-readonly, Hypothesis deletes the examples that pass now."""
EPILOG = """\
exit codes (PATH):
  0  the case passes
  1  the case still fails
  1  also: the implementation ended the process doing the replay (or hung past its limit)
  2  the file is unusable (unreadable, invalid, its implementation missing here, not
     for --impl's contract), or neither --impl nor --trust-recorded-impl says what to
     run, or the arguments are wrong
  5  nothing replayed: the --device asked for is missing here, or the recorded one is
     and --no-fallback forbids cpu, or a CPU/CUDA parity case has no CUDA device
exit codes (--prune, --keep): the first that applies over all the files
  2  a file is left unreadable or unusable (or cannot be removed), or wrong arguments
  1  a case still fails
  5  a case could not be replayed here (its file is kept)
  0  none of these: every case replayed passed (its file removed), or nothing to do"""


def register(subparsers):
    p = subparsers.add_parser(
        "repro",
        help="replay a failing case from its repro file, promote it, or clean the repro folder",
        usage=USAGE, description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", nargs="?", metavar="PATH", help="a repro file (written by a failing property)")
    replay = p.add_argument_group("replaying (PATH, or each file with --prune)")
    replay.add_argument("--impl", default=None, help="implementation to replay against")
    replay.add_argument("--trust-recorded-impl", action="store_true",
                        help="replay against the implementation the file names (importing it runs its code)")
    replay.add_argument("--contract", default=None, type=opts.argtype(_contract_name), metavar="NAME",
                        help="force the implementation's contract, by name (docs/contracts.md lists them)")
    replay.add_argument("--device", default=None, type=opts.argtype(opts.one_device), help="device to replay on "
                        "(default: the recorded one); exit 5 if it is missing here")
    replay.add_argument("--no-fallback", dest="fallback", action="store_false", help="exit 5 (--prune: keep the file) instead of "
                        "replaying on cpu when the recorded device is missing here")
    opts.add_arguments(replay, ("timeout", "fixed_token_id"))
    one = p.add_argument_group("promoting (PATH)")
    one.add_argument("--promote", action="store_true", help="also add the case to this project's regression corpus "
                     "(it must pass against the reference)")
    opts.add_arguments(one, ("corpus",))
    folder = p.add_argument_group("cleaning the repro folder")
    folder.add_argument("--prune", action="store_true", help="replay every repro file in the folder; remove those that pass now")
    folder.add_argument("--keep", type=opts.argtype(opts.positive_int), default=None, metavar="N",
                        help="first remove all but the newest N files (the most recently found), without replaying them")
    opts.add_arguments(folder, ("repro_dir",))
    folder.add_argument("--remove-unreadable", action="store_true", help="also remove files that are unreadable or invalid")
    database = p.add_argument_group("replaying an example database (no PATH)")
    opts.add_arguments(database, ("database", "database_readonly"))
    p.set_defaults(run=run)
    supervise_command(p)


def run(args):
    cleaning = args.prune or args.keep is not None
    problem = _usage_problem(args, cleaning)
    if problem:
        print(f"simacc repro: error: {problem}; try 'simacc repro --help'", file=sys.stderr)
        return Exit.USAGE
    if not cleaning and not args.path:
        return _replay_database(args)
    try:
        args.settings = opts.resolve(opts.given(args, ("timeout", "fixed_token_id", "corpus", "repro_dir")),
                                     parse={"contract": _contract_name})
    except opts.SettingsError as e:
        print(f"simacc repro: error: {e}; try 'simacc repro --help'", file=sys.stderr)
        return Exit.USAGE
    return _clean(args) if cleaning else _replay_file(args)


def _usage_problem(args, cleaning):
    """What is wrong with the combination of arguments, or None."""
    if cleaning and args.path:
        return "give a repro file PATH or --prune/--keep, not both"
    if cleaning and args.promote:
        return "--promote goes with a repro file PATH"
    if args.simacc_database and (args.path or cleaning):
        return "--database replays an example database against --impl, not with a repro file or --prune/--keep"
    if not cleaning and not args.path and not (args.simacc_database or os.environ.get("SIMACC_DATABASE")):
        return ("give a repro file PATH, or --prune/--keep N to clean the repro folder, or --database URL "
                "--impl IMPL to replay an example database")
    if not cleaning and not args.path and (args.promote or not args.impl):
        return "replaying an example database needs --impl IMPL (and takes no --promote)"
    if not cleaning and (args.simacc_repro_dir or args.remove_unreadable):
        return "--repro-dir and --remove-unreadable go with --prune or --keep"
    if args.impl and args.trust_recorded_impl:
        return "give --impl IMPL or --trust-recorded-impl, not both"
    return None


class NotReplayed(Exception):
    """Why a case is not replayed here (one line), with the exit code that says so."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code = code


def _plan(record, prop, args):
    """The implementation and device to replay ``record`` (of property ``prop``) with, and a
    note when falling back from the recorded device; :class:`NotReplayed` when it cannot be
    replayed here. Nothing is imported before the device is known to be here."""
    from simacc import properties
    from simacc.harness.call import impl as impls

    device, note = _device(args.device, record.device, args.fallback)
    if prop.across_devices and not devices.is_cuda(device):
        missing = devices.unavailable("cuda")  # replaying on cpu would compare cpu with itself
        raise NotReplayed(Exit.NOTHING_CHECKED, f"{prop.id} compares CUDA with CPU, and "
                          + ("CUDA is not available here" if missing else f"{device} is not a CUDA device"))
    spec = args.impl or (record.impl if args.trust_recorded_impl else None)
    if spec is None:  # the file names it, and a file is data: importing what it names needs a yes
        raise NotReplayed(Exit.USAGE, f"the file was recorded with {shlex.quote(record.impl)}, which is not imported "
                          f"unasked: pass --impl {shlex.quote(record.impl)} if you trust it (or --trust-recorded-impl), "
                          "or --impl another one")
    try:
        chosen = impls.load(spec, properties.CONTRACTS, args.contract, record.level, args.settings.fixed_token_id)
    except impls.ImplError as e:
        hint = "" if args.impl else " (the implementation recorded in the file; pass --impl)"
        raise NotReplayed(Exit.USAGE, f"{e}{hint}") from None
    if not prop.applies_to_case(chosen.record, record.case):
        fits = [c for c in properties.CONTRACTS if prop.applies_to_case(c, record.case)]
        ours = chosen.record
        case = (f"a case whose {fits[0].variant} is {record.case.variant}, for {', '.join(c.name for c in fits)}"
                if fits else "a case for no contract")
        raise NotReplayed(Exit.USAGE, f"not applicable: {chosen.spec} follows contract {ours.name!r} ({ours.variant} "
                          f"{', '.join(ours.variants)}), and this is {case}")
    return chosen, device, note


def _device(asked, recorded, fallback):
    """The device to replay on, and a note when it is cpu instead of the recorded one."""
    if asked is not None:
        missing = devices.unavailable(asked)
        if missing:
            raise NotReplayed(Exit.NOTHING_CHECKED, f"--device {asked}, but {missing}")
        return asked, None
    missing = devices.unavailable(recorded)
    if not missing:
        return recorded, None
    if not fallback:
        raise NotReplayed(Exit.NOTHING_CHECKED, f"recorded on {recorded}, but {missing} (and --no-fallback)")
    return "cpu", f"recorded on {recorded}; {missing}, so replaying on cpu"


def _contract_name(text):
    from simacc.commands.checking import conformance

    return conformance.contract_name(text)


def read(path):
    """``(record, property)`` of the repro file at ``path``; :class:`ReproError` if unusable."""
    from simacc import properties
    from simacc.harness.model import repro_files

    record = repro_files.load(path, properties.CONTRACTS)
    return record, properties.of_repro(record)


def one_line(error):
    """``Type: message`` of a replay's error: its first line, cut to :data:`MAX_LINE`."""
    text = str(error).strip()
    return clip(f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": "), MAX_LINE)


def _replayed(prop, runner, case):
    """``prop.replay`` on ``case``, then the check that the harness is as it was."""
    from simacc.harness.call import tamper

    error = prop.replay(runner, case)
    try:
        tamper.check(full=True, when="during the replay")
    except tamper.HarnessModified as e:
        error = error or e
    return error


def _replay_file(args):
    from simacc.harness.call.runner import HarnessModified, ImplementationHung, Runner
    from simacc.harness.model.repro_files import ReproError

    try:
        record, prop = read(args.path)
    except ReproError as e:
        print(f"simacc repro: {args.path}: {e}", file=sys.stderr)
        return Exit.USAGE
    try:
        chosen, device, note = _plan(record, prop, args)
    except NotReplayed as e:
        print(f"simacc repro: {e}", file=sys.stderr)
        return e.code
    if note:
        print(f"note: {note}")
    from simacc.harness.model import explain

    timeout = args.settings.timeout
    print(f"property  {prop.id} ({prop.module}): {prop.summary}")
    fixed = contracts.fixed_id_text(chosen.record.writes_a_fixed_id, chosen.fixed_token_id).replace(";", ",")
    print(f"impl      {chosen.spec} (contract {chosen.contract}{fixed}) on {device}"
          + ("" if device == record.device else f" (recorded on {record.device})")
          + (f", under {record.context}" if record.context else ""))
    if prop.machine:
        print("program   " + "\n".join(record.case.lines()))
    else:
        print(f"case={explain.case_text(record.case)}")  # the case once, with its values; the messages below omit it
    with Runner(chosen, device, timeout, context=record.context) as runner:
        error = _replayed(prop, runner, record.case)
        if error is None:
            print(f"pass: {prop.id} holds for this case")
        else:
            print(f"FAIL: {clip(_claim(error), MAX_LINE)}")
            shown = distributions.carried(error)
            if shown is not None:
                print("\n".join(f"  {line}" for line in shown.chart()))
            if prop.machine:
                print("(a program: the message names the step that failed, whose outputs it compares)")
            elif not isinstance(error, (ImplementationHung, HarnessModified)):  # calling it again would do it again
                _show_differences(runner, record.case)
        if runner.output:
            print(f"output of the implementation:\n{runner.output}")
    code = Exit.OK if error is None else Exit.FAILED
    if args.promote:
        return promote(record, prop, args.settings.corpus, timeout) or code
    return code


def _claim(error):
    """What a failure says in its first line (the case is printed once above, the values in the
    diff below), the exception type only where it is not a property's own assertion."""
    from simacc.harness.call.runner import ImplementationFailed, ImplementationHung

    text = (str(error).strip().splitlines() or [""])[0]  # the values and the case follow as the diff and above
    own = type(error) in (AssertionError, ImplementationFailed, ImplementationHung)
    return text if own and text else f"{type(error).__name__}: {text}".rstrip(": ")


def _show_differences(runner, case):
    from simacc.harness.call import impl as impls
    from simacc.harness.call.runner import Runner

    if runner.impl.level != "exact":
        print("(checked at the semantic level: the reference draws its own random numbers, so no element-by-element "
              "diff)")
        return
    reference = _writing(impls.reference(runner.impl.record), runner.impl.fixed_token_id)
    print(f"where {runner.impl.spec} differs from the reference {reference.spec}:")
    with Runner(reference, runner.device, runner.timeout, context=runner.context) as by_reference:
        expected = by_reference.attempt(case)
    produced = runner.attempt(case)
    from simacc.commands.checking.differences import differences

    for line in differences(expected, produced):
        print(f"  {line}")


def _writing(reference, fixed_token_id):
    """``reference`` writing ``fixed_token_id`` in fixed mode, where its signature takes one
    (eagle, DFLASH); the others write the default, ``SGLANG_SIMULATE_ACC_TOKEN_ID``'s."""
    if fixed_token_id == reference.fixed_token_id or "fixed_token_id" not in inspect.signature(reference.fn).parameters:
        return reference
    return dataclasses.replace(reference, fn=functools.partial(reference.fn, fixed_token_id=fixed_token_id),
                               fixed_token_id=fixed_token_id)


def _replay_database(args):
    """Check ``--impl`` with the ``replay`` profile: the database's examples, nothing else."""
    from simacc.commands.checking import conformance, verdict

    given = {"impl": args.impl, "contract": args.contract, "device": args.device, "profile": "replay",
             **opts.given(args, ("timeout", "corpus", "database", "database_readonly"))}
    try:
        result = conformance.run_check(given)
    except (conformance.UsageError, opts.SettingsError) as e:
        print(f"simacc repro: error: {e}", file=sys.stderr)
        return Exit.USAGE
    except SessionError as e:
        print(f"simacc repro: error: {e}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr)
        return Exit.USAGE
    print(verdict.render(result))
    return Exit.INTERRUPTED if result.interrupted else result.exit_code


def _clean(args):
    directory = args.settings.repro_dir
    named = args.simacc_repro_dir or os.environ.get("SIMACC_REPRO_DIR")
    if named and not directory.is_dir():  # a mistyped folder must not look clean
        print(f"simacc repro: repro folder {directory} does not exist", file=sys.stderr)
        return Exit.USAGE
    replay = _replayer(args) if args.prune else None
    return prune.clean(directory, read, replay, keep=args.keep, remove_unreadable=args.remove_unreadable)


def _replayer(args):
    """``replay(record, prop) -> (exit code, reason)`` for --prune: like a replay of one file, quietly."""
    from simacc.harness.call.runner import Runner

    def replay(record, prop):
        try:
            chosen, device, note = _plan(record, prop, args)
        except NotReplayed as e:
            return e.code, f"not replayed: {e}"
        with Runner(chosen, device, args.settings.timeout, context=record.context) as runner:
            error = _replayed(prop, runner, record.case)
        where = f"{chosen.spec} on {device}" + (f"; {note}" if note else "")
        if error is None:
            return Exit.OK, f"passes now ({where})"
        return Exit.FAILED, f"still fails ({where}): {one_line(error)}"

    return replay


def promote(record, prop, corpus, timeout):
    """Copy ``record`` into this project's ``corpus`` as ``<property>-<hash>.json`` (the folder
    made on first use) once the reference passes it; None on success, 1 when the reference
    fails it too. Normalised: the file names the reference and cpu (a plain replay of it
    passes), and its message says what it caught."""
    from simacc import strategies as sx
    from simacc.harness.call import impl as impls
    from simacc.harness.call.runner import Runner
    from simacc.harness.model.repro_files import MAX_MESSAGE, dumps
    from simacc.harness.processes.atomic import write_atomically

    reference = impls.reference(sx.contract(record.contract), record.level)
    with Runner(reference, "cpu", timeout, context=record.context) as runner:
        error = prop.replay(runner, record.case)
    if error is not None:
        print(f"not promoted: the reference {reference.spec} fails this case too ({one_line(error)})")
        return Exit.FAILED
    corpus.mkdir(parents=True, exist_ok=True)
    path = corpus / f"{record.property}-{record.digest()}.json"
    if path.exists():
        print(f"already in the regression corpus: {path}")
        return None
    found = f"found with {record.impl} on {record.device}: {record.message}"
    normal = dataclasses.replace(record, impl=reference.spec, device="cpu", message=found[:MAX_MESSAGE])
    write_atomically(path, dumps(normal))
    print(f"promoted to {path}; commit it, and the suite replays it before any random case")
    return None
