"""Whether the code under test changed the harness that judges it.

:func:`baseline`, taken at the first load of an implementation before it is imported,
records the objects the harness relies on: every attribute of simacc's modules (but the
commands and the zoo) and of the classes they define, torch's namespace and
``torch.Tensor``'s methods. After the import and after each property the whole record is
compared object for object (:func:`check` with ``full``); after each call a quicker
comparison covers what the property compares that call's outcome with: the torch names
simacc's code uses, ``torch.Tensor``'s methods and the assertion helpers (a few
microseconds). A change is put back at once and raised as :class:`HarnessModified`, a
failure no property can pass: an implementation that patches ``torch.equal``, replaces an assertion helper or
``Implementation.call``, or rebinds a constant of simacc's to match its own port is never
conformant, and the rest of the run sees the harness as it was.

torch changes its own namespace too: importing ``torch._dynamo`` (which ``torch.compile``, and
the first call of a ``torch.library.custom_op``, do) replaces ``torch.manual_seed`` with a
wrapper of torch's that calls the original. Such a replacement (:func:`_torchs_own`: a
function whose code lies in torch's own files and whose ``__wrapped__`` chain reaches the
recorded object) is not the implementation's doing: it is adopted into the record, never
put back or reported. A wrapper written anywhere else (the implementation's file, a
decorator of its own), or a function of torch's that wraps anything but the recorded object,
is still a modification.

Results are compared as plain tensors: :func:`plain` turns a ``torch.Tensor`` subclass
(whose ``__torch_function__`` could answer ``torch.equal`` itself, and an input's
``__class__`` can be reassigned) into a plain tensor over the same storage, with references
taken before the implementation was imported.

This defends against accidental or casual interference, not against code that knows it is
under test (``docs/trust.md``).
"""

import operator
import os
import sys
import types

import torch

_TENSOR = torch.Tensor
_AS_SUBCLASS = torch._C.TensorBase.as_subclass  # a method of an immutable type: nothing can replace it
_NO_SUBCLASS_FUNCTIONS = torch._C.DisableTorchFunctionSubclass
_MISSING = object()
# imported before the record is taken, with what the rooms above name (simacc.harness.call.judges),
# so that an implementation cannot be the first to import (and patch) what judges it
RELIED_ON = ("simacc.contract.reference", "simacc.contract.sampling", "simacc.contract.validation",
             "simacc.contract.caller", "simacc.harness.model.cases")


def _not_harness(name):
    """This module (its record changes), the zoo (implementations under test themselves) and
    the commands (they print what the harness found; they judge nothing)."""
    return name == __name__ or any(name == p or name.startswith(p + ".") for p in ("simacc.zoo", "simacc.commands"))


class HarnessModified(BaseException):
    """The implementation changed what judges it (already put back).

    A ``BaseException``, like :class:`~simacc.harness.call.runner.ImplementationHung`: it ends
    the property at once, and no property that expects the call to raise can take it for
    the implementation's own error."""


class _Space:
    """One namespace's recorded attributes: ``owner`` (a module or class), the keys (all of
    them, or the ``keys`` given) and the objects they held."""

    def __init__(self, label, owner, keys=None):
        self.label, self.owner = label, owner
        self.space = vars(owner)
        self.keys = tuple(self.space if keys is None else (k for k in keys if k in self.space))
        self.values = tuple(self.space[k] for k in self.keys)
        if keys is None:  # the values in order: no key to hash (a key added since makes it look one by one)
            self._get = lambda space: tuple(space.values())
        else:
            get = operator.itemgetter(*self.keys)
            self._get = get if len(self.keys) > 1 else lambda space: (get(space),)

    def changed(self, exact):
        """The recorded keys whose object changed, each put back (torch's own changes are
        adopted instead, in every space over the same namespace: :func:`_adopt`)."""
        try:
            now = self._get(self.space)
            # quick: ==, which finds each identical object first; exact: `is`, which no object can fool
            if (len(now) == len(self.values) and all(map(operator.is_, now, self.values))) if exact \
                    else now == self.values:
                return []
        except Exception:  # noqa: BLE001 - a key removed, or an object whose == raises: look one by one
            pass
        found = []
        for key, value in zip(self.keys, self.values):
            new = self.space.get(key, _MISSING)
            if new is value:
                continue
            if _torchs_own(new, value):
                _adopt(self.owner, key, new)
                continue
            found.append(f"{self.label}.{key}")
            setattr(self.owner, key, value)
        return found

    def adopt(self, key, value):
        if key in self.keys:
            self.values = tuple(value if k == key else v for k, v in zip(self.keys, self.values))


