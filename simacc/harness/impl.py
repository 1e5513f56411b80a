"""The implementation under test: loading it from an ``IMPL`` string, inferring which
contract its signature follows, and calling it the same way whatever that signature is.

``IMPL`` is ``package.module:attribute`` or ``path/to/file.py:attribute``. Every problem
with it is an :class:`ImplError` whose message is one line, raised before any test runs.
"""

import hashlib
import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

CONTRACTS = ("eagle", "legacy", "dflash", "kernel", "functional")
EAGLE_PARAMS = (
    "accept_index",
    "predict",
    "num_correct_drafts",
    "candidates",
    "target_predict",
    "bs",
    "spec_steps",
    "simulate_acc_len",
    "simulate_acc_method",
    "simulate_acc_token_mode",
)
LEGACY_THIRD = ("accept_length", "num_accepted_drafts", "num_correct_drafts")
DFLASH_PARAMS = (
    "candidates",
    "target_predict",
    "accept_len",
    "commit_lens",
    "bonus",
    "out_tokens",
    "simulate_acc_len",
    "simulate_acc_method",
    "simulate_acc_token_mode",
)
KERNEL_PARAMS = (
    "accept_indices",
    "predict_tokens",
    "num_correct_drafts",
    "candidate_tokens",
    "target_tokens",
    "width",
    "num_accept_tokens",
    "real_tokens",
)
FUNCTIONAL_PARAMS = (  # SPEC.md, "A functional port", with the settings as arguments (simacc.contract.functional)
    "accept_index",
    "predict",
    "candidates",
    "target_predict",
    "valid_mask",
    "spec_steps",
    "simulate_acc_len",
    "simulate_acc_method",
    "simulate_acc_token_mode",
    "fixed_token_id",
    "rng",
)
REFERENCES = {
    "eagle": "simacc:generate_simulated_accept_index",
    "legacy": "simacc:legacy_generate_simulated_accept_index",
    "dflash": "simacc:apply_dflash_simulated_acceptance",
    "kernel": "simacc:simulated_accept",
    "functional": "simacc.contract.functional:simulated_acceptance",
}
LEVELS = ("exact", "semantic")
INFERRED, FORWARDED, FORCED = (
    "inferred from the signature",
    "the default for a **kwargs signature; --contract overrides",
    "forced",
)


class ImplError(Exception):
    """A bad ``IMPL`` or ``--contract``: reported in one line, exit code 2."""


@dataclass(frozen=True)
class Implementation:
    """A callable plus how to call it.

    ``style`` is how arguments are passed: ``keywords``, ``positional`` (the current
    order), ``legacy`` (``... bs, spec_steps, simulate_acc_len, simulate_acc_method``),
    ``oldest`` (``... simulate_acc_len, bs, spec_steps``, no method) or ``jax`` (keywords,
    as JAX arrays and a key, the results converted back: :mod:`simacc.contract.jaxbridge`).
    """

    spec: str
    fn: object
    contract: str
    style: str
    source: str = ""
    version: str = ""
    contract_from: str = INFERRED  # how the contract was chosen (INFERRED, FORWARDED or FORCED)
    level: str = "exact"  # "semantic" for ports that draw L their own way (SPEC.md, "Semantic conformance")

    @property
    def is_reference(self):
        return self.spec == REFERENCES[self.contract]

    @property
    def modes(self):
        """The token modes this contract can be asked for."""
        return ("fixed",) if self.contract == "legacy" else ("fixed", "real-draft-token")

    @property
    def omissions(self):
        """The sets of arguments a call in this style can leave out so that their defaults
        apply (issue #13): any defaulted keyword; positionally only a trailing run."""
        if self.contract == "dflash":
            return (("next_token_logits",),)
        if self.style == "oldest":
            return ()  # no method to leave out
        if self.style == "legacy":
            return (("simulate_acc_method",),)
        mode, both = ("simulate_acc_token_mode",), ("simulate_acc_method", "simulate_acc_token_mode")
        if self.style == "positional":
            return (mode, both)
        return (("simulate_acc_method",), mode, both)

    def call(self, kwargs):
        """Call with the contract's keyword arguments (a case's ``args(device)``); an
        argument missing from ``kwargs`` is left out of the call (a trailing one, in the
        positional styles)."""
        if self.style == "keywords":
            return self.fn(**kwargs)
        if self.style == "jax":
            from simacc.contract import jaxbridge

            return jaxbridge.call(self.fn, kwargs)
        if self.style == "positional":
            names = EAGLE_PARAMS
        elif self.style == "oldest":
            names = ("accept_index", "predict", "num_correct_drafts", "simulate_acc_len", "bs", "spec_steps")
        else:
            names = ("accept_index", "predict", "num_correct_drafts", "bs", "spec_steps", "simulate_acc_len",
                     "simulate_acc_method")
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


