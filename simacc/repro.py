"""Repro files: one failing case as JSON, and ``simacc repro`` to replay or promote it (issue #5).

A repro file is plain JSON (never pickle or ``torch.load``: a file from a CI artifact must
not be able to run code by being read). It holds the property id, the contract, the
implementation and device it failed on, the failure message, and the case: every tensor's
values (flat, row-major), shape, dtype and layout, the scalar arguments and the generator
seed. Reading one validates everything before any tensor is built, so a corrupt, truncated,
foreign or hostile file is refused with one line naming the problem (exit 2).

Replaying calls the property's own body (``fn.hypothesis.inner_test``) with the recorded
case, so a replay checks exactly what the suite checked. The device is an argument, not part
of the case: a case found on CUDA replays on a CPU. Replaying without ``--impl`` imports the
implementation the file names; look at that line first when the file came from elsewhere.
"""

import dataclasses
import hashlib
import importlib
import inspect
import json
import math
import os
import pkgutil
import re
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import torch

from simacc import argtypes
from simacc.cases import CASE_TYPES, DTYPES, LAYOUTS, DflashCase, EagleCase, TensorArg
from simacc.impl import CONTRACTS

SCHEMA = "simacc-repro/1"
MAX_BYTES = 256 * 2**20
MAX_ELEMENTS = 10**7  # over all tensors of a case; the generated ones are far smaller
MAX_NDIM = 4
MAX_MESSAGE = 4000
KEYS = ("schema", "property", "module", "contract", "impl", "device", "message", "case")
TENSOR_KEYS = ("dtype", "shape", "layout", "values")
DEVICES = ("cpu", "cuda")
NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_INT_RANGE = {torch.int32: (-(2**31), 2**31 - 1), torch.int64: (-(2**63), 2**63 - 1)}
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
_ID = re.compile(r"[a-z0-9_]{1,200}")


class ReproError(Exception):
    """An unreadable or invalid repro file; the message is one line."""


@dataclass(frozen=True)
class Property:
    """A property of the catalogue: its id, module, Hypothesis-wrapped test and contracts."""

    id: str
    module: str
    test: object
    contracts: tuple

    @property
    def takes_device(self):
        """False for a property that spans devices itself (CPU/CUDA parity)."""
        return "device" in _parameters(self.test)

    def replay(self, runner, device, case):
        """Run the property's body on ``case``; the exception it raised, or None."""
        from simacc.observe import ImplementationHung

        kwargs = {"impl": runner, "case": case} | ({"device": device} if self.takes_device else {})
        try:
            self.test.hypothesis.inner_test(**kwargs)
        except (Exception, ImplementationHung) as e:  # noqa: BLE001 - a failing property is a result here
            return e
        return None


