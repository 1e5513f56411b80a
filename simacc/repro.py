"""``simacc repro``: replay a repro file's case, show where the outputs differ from the
contract's reference, or promote the case to the regression corpus (issue #5).

Replaying calls the property's own body with the recorded case, so a replay checks exactly
what the suite checked. The device is an argument, not part of the case: a case found on
CUDA replays on a CPU. Replaying without ``--impl`` imports the implementation the file
names; look at that line first when the file came from elsewhere.
"""

import dataclasses
import sys
from pathlib import Path

import torch

from simacc import argtypes
from simacc.impl import CONTRACTS
from simacc.reprofile import MAX_MESSAGE, ReproError, corpus_dir, dumps, load, write_atomically


def register(subparsers):
    p = subparsers.add_parser(
        "repro",
        help="replay a failing case from its repro file (or promote it to the regression corpus)",
        description="Replay the case in a repro file against an implementation and show, "
        "element by element, where its outputs differ from the contract's reference. "
        "Exit 0 if the property now holds, 1 if it still fails, 2 for an invalid file.",
    )
    p.add_argument("path", metavar="PATH", help="a repro file (written by a failing property)")
    p.add_argument("--impl", default=None, help="implementation to replay against (default: the one recorded in the file)")
    p.add_argument("--contract", default=None, choices=CONTRACTS, help="force the implementation's contract")
    p.add_argument("--device", default=None, type=argtypes.one_device, help="device to replay on (default: the recorded one; "
                   "a case recorded on cuda replays on cpu where CUDA is missing)")
    p.add_argument("--timeout", type=argtypes.positive_seconds, default=None, help="per-call time limit in seconds (default 30)")
    p.add_argument("--promote", action="store_true", help="also add the case to the regression corpus (it must pass against the reference)")
    p.add_argument("--corpus", default=None, help="regression corpus folder (default: properties/regressions; env SIMACC_REGRESSIONS)")
    p.set_defaults(run=run)


def run(args):
    from simacc import impl as impls
    from simacc.observe import DEFAULT_TIMEOUT, ImplementationHung, Runner

    try:
        record = load(args.path)
    except ReproError as e:
        print(f"simacc repro: {args.path}: {e}", file=sys.stderr)
        return 2
    try:
        chosen = impls.load(args.impl or record.impl, args.contract)
    except impls.ImplError as e:
        hint = "" if args.impl else " (the implementation recorded in the file; pass --impl)"
        print(f"simacc repro: {e}{hint}", file=sys.stderr)
        return 2
    if not record.applies_to(chosen.contract):
        print(f"simacc repro: not applicable: {chosen.spec} follows contract {chosen.contract!r}, "
              f"this case is for {', '.join(c for c in CONTRACTS if record.applies_to(c))}", file=sys.stderr)
        return 2
    device = _device(args.device, record.device)
    if device is None:
        return 2
    if record.property.across_devices and not torch.cuda.is_available():
        print(f"simacc repro: {record.property.id} compares CUDA with CPU, and CUDA is not available here", file=sys.stderr)
        return 2
    timeout = args.timeout or DEFAULT_TIMEOUT
    runner = Runner(chosen, timeout)
    print(f"property  {record.property.id} ({record.property.module})")
    print(f"case      {record.case.summary()}")
    print(f"impl      {chosen.spec} (contract {chosen.contract}) on {device}"
          + ("" if device == record.device else f" (recorded on {record.device})"))
    error = record.property.replay(runner, device, record.case)
    if error is None:
        print(f"pass: {record.property.id} holds for this case")
    else:
        print(f"FAIL: {type(error).__name__}: {error}".splitlines()[0])
        if not isinstance(error, ImplementationHung):  # calling it again would hang again
            reference = impls.reference(chosen.contract)
            print(f"where {chosen.spec} differs from the reference {reference.spec}:")
            expected = Runner(reference, timeout).attempt(record.case, device)
            produced = runner.attempt(record.case, device)
            for line in differences(expected, produced):
                print(f"  {line}")
    code = 0 if error is None else 1
    if args.promote:
        return promote(record, Path(args.corpus) if args.corpus else corpus_dir(), timeout) or code
    return code


