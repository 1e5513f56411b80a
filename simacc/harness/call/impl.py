"""The implementation under test: loading it from an ``IMPL`` string, inferring which
contract its signature follows, and calling it the same way whatever that signature is.

``IMPL`` is ``package.module:attribute`` or ``path/to/file.py:attribute`` (:func:`parse`, the
one reader of it). Every problem with it is an :class:`ImplError` whose message is one line,
raised before any test runs. Its file and version are found without running any of its code
(:func:`locate`), so a session's header names them before anything is imported.
"""

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from simacc.harness.call.judges import judged_with
from simacc.harness.config import contracts

judged_with(__name__, "simacc.harness.call.runner")  # what loads and calls every implementation

INFERRED, FORWARDED, FORCED = (
    "inferred from the signature",
    "the default for a **kwargs signature; --contract overrides",
    "forced",
)
DEFAULT_FIXED_TOKEN_ID = 100  # CONTRACT.md §5.2 (sglang-jax writes 32); SGLANG_SIMULATE_ACC_TOKEN_ID sets another


class ImplError(Exception):
    """A bad ``IMPL`` or ``--contract``: reported in one line, exit code 2."""


@dataclass(frozen=True)
class Implementation:
    """A callable plus how to call it.

    ``style`` is how arguments are passed: the contract's keyword style (``keywords``, or
    ``jax``: keywords as JAX arrays and a key, the results converted back by
    :mod:`simacc.contract.jaxbridge`) or one of its positional orders
    (:attr:`simacc.harness.config.contracts.Contract.orders`). ``record`` is the
    :class:`~simacc.harness.config.contracts.Contract` it follows. ``fixed_token_id`` is the id its
    fixed mode must write.
    """

    spec: str
    fn: object
    record: object
    style: str
    source: str = ""
    contract_from: str = INFERRED  # how the contract was chosen (INFERRED, FORWARDED or FORCED)
    level: str = "exact"  # "semantic" for ports that draw L their own way (CONTRACT.md §9)
    fixed_token_id: int = DEFAULT_FIXED_TOKEN_ID
    changed_at_import: tuple = ()  # process state its import changed (restored; simacc.harness.call.process_state)
    modified_at_import: tuple = ()  # harness objects its import replaced (put back; simacc.harness.call.tamper)
    refused_drafts: str = contracts.REFUSED_DRAFTS[0]  # vLLM's samplers: who keeps them from being accepted (§15.4)

    @property
    def contract(self):
        """The name of the contract it follows."""
        return self.record.name

    @property
    def version(self):
        """Its version, as the header finds it (:func:`locate`)."""
        return locate(self.spec)[1]

    @property
    def is_reference(self):
        return self.fn is self.record.reference

    @property
    def modes(self):
        """The variants its contract's cases come in: the token modes, where it has them (the
        EAGLE family's strategies take them as ``modes``)."""
        return self.record.variants

    @property
    def omissions(self):
        """The sets of arguments a call in this style can leave out so that their defaults
        apply (CONTRACT.md §5)."""
        return self.record.omissions.get(self.style, ())

    def call(self, kwargs):
        """Call with the contract's keyword arguments (a case's ``args(device)``); an
        argument missing from ``kwargs`` is left out of the call (a trailing one, in the
        positional styles)."""
        if self.style == "keywords":
            return self.fn(**kwargs)
        if self.style == "jax":
            from simacc.contract import jaxbridge

            return jaxbridge.call(self.fn, kwargs)
        names = self.record.orders[self.style]
        given = [name for name in names if name in kwargs]
        if given != list(names[: len(given)]):
            raise ValueError(f"a {self.style}-style call can leave out only trailing arguments, not {names[len(given)]}")
        return self.fn(*(kwargs[name] for name in given))


def _one_line(e):
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _on_path(folder):
    """Make modules in ``folder`` importable the way running a script there would, without
    shadowing installed packages (appended, not prepended)."""
    if str(folder) not in sys.path:
        sys.path.append(str(folder))


