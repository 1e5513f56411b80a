"""Repro files: one failing case as JSON.

A repro file is plain JSON (never pickle or ``torch.load``: a file from a CI artifact must
not be able to run code by being read). It holds the property id, the contract, the
implementation, device and grad mode it failed in, the failure message, and the case: every
tensor's values (flat, row-major), shape, dtype and layout, the scalar arguments and the
generator seed. A stateful property's failure is a program instead
(:mod:`simacc.harness.model.programs`): its file has schema ``simacc-repro/2`` and a
``program`` (machine, knobs, steps) where the others have a ``case``; both schemas are
read. Reading one validates everything before any tensor is built, so a corrupt, truncated,
foreign or hostile file is refused with one line naming the problem: only a regular file is
read (a FIFO or a link to a device never blocks or streams), at most :data:`MAX_BYTES`; an
integer of thousands of digits is refused before Python parses it; and a case that passes
the schema but that no reference could run (a ``bs`` the shapes disagree with, a float
index, ranges outside ``predict``: its type's ``problem()``) is *unusable*, since it would
"still fail" forever.
The ``impl`` it names is only text here: whether to import it is the replayer's question.
"""

import dataclasses
import hashlib
import json
import math
import os
import re
import stat
import types
from dataclasses import dataclass
from pathlib import Path

import torch

from simacc.harness.config import contracts, devices, grad_modes
from simacc.harness.model.cases import DTYPES, LAYOUTS, TensorArg
from simacc.harness.model.programs import Program
from simacc.harness.processes.atomic import write_atomically

SCHEMA = "simacc-repro/1"
PROGRAM_SCHEMA = "simacc-repro/2"  # a file that holds a program (a stateful property's failure)
MAX_PROGRAM_STEPS = 10_000
MAX_KNOBS = 50
MAX_BYTES = 256 * 2**20
MAX_ELEMENTS = 10**7  # over all tensors of a case; the generated ones are far smaller
MAX_NDIM = 4
MAX_MESSAGE = 4000
KEYS = ("schema", "property", "module", "contract", "impl", "device", "message", "case")
OPTIONAL_KEYS = {"level": "exact", "context": None}  # later additions: a file without them reads as before
TENSOR_KEYS = ("dtype", "shape", "layout", "values")
NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_INT_RANGE = {torch.int32: (-(2**31), 2**31 - 1), torch.int64: (-(2**63), 2**63 - 1)}
_ID = re.compile(r"[a-z0-9_]{1,200}")
MAX_DIGITS = 40  # an integer literal longer than this is no field of a case (Python would refuse 4300)


class ReproError(Exception):
    """An unreadable or invalid repro file; the message is one line."""


@dataclass(frozen=True)
class Repro:
    """The content of a repro file, validated: ``property`` is the id of the property that
    failed (``module`` the one it was in), which this module does not look up (the catalogue
    sits above the harness: :func:`simacc.properties.find`)."""

    property: str
    module: str
    contract: str
    impl: str
    device: str
    message: str
    case: object
    level: str = "exact"  # the conformance level the failure was found at
    context: str | None = None  # the grad mode it was found in (None: a file from before grad modes)

    def digest(self):
        """Short hash of what identifies the case: the property and the case's data."""
        text = json.dumps([self.property, _encoded(self.case)], sort_keys=True)
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
        elif isinstance(value, tuple):
            if not value:
                continue  # an empty "omitted": files stay as they were before the field existed
            value = list(value)
        elif value is None and f.default is None:
            continue  # a None that is the field's default (DFLASH's fixed id not passed): the same
        fields[f.name] = value
    return {"type": type(case).__name__, "fields": fields}


def encode_program(program):
    """A program as JSON-ready data: ``{"machine": ..., "knobs": {...}, "steps": [[rule, {...}], ...]}``."""
    scalar = lambda v: _number(v) if isinstance(v, float) else v  # noqa: E731
    return {"machine": program.machine, "knobs": {k: scalar(v) for k, v in program.knobs.items()},
            "steps": [[rule, {k: scalar(v) for k, v in args.items()}] for rule, args in program.steps]}