@dataclass(frozen=True)
class Repro:
    """The content of a repro file, validated."""

    property: Property
    contract: str
    impl: str
    device: str
    message: str
    case: object

    def applies_to(self, contract):
        """Whether an implementation of ``contract`` can be asked this case: the property
        covers the contract and, for legacy, the case is in fixed mode."""
        if contract not in self.property.contracts:
            return False
        return contract != "legacy" or self.case.simulate_acc_token_mode != "real-draft-token"

    def digest(self):
        """Short hash of what identifies the case: the property and the case's data."""
        text = json.dumps([self.property.id, encode_case(self.case)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]


# -- encoding ---------------------------------------------------------------------------


def _number(x):
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _encode_tensor(arg):
    values = arg.values.reshape(-1).tolist()
    if arg.values.dtype.is_floating_point:
        values = [_number(v) for v in values]
    dtype = str(arg.values.dtype).removeprefix("torch.")
    return {"dtype": dtype, "shape": list(arg.values.shape), "layout": arg.layout, "values": values}


def encode_case(case):
    """A case as JSON-ready data: ``{"type": ..., "fields": {...}}``."""
    fields = {}
    for f in dataclasses.fields(case):
        value = getattr(case, f.name)
        if isinstance(value, TensorArg):
            value = _encode_tensor(value)
        elif isinstance(value, float):
            value = _number(value)
        fields[f.name] = value
    return {"type": type(case).__name__, "fields": fields}


def _render(pairs, indent):
    """A JSON object with one key per line and compact values (tensors stay on one line)."""
    pad = " " * indent
    body = ",\n".join(f"{pad}  {json.dumps(k)}: {v}" for k, v in pairs)
    return "{\n" + body + "\n" + pad + "}"


def dumps(record):
    """The text of a repro file."""
    case = encode_case(record.case)
    fields = _render([(k, json.dumps(v)) for k, v in case["fields"].items()], 4)
    case_text = _render([("type", json.dumps(case["type"])), ("fields", fields)], 2)
    top = {
        "schema": SCHEMA,
        "property": record.property.id,
        "module": record.property.module,
        "contract": record.contract,
        "impl": record.impl,
        "device": record.device,
        "message": record.message[:MAX_MESSAGE],
    }
    return _render([(k, json.dumps(v)) for k, v in top.items()] + [("case", case_text)], 0) + "\n"


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename: a reader (or a
    crash) never sees half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def save(record, directory):
    """Write ``record`` as a new file in ``directory``; its path.

    ``<property>-<device>-<case hash>-<random>.json``: equal failures share the prefix
    (how ``simacc fuzz`` deduplicates), and the random tail keeps xdist workers and runs
    from ever overwriting each other.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{failure_key(record)}-{uuid.uuid4().hex[:8]}.json"
    write_atomically(path, dumps(record))
    return path


def failure_key(record):
    """What makes two failures the same: property, device and case."""
    return f"{record.property.id}-{record.device}-{record.digest()}"


# -- the catalogue ----------------------------------------------------------------------


def _marked_contracts(*holders):
    for holder in holders:
        marks = getattr(holder, "pytestmark", [])
        for mark in marks if isinstance(marks, list) else [marks]:
            if mark.name == "contracts":
                return tuple(mark.args)
    return CONTRACTS


def _parameters(test):
    inner = getattr(getattr(test, "hypothesis", None), "inner_test", None)
    return set(inspect.signature(inner).parameters) if inner is not None else set()


def replayable(test):
    """Whether a case can replay ``test``: a ``@given(case=...)`` test of ``impl``, ``case``
    and perhaps ``device``."""
    return {"impl", "case"} <= _parameters(test) <= {"impl", "device", "case"}


def _properties_in(module_name):
    module = importlib.import_module(module_name)
    return {
        name.removeprefix("test_"): Property(name.removeprefix("test_"), module_name, test, _marked_contracts(test, module))
        for name, test in vars(module).items()
        if name.startswith("test_") and replayable(test)
    }


def property_modules():
    """Names of the property modules of the ``properties`` package (corpus replay excluded)."""
    import properties

    return [
        f"properties.{m.name}"
        for m in pkgutil.iter_modules(properties.__path__)
        if m.name.startswith("test_") and m.name != "test_regressions"
    ]


def find_property(pid, module_hint=""):
    """The :class:`Property` with id ``pid``, looked up in ``module_hint`` first (only if it
    is one of the property modules: a file never chooses what gets imported)."""
    modules = property_modules()
    if module_hint in modules:
        modules.remove(module_hint)
        modules.insert(0, module_hint)
    for name in modules:
        found = _properties_in(name).get(pid)
        if found is not None:
            return found
    raise ReproError(f"unknown property id {pid!r} (no test_{pid} in the properties package)")


# -- decoding and validation ------------------------------------------------------------


def _exact_keys(obj, keys, what):
    if not isinstance(obj, dict):
        raise ReproError(f"{what} must be a JSON object, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    extra = sorted(set(obj) - set(keys))
    if missing:
        raise ReproError(f"{what} is missing field {missing[0]!r}")
    if extra:
        raise ReproError(f"{what} has unexpected field {extra[0]!r}")


def _string(doc, key, limit=1000):
    value = doc[key]
    if not isinstance(value, str) or len(value) > limit:
        raise ReproError(f"{key!r} must be a string of at most {limit} characters")
    if key != "message" and not value.isprintable():
        raise ReproError(f"{key!r} holds control characters")
    return value


def _is_int(x):
    return type(x) is int


def _decode_float(x, what):
    if isinstance(x, str) and x in NONFINITE:
        return NONFINITE[x]
    if type(x) not in (int, float):
        raise ReproError(f"{what} must be a number or one of {sorted(NONFINITE)}, got {x!r}"[:200])
    return x


def _decode_tensor(obj, name, budget):
    what = f"tensor {name!r}"
    _exact_keys(obj, TENSOR_KEYS, what)
    dtype = DTYPES.get(obj["dtype"]) if isinstance(obj["dtype"], str) else None
    if dtype is None:
        raise ReproError(f"{what} has unknown dtype {obj['dtype']!r} (expected one of {sorted(DTYPES)})"[:300])
    shape = obj["shape"]
    if not isinstance(shape, list) or not 1 <= len(shape) <= MAX_NDIM or not all(
        _is_int(d) and d >= 0 for d in shape
    ):
        raise ReproError(f"{what} has an invalid shape (1 to {MAX_NDIM} non-negative integers)")
    numel = math.prod(shape)
    if numel > budget:
        raise ReproError(f"{what} has shape {shape}: the case exceeds {MAX_ELEMENTS} elements"[:300])
    if obj["layout"] not in LAYOUTS:
        raise ReproError(f"{what} has unknown layout {obj['layout']!r} (expected one of {LAYOUTS})"[:300])
    values = obj["values"]
    if not isinstance(values, list) or len(values) != numel:
        count = len(values) if isinstance(values, list) else type(values).__name__
        raise ReproError(f"{what} has shape {shape} but {count} values")
    if dtype in _INT_RANGE:
        lo, hi = _INT_RANGE[dtype]
        if not all(map(_is_int, values)):
            raise ReproError(f"{what} is {obj['dtype']} but holds a non-integer value")
        if values and (min(values) < lo or max(values) > hi):
            raise ReproError(f"{what} holds a value outside the {obj['dtype']} range")
    else:
        values = [_decode_float(v, f"a value of {what}") for v in values]
        if any(math.isfinite(v) and abs(v) > _FLOAT32_MAX for v in values):
            raise ReproError(f"{what} holds a value outside the float32 range")
    try:
        return TensorArg(torch.tensor(values, dtype=dtype).reshape(shape), obj["layout"]), numel
    except ValueError as e:
        raise ReproError(f"{what}: {e}") from None


def _field_kinds(case_type):
    kinds = {}
    for f in dataclasses.fields(case_type):
        if f.type is TensorArg or f.type == (TensorArg | None):
            kinds[f.name] = ("tensor", f.type is not TensorArg)
        else:
            kinds[f.name] = (f.type.__name__, False)
    return kinds


def decode_case(obj):
    """The case described by ``{"type": ..., "fields": {...}}``; :class:`ReproError` if invalid."""
    _exact_keys(obj, ("type", "fields"), "'case'")
    case_type = CASE_TYPES.get(obj["type"]) if isinstance(obj["type"], str) else None
    if case_type is None:
        raise ReproError(f"unknown case type {obj['type']!r} (expected one of {sorted(CASE_TYPES)})"[:300])
    kinds = _field_kinds(case_type)
    _exact_keys(obj["fields"], kinds, f"{obj['type']} fields")
    budget = MAX_ELEMENTS
    values = {}
    for name, (kind, optional) in kinds.items():
        raw = obj["fields"][name]
        if kind == "tensor":
            if raw is None and optional:
                values[name] = None
                continue
            values[name], numel = _decode_tensor(raw, name, budget)
            budget -= numel
        elif kind == "int":
            if not _is_int(raw) or not -(2**63) <= raw < 2**64:
                raise ReproError(f"field {name!r} must be a 64-bit integer, got {raw!r}"[:200])
            values[name] = raw
        elif kind == "float":
            values[name] = _decode_float(raw, f"field {name!r}")
        else:
            if not isinstance(raw, str) or len(raw) > 100:
                raise ReproError(f"field {name!r} must be a string of at most 100 characters")
            values[name] = raw
    return case_type(**values)


def _no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ReproError(f"field {key[:80]!r} appears twice")
        obj[key] = value
    return obj


def _reject_constant(name):
    raise ReproError(f"bare {name} is not JSON; non-finite numbers are written as strings")


def parse(text):
    """The :class:`Repro` in ``text``; :class:`ReproError` names the first problem."""
    try:
        doc = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise ReproError(f"not valid JSON, corrupt or truncated ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise ReproError("not a repro file: JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise ReproError(f"not a repro file: a JSON {type(doc).__name__}, not an object")
    if "schema" not in doc:
        raise ReproError("not a repro file: no 'schema' field")
    if doc["schema"] != SCHEMA:
        raise ReproError(f"schema {doc['schema']!r} is not supported (this simacc reads {SCHEMA!r})"[:300])
    _exact_keys(doc, KEYS, "the file")
    pid = _string(doc, "property")
    if not _ID.fullmatch(pid):
        raise ReproError(f"property id {pid[:80]!r} is not a valid id")
    contract = _string(doc, "contract")
    if contract not in CONTRACTS:
        raise ReproError(f"unknown contract {contract[:80]!r} (expected one of {CONTRACTS})")
    device = _string(doc, "device")
    if device not in DEVICES:
        raise ReproError(f"unknown device {device[:80]!r} (expected one of {DEVICES})")
    impl, message, module = _string(doc, "impl"), _string(doc, "message", MAX_MESSAGE), _string(doc, "module")
    case = decode_case(doc["case"])
    wanted = DflashCase if contract == "dflash" else EagleCase
    if not isinstance(case, wanted):
        raise ReproError(f"case type {type(case).__name__!r} does not fit contract {contract!r}")
    prop = find_property(pid, module)
    if contract not in prop.contracts:
        raise ReproError(f"property {pid!r} does not apply to contract {contract!r}")
    return Repro(prop, contract, impl, device, message, case)


def load(path):
    """The :class:`Repro` in the file at ``path``; :class:`ReproError` if unreadable or invalid."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ReproError(f"file is larger than {MAX_BYTES >> 20} MiB")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ReproError(f"cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ReproError("not a repro file: not UTF-8 text") from None
    return parse(text)


def corpus_dir():
    """The promoted regression cases: ``SIMACC_REGRESSIONS`` or ``properties/regressions``."""
    from simacc import env

    import properties

    return Path(env.get("REGRESSIONS") or Path(properties.__file__).parent / "regressions")


# -- the command ------------------------------------------------------------------------


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
    p.add_argument("--device", default=None, choices=DEVICES, help="device to replay on (default: the recorded one; "
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
    if not record.property.takes_device and not torch.cuda.is_available():
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
    cuda = torch.cuda.is_available()
    if asked == "cuda" and not cuda:
        print("simacc repro: --device cuda, but CUDA is not available here", file=sys.stderr)
        return None
    if asked is None and recorded == "cuda" and not cuda:
        print("note: recorded on cuda; CUDA is not available here, so replaying on cpu")
        return "cpu"
    return asked or recorded


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