def _import_file(spec, where, attr):
    path = Path(where).resolve()
    if not path.is_file():
        raise ImplError(f"IMPL {spec!r}: no such file {where}")
    _on_path(path.parent)  # so the file can import the modules beside it
    name = "simacc_impl_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module  # dataclasses, pickling and Triton look modules up by name
    try:
        loader_spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        del sys.modules[name]
        raise ImplError(f"IMPL {spec!r}: importing {where} raised {_one_line(e)}{_dotted_hint(e, path, attr)}") from e
    return module, str(path)


def _dotted_hint(error, path, attr):
    """For a file inside a package that imports relatively: the dotted form that works."""
    if not (isinstance(error, ImportError) and "relative import" in str(error)):
        return ""
    parts, folder = [path.stem], path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) == 1:
        return ""
    dotted = f"{'.'.join(parts)}:{attr}"
    where = "" if folder == Path.cwd().resolve() else f" from {folder}"
    return f"; {path.name} lies in package {parts[0]!r}: try IMPL {dotted!r}{where}"


def _a(noun):
    """``noun`` with its indefinite article: "an int", "a str"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _import_module(spec, where):
    _on_path(Path.cwd())  # `simacc check mymod:fn` in mymod's folder works like `python -m`
    try:
        module = importlib.import_module(where)
    except ModuleNotFoundError as e:
        if e.name and (where == e.name or where.startswith(e.name + ".")):
            raise ImplError(f"IMPL {spec!r}: module {e.name!r} not found") from e
        raise ImplError(f"IMPL {spec!r}: importing {where} raised {_one_line(e)}") from e
    except (Exception, SystemExit) as e:
        raise ImplError(f"IMPL {spec!r}: importing {where} raised {_one_line(e)}") from e
    return module, getattr(module, "__file__", "") or ""


class Name(NamedTuple):
    """An ``IMPL`` string's parts: ``where`` is a module's dotted name or a file's path (``is_file``
    says which), ``attribute`` the dotted path of the callable in it."""

    where: str
    attribute: str
    is_file: bool


def parse(spec):
    """The :class:`Name` ``spec`` spells; :class:`ImplError` when it spells none."""
    where, colon, attribute = spec.rpartition(":")
    if not colon:
        raise ImplError(
            f"IMPL {spec!r} must be 'package.module:attribute' or 'path/to/file.py:attribute'"
        )
    if not where or not attribute:
        raise ImplError(f"IMPL {spec!r} has an empty module or attribute part")
    return Name(where, attribute, where.endswith(".py") or "/" in where or "\\" in where)


def locate(spec):
    """``(file, version)`` of the implementation ``spec`` names, found without running any of its
    code (``file`` says so when its module is not found). The version is the one its code
    declares, read from the files that would run: a literal ``__version__`` in its module, else
    in its top-level package; else that of the installed distribution holding the package. A
    checkout on the path or an editable install so reports the version it holds now, not the
    one recorded when it was installed, and the distributions are searched only when needed."""
    where, _, is_file = parse(spec)
    if is_file:
        path = Path(where).resolve()
        return str(path), _declared_version(path)
    from importlib.machinery import PathFinder

    parts, path, found, top = where.split("."), None, None, None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])  # each finder asked as an import would, nothing executed
        found = next(filter(None, (getattr(f, "find_spec", lambda *a: None)(name, path) for f in sys.meta_path)), None)
        if found is None and path is None:  # loading looks in the working directory last (_import_module)
            found = PathFinder.find_spec(name, [os.getcwd()])
        if found is None:
            return f"module {where}, not found", ""
        top = top or found
        path = found.submodule_search_locations
    version = _declared_version(found.origin) or _declared_version(top.origin) or _installed_version(parts[0])
    return found.origin or where, version


def _declared_version(path):
    """The string a Python file assigns to ``__version__`` at its top level, or ""."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, TypeError, ValueError):
        return ""
    return next((node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "__version__" for t in node.targets)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)), "")