class _Baseline:
    def __init__(self):
        self.full, self.quick = [], []
        self.quick_looks = ()  # (get, namespace, values) of ``quick``: one tight loop per call

    def look_quickly(self):
        self.quick_looks = tuple((space._get, space.space, space.values) for space in self.quick)


_RECORD = _Baseline()
_TORCH_FILES = os.path.join(os.path.dirname(os.path.realpath(torch.__file__)), "")
_WRAPS = 8  # how deep a chain of __wrapped__ is followed


def _torchs_own(new, recorded):
    """Whether ``new``, found where ``recorded`` was, is torch's own wrapper of it: a function
    defined in torch's files whose ``__wrapped__`` chain reaches ``recorded`` (see the module)."""
    code = getattr(new, "__code__", None)
    if code is None or not os.path.realpath(code.co_filename).startswith(_TORCH_FILES):
        return False
    inner = new
    for _ in range(_WRAPS):
        inner = getattr(inner, "__wrapped__", None)
        if inner is recorded:
            return True
        if inner is None:
            return False
    return False


def _adopt(owner, key, value):
    """Record ``value`` as ``owner.key`` in every space over ``owner`` (torch's own change)."""
    for space in (*_RECORD.full, *_RECORD.quick):
        if space.owner is owner:
            space.adopt(key, value)
    _RECORD.look_quickly()


def baseline():
    """Record what the harness relies on, once per process (before the first import of an
    implementation; later imports are checked against the same record): the modules of
    :data:`RELIED_ON`, those the rooms above name (:func:`~simacc.harness.call.judges.judged_with`)
    and whatever else of simacc's is imported by then."""
    if _RECORD.full:
        return
    import importlib

    import simacc
    from simacc.harness.call import judges

    for name in (*RELIED_ON, *judges.named()):
        importlib.import_module(name)
    for name in simacc.__all__:  # resolved now, so that a name set before the harness asks is a change
        getattr(simacc, name)
    full = [_Space("torch", torch), _Space("torch.Tensor", torch.Tensor)]
    used = set()
    for name, module in sorted(sys.modules.items()):
        if module is None or not (name == "simacc" or name.startswith("simacc.")) or _not_harness(name):
            continue
        full.append(_Space(name, module))
        for attr, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == name:
                full.append(_Space(f"{name}.{attr}", value))
        used |= _names_used(module)
    by_label = {s.label: s for s in full}
    quick = [_Space("torch", torch, sorted(used)), by_label["torch.Tensor"]]
    quick += [by_label[name] for name in judges.named(quick=True) if name in by_label]
    _RECORD.full, _RECORD.quick = full, quick
    _RECORD.look_quickly()


def _names_used(module):
    """The attribute names a module's code looks up (a superset of the torch names it uses)."""
    names, todo = set(), [v.__code__ for v in vars(module).values() if isinstance(v, types.FunctionType)]
    for cls in (v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__):
        todo += [v.__code__ for v in vars(cls).values() if isinstance(v, types.FunctionType)]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def modified(full=True):
    """What changed since :func:`baseline` (put back), one dotted name each."""
    return [name for space in (_RECORD.full if full else _RECORD.quick) for name in space.changed(exact=full)]


def check(full=True, when="during the call"):
    """Raise :class:`HarnessModified` naming what changed ``when``."""
    if not full and _unchanged_at_a_glance():
        return
    found = modified(full)
    if found:
        raise HarnessModified(describe(found, when))


def _unchanged_at_a_glance():
    try:
        for get, space, values in _RECORD.quick_looks:
            if get(space) != values:
                return False
    except Exception:  # noqa: BLE001 - a key removed, or an == that raises: the slow look says what
        return False
    return True


def describe(found, when):
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    return f"the implementation modified the harness {when}: {shown} (put back; see docs/trust.md)"


def plain(value):
    """``value`` with every tensor in it (itself, or in a tuple or list) a plain
    ``torch.Tensor`` over the same storage."""
    kind = type(value)
    if kind is _TENSOR or value is None:
        return value
    if isinstance(value, _TENSOR):
        with _NO_SUBCLASS_FUNCTIONS():
            return _AS_SUBCLASS(value, _TENSOR)
    if kind in (tuple, list):
        return kind(map(plain, value))
    return value


def plain_args(args):
    """The call's keyword arguments with every tensor plain (an input's class can be
    reassigned); ``args`` itself when they all are."""
    for value in args.values():
        if type(value) is not _TENSOR and isinstance(value, _TENSOR):
            return {k: plain(v) for k, v in args.items()}
    return args