def _encoded(case):
    """A case's or a program's JSON-ready data."""
    return encode_program(case) if isinstance(case, Program) else encode_case(case)


def _render(pairs, indent):
    """A JSON object with one key per line and compact values (tensors stay on one line)."""
    pad = " " * indent
    body = ",\n".join(f"{pad}  {json.dumps(k)}: {v}" for k, v in pairs)
    return "{\n" + body + "\n" + pad + "}"


def dumps(record):
    """The text of a repro file."""
    if isinstance(record.case, Program):
        program = encode_program(record.case)
        steps = "[\n" + ",\n".join(f"    {json.dumps(step)}" for step in program["steps"]) + "\n  ]"
        body = ("program", _render([("machine", json.dumps(program["machine"])),
                                    ("knobs", json.dumps(program["knobs"])), ("steps", steps)], 2))
    else:
        case = encode_case(record.case)
        fields = _render([(k, json.dumps(v)) for k, v in case["fields"].items()], 4)
        body = ("case", _render([("type", json.dumps(case["type"])), ("fields", fields)], 2))
    top = {
        "schema": PROGRAM_SCHEMA if isinstance(record.case, Program) else SCHEMA,
        "property": record.property,
        "module": record.module,
        "contract": record.contract,
        "impl": record.impl,
        "device": record.device,
        "message": record.message[:MAX_MESSAGE],
        "level": record.level,
        "context": record.context,
    }
    return _render([(k, json.dumps(v)) for k, v in top.items()] + [body], 0) + "\n"


def file_name(record):
    """``<property>-<device>-<hash>.json``, the hash over what makes two failures the same:
    the property, the implementation, the device, the case and the grad mode. Any xdist worker
    or later run that finds the failure again gets this name, so a folder holds one file per
    distinct failure. Two spellings of one device (``cpu``, ``cpu:0``) are one device."""
    device = devices.resolve(record.device)
    identity = [record.property, record.impl, str(device), _encoded(record.case)]
    if record.context is not None:  # the same case failing in two grad modes is two failures
        identity.append(record.context)
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    return f"{record.property}-{str(device).replace(':', '')}-{digest}.json"