def _installed_version(package):
    """The version of the installed distribution that holds the top-level ``package``, or ""."""
    from importlib import metadata

    names = metadata.packages_distributions().get(package, [])
    return metadata.version(names[0]) if names else ""


def _import_target(spec):
    """``(callable, its module's file)`` of ``spec``, imported."""
    where, attr, is_file = parse(spec)
    module, source = _import_file(spec, where, attr) if is_file else _import_module(spec, where)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ImplError(f"IMPL {spec!r}: {where} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ImplError(f"IMPL {spec!r}: {attr!r} is {_a(type(obj).__name__)}, not callable")
    return obj, source


def _parameters(fn):
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def _positional_style(record, names):
    """The positional style of ``record`` whose order ``names`` begins with, or None."""
    for style, order in record.orders.items():
        if len(names) >= len(order) and all(
            name == want or name in record.aliases.get(want, ()) for name, want in zip(names, order)
        ):
            return style
    return None


def infer_style(fn, records, contract=None):
    """``(record, style)`` from ``fn``'s signature, of the contracts ``records``; ``contract``
    (a record of them) forces one.

    A contract fits when its keyword names are all parameters of ``fn``, or when the
    leading parameters follow one of its positional orders; a forced contract also fits
    other names positionally, given enough of them (or ``*args``). A ``**kwargs`` wrapper
    that names no parameter of any contract is taken for the first of ``records``. Raises
    :class:`ImplError` when the signature fits no contract (or not the forced one), or several.
    """
    params = _parameters(fn)
    if params is None:
        if contract is None:
            raise ImplError("cannot read the callable's signature; pass --contract")
        return contract, contract.keyword_style or next(iter(contract.orders))
    names = [p.name for p in params]
    by_keyword = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    fits = {}
    for record in records:
        style = record.keyword_style if record.keyword_style and set(record.params) <= by_keyword else None
        style = style or _positional_style(record, positional)
        if style is None and contract == record and record.orders:
            shortest = min(len(order) for order in record.orders.values())
            style = next(iter(record.orders)) if len(positional) >= shortest or varargs else None
        if style is not None:
            fits[record] = style
    if forwards_keywords(fn, records) and not fits:  # a `def f(**kwargs)` wrapper: every keyword contract fits
        chosen = contract or records[0]
        fits = {chosen: chosen.keyword_style} if chosen.keyword_style else {}
    if contract is not None:
        if contract not in fits:
            raise ImplError(f"the signature ({', '.join(names)}) does not fit contract {contract.name!r}")
        return contract, fits[contract]
    if len(fits) != 1:
        raise ImplError(
            f"the signature ({', '.join(names)}) fits "
            + ("no contract" if not fits else f"several contracts {sorted(r.name for r in fits)}")
            + f"; pass --contract {{{','.join(r.name for r in records)}}}"
        )
    return next(iter(fits.items()))


def forwards_keywords(fn, records):
    """Whether ``fn`` takes ``**kwargs`` and no named parameter of any contract of ``records``
    (a wrapper that forwards keywords, the way every sglang call site passes them)."""
    params = _parameters(fn) or []
    known = {name for record in records for name in record.params}
    return any(p.kind == p.VAR_KEYWORD for p in params) and not {p.name for p in params} & known


def load(spec, records, contract=None, level="exact", fixed_token_id=None,
         refused_drafts=contracts.REFUSED_DRAFTS[0]):
    """The :class:`Implementation` named by ``spec``, of one of the contracts ``records`` (the
    catalogue's, ``simacc.strategies.CONTRACTS``), checked against ``contract`` (the name of
    one of them, or None: inferred from its signature) at ``level``, its fixed mode expected to
    write ``fixed_token_id`` (None: the default, 100 unless ``SGLANG_SIMULATE_ACC_TOKEN_ID``
    says otherwise), a vLLM sampler called as a runner that leaves ``refused_drafts`` to the
    sampler or cuts them itself (CONTRACT.md §15.4)."""
    records = tuple(records)
    if contract is not None:
        try:
            contract = contracts.named(records, contract)
        except ValueError as e:
            raise ImplError(str(e)) from None
    if level not in contracts.LEVELS:
        raise ImplError(f"unknown level {level!r}; expected one of {contracts.LEVELS}")
    if refused_drafts not in contracts.REFUSED_DRAFTS:
        raise ImplError(f"unknown --refused-drafts {refused_drafts!r}; expected one of {contracts.REFUSED_DRAFTS}")
    (fn, source), changed, modified = _guarded_import(spec, records if contract is None else (contract,))
    try:
        chosen, style = infer_style(fn, records, contract)
    except ImplError as e:
        raise ImplError(f"IMPL {spec!r}: {e}") from None
    how = FORCED if contract is not None else FORWARDED if forwards_keywords(fn, records) else INFERRED
    level = chosen.level or level
    if fixed_token_id is None:  # the default an sglang build reads, as the reference does
        from simacc.contract import caller

        fixed_token_id = caller.DEFAULT_TOKEN_ID
    return Implementation(spec, fn, chosen, style, source, how, level, fixed_token_id, changed, modified,
                          refused_drafts)


def prepare():
    """What comes before the first implementation is imported in this process: the record of
    the harness it is checked against (:func:`simacc.harness.call.tamper.baseline`: this module
    and the runner among it) and the copy of this process that ranks and later grad modes start
    from (:func:`simacc.harness.processes.fresh.prepare`). Once per process; later calls cost nothing."""
    from simacc.harness.call import tamper
    from simacc.harness.processes import fresh

    tamper.baseline()
    fresh.prepare()


def server_environment(records):
    """The variables the server that imports and calls an implementation of one of the contracts
    ``records`` (every contract it may follow: the import comes before its signature says which)
    has set for its life: its engine's simulated acceptance switched on, with the method and token
    mode this check's reference takes by default, and an acceptance length of 3 unless this
    process's environment gives one."""
    from simacc.contract import caller

    values = {"SGLANG_SIMULATE_ACC_LEN": os.environ.get("SGLANG_SIMULATE_ACC_LEN", "3"),
              "SGLANG_SIMULATE_ACC_METHOD": caller.DEFAULT_METHOD,
              "SGLANG_SIMULATE_ACC_TOKEN_MODE": caller.DEFAULT_TOKEN_MODE}
    return {name: values[name] for record in records for name in record.server_env}


@contextlib.contextmanager
def in_environment(variables):
    """``variables`` set in this process's environment, and put back as they were after."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _guarded_import(spec, records):
    """``_import_target(spec)`` after :func:`prepare`, in the server's environment
    (:func:`server_environment` of the contracts ``records``), with the process state and the
    harness as they were before it (docs/trust.md): ``(target, state changes, harness objects
    replaced)``, both put back. A ``KeyboardInterrupt`` the module raised, with no Ctrl-C, is an
    import error."""
    from simacc.harness.call import process_state, tamper
    from simacc.harness.processes.interrupts import Recorder

    prepare()
    with Recorder() as ctrl_c, in_environment(server_environment(records)):
        before = process_state.snapshot()
        try:
            target = _import_target(spec)
        except KeyboardInterrupt as e:
            if ctrl_c.real(e, 0):
                raise
            raise ImplError(f"IMPL {spec!r}: importing it raised KeyboardInterrupt") from None
        finally:
            changed = process_state.restore(before)
            modified = tuple(tamper.modified())
    return target, changed, modified


def reference(contract, level="exact", fixed_token_id=None):
    """The built-in reference of ``contract`` (a record)."""
    return load(contract.spec, (contract,), contract.name, level, fixed_token_id)
