"""The contract document ships with the package, and every ``CONTRACT.md §N.M`` that the
code cites names one of its headings (failure messages cite sections by number)."""

import re
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"CONTRACT\.md §(\d+(?:\.\d+)?)")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)


def contract_text():
    return (files("simacc.contract") / "CONTRACT.md").read_text(encoding="utf-8")


def missing_sections(sources, headings):
    """``(path, section)`` for each citation in ``sources`` (path -> text) not in ``headings``."""
    return sorted({(path, n) for path, text in sources.items() for n in CITATION.findall(text)} - {
        (path, n) for path in sources for n in headings})


def test_the_contract_ships_in_the_package_with_numbered_sections():
    headings = set(HEADING.findall(contract_text()))
    assert {"1", "4", "4.0", "4.6", "12"} <= headings, sorted(headings)


def test_a_citation_of_a_missing_section_is_found():
    sources = {"x.py": "see CONTRACT.md §4.5 and CONTRACT.md §99.9, CONTRACT.md §7"}
    assert missing_sections(sources, {"4.5", "7"}) == [("x.py", "99.9")]


def test_every_section_the_code_cites_is_a_heading_of_the_contract():
    headings = set(HEADING.findall(contract_text()))
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
               for d in ("simacc", "properties", "strategies") for p in (ROOT / d).rglob("*.py")}
    missing = missing_sections(sources, headings)
    assert not missing, f"cited sections missing from CONTRACT.md: {missing}"


def contract_rows(text):
    """``{name: row}`` of the contracts table of docs/contracts.md."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", text, re.MULTILINE)}


def test_every_contract_record_has_its_row_in_docs_contracts_naming_its_reference():
    from simacc import strategies as sx

    rows = contract_rows((ROOT / "docs" / "contracts.md").read_text(encoding="utf-8"))
    assert sorted(rows) == sorted(c.name for c in sx.CONTRACTS)
    wrong = [c.name for c in sx.CONTRACTS if f"`{c.spec}`" not in rows[c.name]]
    assert not wrong, f"rows not naming their record's reference: {wrong}"