def _import_file(spec, where):
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
        raise ImplError(f"IMPL {spec!r}: importing {where} raised {_one_line(e)}") from e
    return module, str(path)


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


def _import_target(spec):
    where, colon, attr = spec.rpartition(":")
    if not colon:
        raise ImplError(
            f"IMPL {spec!r} must be 'package.module:attribute' or 'path/to/file.py:attribute'"
        )
    if not where or not attr:
        raise ImplError(f"IMPL {spec!r} has an empty module or attribute part")
    is_file = where.endswith(".py") or "/" in where or "\\" in where
    module, source = (_import_file if is_file else _import_module)(spec, where)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ImplError(f"IMPL {spec!r}: {where} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ImplError(f"IMPL {spec!r}: {attr!r} is a {type(obj).__name__}, not callable")
    package = None if is_file else sys.modules.get(where.split(".")[0])
    version = getattr(module, "__version__", "") or getattr(package, "__version__", "")
    return obj, source, str(version)


def _parameters(fn):
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def infer_style(fn, contract=None):
    """``(contract, style)`` from ``fn``'s signature; ``contract`` forces one.

    Raises :class:`ImplError` when the signature fits no contract (or not the forced one).
    """
    params = _parameters(fn)
    if params is None:
        if contract is None:
            raise ImplError("cannot read the callable's signature; pass --contract")
        return contract, {"legacy": "legacy", "functional": "jax"}.get(contract, "keywords")
    names = [p.name for p in params]
    by_keyword = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    fits = {}
    if set(KERNEL_PARAMS) <= by_keyword:
        fits["kernel"] = "keywords"
    if set(FUNCTIONAL_PARAMS) <= by_keyword:
        fits["functional"] = "jax"
    if set(DFLASH_PARAMS) <= by_keyword:
        fits["dflash"] = "keywords"
    if set(EAGLE_PARAMS) <= by_keyword:
        fits["eagle"] = "keywords"
    elif contract == "eagle" and (len(positional) >= len(EAGLE_PARAMS) or varargs):
        fits["eagle"] = "positional"
    if len(names) >= 3 and names[2] in LEGACY_THIRD and "candidates" not in names and "bs" in names:
        oldest = "simulate_acc_len" in names and "bs" in names and (
            names.index("simulate_acc_len") < names.index("bs")
        )
        fits["legacy"] = "oldest" if oldest else "legacy"
    elif contract == "legacy" and (len(positional) >= 6 or varargs):
        fits["legacy"] = "legacy"
    if forwards_keywords(fn) and not fits:  # a `def f(**kwargs)` wrapper: every keyword contract fits
        style = "jax" if contract == "functional" else "keywords"
        fits = {"eagle": "keywords"} if contract is None else {contract: style} if contract != "legacy" else {}
    if contract is not None:
        if contract not in fits:
            raise ImplError(f"the signature ({', '.join(names)}) does not fit contract {contract!r}")
        return contract, fits[contract]
    if len(fits) != 1:
        raise ImplError(
            f"the signature ({', '.join(names)}) fits "
            + ("no contract" if not fits else f"several contracts {sorted(fits)}")
            + f"; pass --contract {{{','.join(CONTRACTS)}}}"
        )
    return next(iter(fits.items()))


def forwards_keywords(fn):
    """Whether ``fn`` takes ``**kwargs`` and no named parameter of any contract (a wrapper
    that forwards keywords, the way every sglang call site passes them)."""
    params = _parameters(fn) or []
    named = {p.name for p in params} & set(EAGLE_PARAMS + DFLASH_PARAMS + KERNEL_PARAMS + FUNCTIONAL_PARAMS)
    return any(p.kind == p.VAR_KEYWORD for p in params) and not named


def load(spec, contract=None, level="exact"):
    """The :class:`Implementation` named by ``spec``, checked against ``contract`` at
    ``level``."""
    if contract is not None and contract not in CONTRACTS:
        raise ImplError(f"unknown contract {contract!r}; expected one of {CONTRACTS}")
    if level not in LEVELS:
        raise ImplError(f"unknown level {level!r}; expected one of {LEVELS}")
    fn, source, version = _import_target(spec)
    try:
        chosen, style = infer_style(fn, contract)
    except ImplError as e:
        raise ImplError(f"IMPL {spec!r}: {e}") from None
    how = FORCED if contract is not None else FORWARDED if forwards_keywords(fn) else INFERRED
    if chosen == "functional":
        level = "semantic"  # a port in another array library draws L with its own randomness
    return Implementation(spec, fn, chosen, style, source, version, how, level)


def reference(contract, level="exact"):
    """The built-in reference for ``contract``."""
    return load(REFERENCES[contract], contract, level)
