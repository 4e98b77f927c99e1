"""docs/architecture.md against the code: the layer table is pyproject's layers contract, every package of x2 has its
row, every path the glossary points to exists, and no public name is defined in two modules of x2 (one word, one
meaning at the surface a reader greps for)."""

from __future__ import annotations

import ast
import re
import tomllib
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "architecture.md").read_text()
# Names a module may define although another does too: program entry points.
ENTRY_POINTS = {"main"}


def contract_layers() -> list[set[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in re.split(r"[|:]", line)} for line in reversed(layers["layers"])]


def section(title: str) -> str:
    start = DOC.index(f"## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start:end if end != -1 else len(DOC)]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the markdown tables in `text` (the header row and the rule under it left out)."""
    lines = text.splitlines()
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for i, line in enumerate(lines)
            if line.startswith("| ") and i + 1 < len(lines) and not lines[i + 1].startswith("|---")
            and not line.startswith("|---")]


def test_the_layer_table_is_the_layers_contract() -> None:
    layers = contract_layers()
    documented: dict[str, int] = {}
    for row in table_rows(section("Layers")):
        if row[1] == "-":
            continue
        for name in re.findall(r"`x2/(\w+)`", row[0]):
            documented[name] = int(row[1])
    expected = {name: number for number, names in enumerate(layers, 1) for name in names if name != "__main__"}
    assert documented == expected


def test_every_package_of_x2_has_a_row() -> None:
    packages = {p.name for p in (REPO / "x2").iterdir() if (p / "__init__.py").is_file()}
    rows = {name for row in table_rows(section("Layers")) for name in re.findall(r"`x2/(\w+)`", row[0])}
    assert packages == rows


def test_the_glossary_points_at_files_that_exist() -> None:
    missing = []
    rows = table_rows(section("Glossary"))
    assert len(rows) > 20
    for row in rows:
        for path in re.findall(r"`(x2/[\w/.]+)`", row[-1]):
            if not (REPO / path.rstrip("/")).exists():
                missing.append(f"{row[0]}: {path}")
    assert not missing


def test_no_public_name_is_defined_in_two_modules() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted((REPO / "x2").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and \
                    not node.name.startswith("_") and node.name not in ENTRY_POINTS:
                where[node.name].append(str(path.relative_to(REPO)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not twice


# Test files about x2 as a whole (or a doc of it) rather than one package.
WHOLE = {"test_chaos.py", "test_architecture_doc.py", "test_docs_authoring.py"}


def test_every_test_file_is_named_by_the_package_it_tests() -> None:
    """tests/test_<package>_<module or topic>.py: the tests of x2/<package>/<module>.py are found from its path."""
    packages = {p.name for p in (REPO / "x2").iterdir() if (p / "__init__.py").is_file()}
    stray = [p.name for p in (REPO / "tests").glob("test_*.py")
             if p.name not in WHOLE and not any(p.name == f"test_{pkg}.py" or p.name.startswith(f"test_{pkg}_")
                                                for pkg in packages)]
    assert not stray
