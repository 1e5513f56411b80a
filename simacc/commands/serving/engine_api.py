"""What an engine's layout calls, read from the engine's files without importing them
(``ast``), and what changed between two versions of one engine: a module gone, a function
moved, a parameter added, removed or renamed. ``simacc engines`` says it before any property
runs, so that a reader sees why a layout's row changed (docs/engines.md).

A name is looked up in the modules its :class:`~simacc.contract.vllm_glue.Call` lists, in
order: defined at a module's top level (``Class.method`` inside a class), or imported there
(a package's ``__init__`` that re-exports it; its parameters are then not read).
"""

import ast
import functools
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Found:
    """Where a name lies in one version: the module that has it (None: none of its modules
    does) and its parameters, in order, ``name=default`` where it has one (None where they
    cannot be read: a class, a re-exported name)."""

    name: str
    module: str | None
    parameters: tuple | None = None


def module_file(root, module):
    """The file of dotted ``module`` under the folder ``root`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
    base = Path(root, *module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=64)
def _tree(path):
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))


def _imports(body, name):
    return any(isinstance(node, (ast.Import, ast.ImportFrom))
               and any((alias.asname or alias.name.split(".")[-1]) == name for alias in node.names) for node in body)


def _parameters(node):
    """``("a", "b=1", "*", "c=None")`` of a function's signature."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    shown = [a.arg if d is None else f"{a.arg}={ast.unparse(d)}" for a, d in zip(positional, defaults)]
    if args.vararg:
        shown.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        shown.append("*")
    shown += [a.arg if d is None else f"{a.arg}={ast.unparse(d)}" for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        shown.append(f"**{args.kwarg.arg}")
    return tuple(shown)


def _lookup(tree, name):
    """``(True, parameters or None)`` where dotted ``name`` is defined or imported at the top of
    ``tree``; ``(False, None)`` where it is not."""
    body, node = tree.body, None
    for depth, part in enumerate(name.split(".")):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return (depth == 0 and _imports(body, part)), None
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True, (None if isinstance(node, ast.ClassDef) else _parameters(node))


def find(root, call):
    """:class:`Found` of ``call`` (a ``Call``: ``name`` and ``modules``) in the files under ``root``."""
    for module in call.modules:
        path = module_file(root, module)
        if path is None:
            continue
        present, parameters = _lookup(_tree(str(path)), call.name)
        if present:
            return Found(call.name, module, parameters)
    return Found(call.name, None)


def _bare(parameter):
    return parameter.split("=")[0]


def _parameter_changes(old, new):
    """What changed between two parameter lists, in words (empty when nothing did)."""
    before, after = [_bare(p) for p in old], [_bare(p) for p in new]
    removed = [p for p in old if _bare(p) not in after]
    added = [p for p in new if _bare(p) not in before]
    said = []
    if removed and added and before.index(_bare(removed[0])) == after.index(_bare(added[0])):
        place = before.index(_bare(removed[0])) + 1
        said.append(f"parameter {place} renamed {_bare(removed[0])} -> {_bare(added[0])}")
        removed, added = removed[1:], added[1:]
    if added:
        said.append(f"added {', '.join(added)}")
    if removed:
        said.append(f"removed {', '.join(removed)}")
    defaults = {_bare(p): p for p in old}
    said += [f"{defaults[_bare(p)]} -> {p}" for p in new if _bare(p) in defaults and defaults[_bare(p)] != p]
    return "; ".join(said)


def changes(calls, old, new):
    """The differences between two versions' :class:`Found` of the same ``calls``, one line each."""
    lines = []
    for call, a, b in zip(calls, old, new):
        if a.module and not b.module:
            lines.append(f"`{call.name}` gone (was in `{a.module}`)" + (f": {call.optional}" if call.optional else ""))
        elif b.module and not a.module:
            lines.append(f"`{call.name}` new in `{b.module}`")
        elif a.module and a.module != b.module:
            lines.append(f"`{call.name}` moved from `{a.module}` to `{b.module}`")
        if a.parameters is not None and b.parameters is not None and a.parameters != b.parameters:
            lines.append(f"`{call.name}`: {_parameter_changes(a.parameters, b.parameters)}")
    return lines


def missing(calls, found):
    """Why a layout cannot run in a version (one line), or None: the names it needs that none
    of their modules has."""
    gone = [call for call, f in zip(calls, found) if f.module is None and not call.optional]
    if not gone:
        return None
    return "; ".join(f"no `{call.name}` (looked in {', '.join(f'`{m}`' for m in call.modules)})" for call in gone)
