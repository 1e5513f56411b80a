"""The code's structure: the import rules are import-linter contracts in ``pyproject.toml``
(``[tool.importlinter]``: no import circles; the harness's rooms in the order
``simacc/harness/__init__.py`` lists them; the contract below the harness; the harness importing
no properties, strategies, commands or zoo; the commands' two products, and the commands
themselves, importing nothing of each other), and this runs them.

import-linter finds a package's modules in its folder, and a checkout installed with ``-e`` keeps
``simacc.properties`` and ``simacc.strategies`` in folders of their own (``properties/``,
``strategies/``): the contracts run on the layout a wheel installs, ``simacc/`` with those two
inside it, made of links in a temporary folder. An import is any ``import`` statement, at the top
of a module or inside a function. What import-linter does not see, a ``"module:attribute"``
string (a fresh process's target, a contract's reference) and an ``importlib.import_module`` of
a literal name, is checked here: it may name only its own module, or the contract.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter import api

import simacc

ROOT = Path(simacc.__file__).resolve().parent.parent
FOLDERS = {"simacc": ROOT / "simacc", "simacc.properties": ROOT / "properties", "simacc.strategies": ROOT / "strategies"}


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


def test_the_import_contracts_are_kept(tmp_path):
    package = tmp_path / "simacc"
    package.mkdir()
    for entry in FOLDERS["simacc"].iterdir():
        (package / entry.name).symlink_to(entry)
    for name in ("properties", "strategies"):
        (package / name).symlink_to(ROOT / name)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    lint_imports = "from importlinter.cli import lint_imports_command; lint_imports_command()"  # the lint-imports command
    done = subprocess.run([sys.executable, "-c", lint_imports, "--config", ROOT / "pyproject.toml", "--no-cache",
                           "--no-logo"], capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": path})
    if done.returncode != 0:
        pytest.fail(done.stdout + done.stderr, pytrace=False)


def test_the_rooms_contract_lists_the_rooms_as_the_harness_does():
    """Its layers, top (importing) first, are the rooms ``simacc/harness/__init__.py`` lists, last first."""
    listed = [line.split("`~simacc.harness.")[1].split("`")[0]
              for line in (FOLDERS["simacc"] / "harness" / "__init__.py").read_text(encoding="utf-8").splitlines()
              if line.startswith("* :mod:`~simacc.harness.")]
    contracts = {c["id"]: c for c in api.read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]}
    assert contracts["rooms"]["layers"] == listed[::-1]


def test_every_room_is_documented_and_under_a_quarter_of_the_code():
    harness = FOLDERS["simacc"] / "harness"
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    total = sum(lines.values())
    for room in (p.name for p in harness.iterdir() if (p / "__init__.py").is_file()):
        package = f"simacc.harness.{room}"
        assert (harness / room / "__init__.py").read_text(encoding="utf-8").startswith('"""'), f"{package}: no docstring"
        size = sum(n for module, n in lines.items() if module == package or module.startswith(package + "."))
        assert size <= total / 4, f"{package} holds {size} of {total} lines"


NAMED = re.compile(r"""["'](simacc[\w.]*):\w+["']|import_module\(\s*["'](simacc[\w.]*)["']""")


def named(path):
    """The modules that ``path``'s ``"module:attribute"`` strings and ``import_module`` calls of a
    literal name name."""
    return {a or b for a, b in NAMED.findall(path.read_text(encoding="utf-8"))}


def test_a_module_named_by_a_string_is_its_own_or_the_contract():
    """(A module's own packages run before it, whoever names them: ``"simacc:..."`` adds nothing.)"""
    known = modules()
    wrong = [f"{name} -> {other}" for name, path in known.items() for other in named(path) & known.keys()
             if not (name == other or name.startswith(other + ".")
                     or other.startswith("simacc.contract") and not name.startswith("simacc.contract"))]
    assert wrong == []