def save(record, directory):
    """Write ``record`` into ``directory`` under its :func:`file_name`; its path. A file of
    the same failure is replaced whole: it ends up holding the latest message, and its
    modification time says when the failure was last seen (what ``--keep`` reads)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(record)
    write_atomically(path, dumps(record))
    return path


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
    if dtype == torch.bool:
        if not all(type(v) is bool for v in values):
            raise ReproError(f"{what} is bool but holds a value other than true or false")
    elif dtype in _INT_RANGE:
        lo, hi = _INT_RANGE[dtype]
        if not all(map(_is_int, values)):
            raise ReproError(f"{what} is {obj['dtype']} but holds a non-integer value")
        if values and (min(values) < lo or max(values) > hi):
            raise ReproError(f"{what} holds a value outside the {obj['dtype']} range")
    else:
        values = [_decode_float(v, f"a value of {what}") for v in values]
        most = torch.finfo(dtype).max
        if any(math.isfinite(v) and abs(v) > most for v in values):
            raise ReproError(f"{what} holds a value outside the {obj['dtype']} range")
    try:
        return TensorArg(torch.tensor(values, dtype=dtype).reshape(shape), obj["layout"]), numel
    except ValueError as e:
        raise ReproError(f"{what}: {e}") from None


def _field_kinds(case_type):
    """``{name: (kind, optional)}``; ``optional`` fields may be missing from a file (a
    tensor that is ``None``, or a field with a default). A scalar field typed ``X | None``
    has kind ``X?``: null is one of its values."""
    kinds = {}
    for f in dataclasses.fields(case_type):
        if f.type is TensorArg or f.type == (TensorArg | None):
            kinds[f.name] = ("tensor", f.type is not TensorArg)
        elif isinstance(f.type, types.UnionType):
            kinds[f.name] = (next(t for t in f.type.__args__ if t is not type(None)).__name__ + "?",
                             f.default is not dataclasses.MISSING)
        else:
            kinds[f.name] = (f.type.__name__, f.default is not dataclasses.MISSING)
    return kinds


def decode_case(obj, records):
    """The case described by ``{"type": ..., "fields": {...}}``, of the case type of one of the
    contracts ``records`` (the file names it by its class name); :class:`ReproError` if invalid."""
    _exact_keys(obj, ("type", "fields"), "'case'")
    known = {c.case.__name__: c.case for c in records}
    case_type = known.get(obj["type"]) if isinstance(obj["type"], str) else None
    if case_type is None:
        raise ReproError(f"unknown case type {obj['type']!r} (expected one of {sorted(known)})"[:300])
    kinds = _field_kinds(case_type)
    defaulted = [name for name, (kind, optional) in kinds.items() if kind != "tensor" and optional]
    _exact_keys({name: None for name in defaulted} | obj["fields"], kinds, f"{obj['type']} fields")
    budget = MAX_ELEMENTS
    values = {}
    for name, (kind, optional) in kinds.items():
        if name not in obj["fields"]:
            continue  # a field with a default (``defaulted``), left out
        raw = obj["fields"][name]
        if kind.endswith("?"):
            if raw is None:
                values[name] = None
                continue
            kind = kind[:-1]
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
        elif kind == "bool":
            if type(raw) is not bool:
                raise ReproError(f"field {name!r} must be true or false, got {raw!r}"[:200])
            values[name] = raw
        elif kind == "tuple":
            if not isinstance(raw, list) or len(raw) > 10 or not all(isinstance(v, str) and _ID.fullmatch(v) for v in raw):
                raise ReproError(f"field {name!r} must be a list of argument names")
            values[name] = tuple(raw)
        else:
            if not isinstance(raw, str) or len(raw) > 100:
                raise ReproError(f"field {name!r} must be a string of at most 100 characters")
            values[name] = raw
    case = case_type(**values)
    problem = case.problem()
    if problem:
        raise ReproError(f"unusable case: {problem} (no reference could run it)")
    return case


def _scalar(value, what):
    """A knob or step argument: a bool, a 64-bit integer, a number (non-finite as a string)
    or a short printable string."""
    if type(value) is bool or (_is_int(value) and -(2**63) <= value < 2**64) or type(value) is float:
        return value
    if isinstance(value, str) and value in NONFINITE:
        return NONFINITE[value]
    if isinstance(value, str) and len(value) <= 100 and value.isprintable():
        return value
    raise ReproError(f"{what} must be a number, true, false or a short string, got {value!r}"[:200])


def _scalars(obj, what, limit):
    if not isinstance(obj, dict) or len(obj) > limit:
        raise ReproError(f"{what} must be a JSON object of at most {limit} entries")
    bad = next((k for k in obj if not _ID.fullmatch(k)), None)
    if bad is not None:
        raise ReproError(f"{what} has an invalid name {bad[:80]!r}")
    return {k: _scalar(v, f"{what} {k!r}") for k, v in obj.items()}


def decode_program(obj):
    """The program described by ``{"machine": ..., "knobs": {...}, "steps": [...]}``;
    :class:`ReproError` if its shape is wrong (what its names mean, the machine checks)."""
    _exact_keys(obj, ("machine", "knobs", "steps"), "'program'")
    machine = obj["machine"]
    if not isinstance(machine, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,99}", machine):
        raise ReproError(f"'program' machine {str(machine)[:80]!r} is not a class name")
    knobs = _scalars(obj["knobs"], "knob", MAX_KNOBS)
    steps = obj["steps"]
    if not isinstance(steps, list) or len(steps) > MAX_PROGRAM_STEPS:
        raise ReproError(f"'program' steps must be a list of at most {MAX_PROGRAM_STEPS} steps")
    decoded = []
    for step in steps:
        if not (isinstance(step, list) and len(step) == 2 and isinstance(step[0], str) and _ID.fullmatch(step[0])):
            raise ReproError(f"a step must be [rule, {{arguments}}], got {str(step)[:80]}")
        decoded.append((step[0], _scalars(step[1], f"step {step[0]!r} argument", MAX_KNOBS)))
    return Program(machine, knobs, tuple(decoded))


def _no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ReproError(f"field {key[:80]!r} appears twice")
        obj[key] = value
    return obj


def _reject_constant(name):
    raise ReproError(f"bare {name} is not JSON; non-finite numbers are written as strings")


def _integer(text):
    if len(text) > MAX_DIGITS:
        raise ReproError(f"an integer of {len(text)} digits is no field of a repro file")
    return int(text)


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ReproError(f"the number {text[:40]} is too large; non-finite numbers are written as strings")
    return value


def parse(text, records):
    """The :class:`Repro` in ``text``, of one of the contracts ``records`` (the catalogue's,
    ``simacc.strategies.CONTRACTS``); :class:`ReproError` names the first problem."""
    try:
        doc = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates,
                         parse_int=_integer, parse_float=_finite)
    except json.JSONDecodeError as e:
        raise ReproError(f"not valid JSON, corrupt or truncated ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise ReproError("not a repro file: JSON nested too deeply") from None
    except ValueError as e:  # anything else the parser refused
        raise ReproError(f"not a repro file: {str(e)[:200]}") from None
    if not isinstance(doc, dict):
        raise ReproError(f"not a repro file: a JSON {type(doc).__name__}, not an object")
    if "schema" not in doc:
        raise ReproError("not a repro file: no 'schema' field")
    if doc["schema"] not in (SCHEMA, PROGRAM_SCHEMA):
        raise ReproError(f"schema {str(doc['schema'])[:80]!r} is not supported (this simacc reads {SCHEMA!r} "
                         f"and {PROGRAM_SCHEMA!r})")
    stateful = doc["schema"] == PROGRAM_SCHEMA
    doc = {**OPTIONAL_KEYS, **doc}
    keys = tuple("program" if stateful and k == "case" else k for k in KEYS)
    _exact_keys(doc, (*keys, *OPTIONAL_KEYS), "the file")
    level = _string(doc, "level")
    if level not in contracts.LEVELS:
        raise ReproError(f"unknown level {level[:80]!r} (expected one of {contracts.LEVELS})")
    context = doc["context"]
    if context is not None and context not in grad_modes.NAMES:
        raise ReproError(f"unknown grad mode {str(context)[:80]!r} (expected null or one of {grad_modes.NAMES})")
    pid = _string(doc, "property")
    if not _ID.fullmatch(pid):
        raise ReproError(f"property id {pid[:80]!r} is not a valid id")
    contract = _string(doc, "contract")
    record = next((r for r in records if r.name == contract), None)
    if record is None:
        raise ReproError(f"unknown contract {contract[:80]!r} (expected one of {tuple(r.name for r in records)})")
    device = _string(doc, "device")
    try:
        devices.parse(device)
    except ValueError:
        raise ReproError(f"unknown device {device[:80]!r} (expected cpu, cuda, cpu:N or cuda:N)") from None
    impl, message, module = _string(doc, "impl"), _string(doc, "message", MAX_MESSAGE), _string(doc, "module")
    if stateful:
        return Repro(pid, module, contract, impl, device, message, decode_program(doc["program"]), level, context)
    case = decode_case(doc["case"], records)
    if type(case) is not record.case:
        raise ReproError(f"case type {type(case).__name__!r} does not fit contract {contract!r}")
    return Repro(pid, module, contract, impl, device, message, case, level, context)


def load(path, records):
    """The :class:`Repro` in the file at ``path``, of one of the contracts ``records``;
    :class:`ReproError` if unreadable or invalid.
    Only a regular file is read (opened without blocking, then ``fstat``), and at most
    :data:`MAX_BYTES` plus one byte of it, whatever its size says."""
    try:
        fd = os.open(Path(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise ReproError(f"cannot read it: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ReproError("not a regular file (a FIFO, device or folder is never read)")
        data = _read_at_most(fd, MAX_BYTES + 1)
    except OSError as e:
        raise ReproError(f"cannot read it: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ReproError(f"file is larger than {MAX_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReproError("not a repro file: not UTF-8 text") from None
    return parse(text, records)


def _read_at_most(fd, limit):
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(limit - size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)

