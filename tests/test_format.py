"""x2.format is the one place that spells the on-disk format, and docs/format.md describes it.

Two checks on the source tree, not on data: every name the format module defines (folders, files, paths
inside an episode, root attributes) is described in docs/format.md, and no other module of x2 spells one
of them as a string of its own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from x2 import format as fmt

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "x2"
FORMAT_PACKAGE = PACKAGE / "format"


def _format_names() -> dict[str, str]:
    """Constant name -> value of every string the format module defines at module level."""
    return {name: value for name, value in vars(fmt).items()
            if name.isupper() and isinstance(value, str) and not name.startswith("_")}


# Names that are also ordinary words elsewhere in x2 (a report's "episodes" or "master_seed" key, a spec's
# "action" layout, a table column "task", LeRobot's "episode_index" column, robomimic's "env_args"): for
# these only a read of an episode counts, see _episode_reads.
GENERIC = {fmt.TIMESTAMPS, fmt.ACTION, fmt.STATES, fmt.OBSERVATIONS, fmt.LABELS, fmt.DAG, fmt.DEVICE, fmt.TIMING,
           fmt.AUGMENTATION, fmt.EPISODES_DIR, fmt.TASK_ATTR, fmt.ROBOT_ATTR, fmt.FPS_ATTR, fmt.SEED_ATTR,
           fmt.SOURCE_ATTR, fmt.SPLIT_ATTR, fmt.SUCCESS_ATTR, fmt.WORLD_ATTR, fmt.LAYOUT_ATTR, fmt.ASSETS_ATTR,
           fmt.INSTRUCTION_ATTR, fmt.VERSIONS_ATTR, fmt.DEVICE_ATTR, fmt.SLOT_ATTR, fmt.NAMES_ATTR,
           fmt.REJECTED_ATTR, fmt.EPISODE_SUFFIX, fmt.IMAGE_STREAM_PREFIX, fmt.MASTER_SEED_ATTR, fmt.INDEX_ATTR,
           fmt.ENV_ARGS_ATTR, fmt.RECORDING_ATTR, fmt.POLICY_ATTR,
           fmt.REAL_SOURCE, fmt.CALIBRATION_ATTR}  # (policy, real: also x2 eval correlate's CSV columns;
# calibration: a leader arm has one too)
# Episode reads: ep[NAME] (a read, not a write into another format's attrs), NAME in ep,
# ep.<method>(NAME) for the reader's methods, attrs.get(NAME).
_READERS = {"dataset", "numeric", "json_attr", "dataset_attrs", "text", "_attr"}
_EPISODE_NAMES = {"ep", "episode", "child", "parent", "src", "attrs"}


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        if node.attr == "attrs":
            return "attrs"
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _episode_reads(tree: ast.AST) -> list[ast.Constant]:
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.slice, ast.Constant) and _base_name(node.value) in _EPISODE_NAMES:
            found.append(node.slice)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and \
                any(_base_name(c) in _EPISODE_NAMES for c in node.comparators):
            found.append(node.left)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and \
                isinstance(node.args[0], ast.Constant) and (
                    node.func.attr in _READERS or (node.func.attr == "get" and _base_name(node.func.value) == "attrs")):
            found.append(node.args[0])
    return found


def _spellings(path: Path, names: dict[str, str]) -> list[str]:
    values = set(names.values())
    distinctive = values - GENERIC
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            value = node.value
            if value in distinctive or any(value.startswith(v + "/") for v in distinctive if "/" in v):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {value!r}")
    for node in _episode_reads(tree):
        if isinstance(node.value, str) and node.value in GENERIC:
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r} (an episode read)")
    return out


def test_no_module_but_the_format_spells_a_format_name() -> None:
    names = _format_names()
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if FORMAT_PACKAGE not in path.parents
             for hit in _spellings(path, names)]
    assert not found, "use x2.format's names instead:\n" + "\n".join(found)


def test_the_check_finds_a_spelled_path(tmp_path: Path) -> None:
    """The scanner itself: a module spelling a path, a folder or an episode read is caught."""
    sample = tmp_path / "x2" / "sample.py"
    sample.parent.mkdir()
    sample.write_text('def f(ep, root):\n    """observations/qpos in a docstring is prose."""\n'
                      '    a = ep["observations/qpos"]\n    b = root / ".inprogress"\n'
                      '    c = ep.numeric("states", 2)\n    d = {"action": 1}\n    return a, b, c, d\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        hits = _spellings(sample, _format_names())
    finally:
        ROOT = saved
    assert [h.split(": ", 1)[1] for h in hits] == ["'observations/qpos'", "'.inprogress'",
                                                   "'states' (an episode read)"]


@pytest.mark.parametrize("name", sorted(_format_names()))
def test_every_format_name_is_described_in_docs(name: str) -> None:
    value = _format_names()[name]
    docs = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    if name == "IMAGE_STREAM_PREFIX":  # the writer's stream name for a camera, not a name on disk
        return
    # Backquoted in the text, or a word of the folder listing at the top.
    word = re.search(rf"(^|[\s/_0-9]){re.escape(value)}(\s|$)", docs, re.M)
    described = word or f"`{value}" in docs or f"/{value}" in docs or f"{value}/" in docs
    assert described, f"docs/format.md does not describe {name} = {value!r}"