def _device(asked, recorded):
    """The device to replay on, or None (after saying why) when it cannot be had."""
    from simacc import devices

    if asked is not None:
        missing = devices.unavailable(asked)
        if missing:
            print(f"simacc repro: --device {asked}, but {missing}", file=sys.stderr)
            return None
        return asked
    missing = devices.unavailable(recorded)
    if missing:
        print(f"note: recorded on {recorded}; {missing}, so replaying on cpu")
        return "cpu"
    return recorded


# -- showing where the outputs differ ------------------------------------------------------

MAX_LISTED = 20


def _tensor_diff(name, expected, produced):
    if not isinstance(expected, torch.Tensor) or not isinstance(produced, torch.Tensor):
        if type(expected) is type(produced) and not isinstance(expected, torch.Tensor) and expected == produced:
            return []
        return [f"{name}: expected {_short(expected)}, produced {_short(produced)}"]
    lines = []
    for attr in ("dtype", "device"):
        if getattr(expected, attr) != getattr(produced, attr):
            lines.append(f"{name}.{attr}: expected {getattr(expected, attr)}, produced {getattr(produced, attr)}")
    if expected.shape != produced.shape:
        return lines + [f"{name}.shape: expected {tuple(expected.shape)}, produced {tuple(produced.shape)}"]
    e, p = expected.cpu(), produced.cpu()
    wrong = (e != p) & ~(e.isnan() & p.isnan()) if e.is_floating_point() else e != p
    where = wrong.nonzero().tolist()
    if where:
        lines.append(f"{name}: {len(where)} of {e.numel()} elements differ")
        if e.numel() <= 16:
            lines.append(f"  expected {e.tolist()}, produced {p.tolist()}")
        for index in where[:MAX_LISTED]:
            at = ", ".join(map(str, index))
            lines.append(f"  {name}[{at}]: expected {e[tuple(index)].item()}, produced {p[tuple(index)].item()}")
        if len(where) > MAX_LISTED:
            lines.append(f"  ... and {len(where) - MAX_LISTED} more")
    return lines


def _short(x):
    if isinstance(x, torch.Tensor):
        return f"Tensor[size={tuple(x.shape)}, dtype={str(x.dtype)[6:]}]"
    return repr(x)[:200]


def differences(expected, produced):
    """Lines saying where ``produced`` (an :class:`~simacc.observe.Outcome`) differs from
    ``expected``: errors, the return value, every tensor argument after the call, and the
    generator state."""
    if expected.error is not None or produced.error is not None:
        said = lambda o: "returned" if o.error is None else f"raised {type(o.error).__name__}: {o.error}"  # noqa: E731
        if type(expected.error) is not type(produced.error):
            return [f"the reference {said(expected)}; the implementation {said(produced)}".splitlines()[0]]
    lines = _tensor_diff("returned", expected.returned, produced.returned)
    same = []
    for name, value in expected.args.items():
        found = _tensor_diff(name, value, produced.args[name])
        lines += found
        if not found and isinstance(value, torch.Tensor):
            same.append(name)
    if not torch.equal(expected.rng_after, produced.rng_after):
        lines.append("CPU generator state after the call differs (not the documented draws)")
    if not lines:
        lines.append("every output equals the reference's; the property checks more than values (see FAIL)")
    if same:
        lines.append(f"equal to the reference: {', '.join(same)}")
    return lines


def promote(record, corpus, timeout):
    """Copy ``record`` into ``corpus`` as ``<property>-<hash>.json`` once the reference passes
    it; None on success, 1 when the reference fails it too. Normalised: the file names the
    reference and cpu (a plain replay of it passes), and its message says what it caught."""
    from simacc import impl as impls
    from simacc.observe import Runner

    reference = impls.reference(record.contract)
    error = record.property.replay(Runner(reference, timeout), "cpu", record.case)
    if error is not None:
        print(f"not promoted: the reference {reference.spec} fails this case too "
              f"({type(error).__name__}: {error})".splitlines()[0])
        return 1
    corpus.mkdir(parents=True, exist_ok=True)
    path = corpus / f"{record.property.id}-{record.digest()}.json"
    if path.exists():
        print(f"already in the regression corpus: {path}")
        return None
    found = f"found with {record.impl} on {record.device}: {record.message}"
    normal = dataclasses.replace(record, impl=reference.spec, device="cpu", message=found[:MAX_MESSAGE])
    write_atomically(path, dumps(normal))
    print(f"promoted to {path}; commit it, and the suite replays it before any random case")
    return None
