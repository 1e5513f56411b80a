"""The code's structure: no import circles anywhere in simacc, and the harness's rooms import
only the rooms above them (``simacc/harness/__init__.py`` lists them in order).

An import is any ``import`` statement, at the top of a module or inside a function, any
``importlib.import_module`` of a literal name, and any ``"module:attribute"`` string that names
one of simacc's modules (a fresh process's target, a contract's reference): each makes one
module run another's code. A module's own packages are not counted (importing ``a.b.c`` runs
``a.b`` first, whoever asks), nor a name passed on as data (``--pyargs simacc.properties``).
"""

import ast
from pathlib import Path

import simacc

ROOT = Path(simacc.__file__).resolve().parent.parent
FOLDERS = {"simacc": ROOT / "simacc", "simacc.properties": ROOT / "properties", "simacc.strategies": ROOT / "strategies"}
ROOMS = ("config", "processes", "model", "call", "sessions", "judging", "plugin")  # top to bottom
ABOVE_THE_HARNESS = ("simacc.properties", "simacc.strategies", "simacc.commands", "simacc.zoo")


def modules():
    """``{dotted name: path}`` of every module of simacc (its subpackages' folders included)."""
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports(name, path, known):
    """The modules of ``known`` that module ``name`` (at ``path``) depends on."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known.keys()
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and ":" in node.value:
            found.add(node.value.partition(":")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args \
                and isinstance(node.args[0], ast.Constant):
            found.add(node.args[0].value)
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return (found & known.keys()) - ancestors - {name}


def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def room(name):
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["simacc", "harness"] else None


def test_no_module_takes_part_in_an_import_circle():
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_each_room_of_the_harness_imports_only_the_rooms_above_it_and_nothing_above_the_harness():
    wrong = []
    for name, deps in graph().items():
        here = room(name)
        if here is None:
            continue
        for dep in deps:
            there = room(dep)
            if dep.startswith(ABOVE_THE_HARNESS) or (there is not None and ROOMS.index(there) > ROOMS.index(here)):
                wrong.append(f"{name} -> {dep}")
    assert wrong == []


def test_every_room_is_listed_documented_and_under_a_quarter_of_the_code():
    harness = ROOT / "simacc" / "harness"
    folders = sorted(p.name for p in harness.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(ROOMS)
    assert not [p.name for p in harness.glob("*.py") if p.name != "__init__.py"], "a module outside every room"
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    total = sum(lines.values())
    for name in ROOMS:
        package = f"simacc.harness.{name}"
        assert (harness / name / "__init__.py").read_text(encoding="utf-8").startswith('"""'), f"{package}: no docstring"
        size = sum(n for module, n in lines.items() if module == package or module.startswith(package + "."))
        assert size <= total / 4, f"{package} holds {size} of {total} lines"
