"""A user's task started from another: `x2 tasks new NAME --from TASK` writes ./specs/tasks/NAME.yaml.

The new file is the source task's YAML as written (its comments kept), its `name:` changed, under a header
saying what to edit and how to check it. It is written whole or not at all, and never over a file that is there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import SpecError
from x2.envspec import catalog
from x2.envspec.schema import NAME_PATTERN
from x2.envspec.source import display_path
from x2.files.staging import TEMP, staging

HEADER = """\
# {name}: your own task, started from the task {source} (`x2 tasks new {name} --from {source}`).
# What to edit:
#   instruction  the words recorded with every episode; {{OBJECT}} names a scene object (its display name)
#   scene        a built-in scene (x2/assets/scenes) or your own (./specs/scenes/NAME.yaml)
#   robot        the robot it usually runs with (x2 robots ls)
#   nodes        subtasks: success/failure predicates (x2 tasks predicates) and the skill synthesis runs
#                for each (x2 tasks skills)
#   edges        which subtask comes before which
# Check it with `x2 tasks show {name}`, then `x2 synth --task {name} -n 10` (docs/authoring.md).
"""


@dataclass(frozen=True)
class NewTask:
    path: Path  # the file written
    source: Path  # the task file it was copied from


def new_task(name: str, source: str, scene: str | None = None, robot: str | None = None) -> NewTask:
    """Write ./specs/tasks/NAME.yaml from the task `source` (a name or a path), in `scene` and run by `robot` if
    given (names: built-in or ./specs; a robot may be NAME+GRIPPER); refuse a name that is taken."""
    where = f"x2 tasks new {name}"
    if not re.fullmatch(NAME_PATTERN, name) or name.startswith(".") or name.endswith((".yaml", ".yml")):
        raise SpecError(where, None, "NAME", repr(name), "a name of letters, digits, '_', '-' and '.' (not first; "
                        "no .yaml: x2 adds it)")
    if name in catalog.names("tasks"):
        taken = catalog.locate("tasks", name)
        raise SpecError(where, None, "NAME", f"{name!r}, a task already ({display_path(taken)})",
                        "a name no task has (x2 tasks ls lists them)")
    src = catalog.locate("tasks", source)
    text = src.read_text(encoding="utf-8")
    named = _set(text, "name", name)
    if scene is not None:
        catalog.locate("scenes", scene)  # (an unknown scene: the line listing those there are)
        named = _set(named, "scene", scene)
    if robot is not None:
        catalog.locate("robots", robot.split("+", 1)[0])  # (an unknown robot: the line listing those there are)
        named = _set(named, "robot", robot)
    target = catalog.user_dir("tasks") / f"{name}.yaml"

    def refuse(path: Path) -> None:
        if path.exists():
            raise SpecError(where, None, "NAME", f"{display_path(path)}, which is there already",
                            "a file that does not exist (x2 never writes over yours)")

    refuse(target)
    with staging(target, TEMP, existing="refuse", refuse=refuse, make_parent=True) as tmp:
        tmp.write_text(HEADER.format(name=name, source=src.stem) + named, encoding="utf-8")
    return NewTask(target, src)


def _set(text: str, key: str, value: str) -> str:
    """`text` with its top-level (not indented) `key:` line set to `value`; added first when it has none (the
    value came from an included file: this file's own overrides it)."""
    out, count = re.subn(rf"^{key}:.*$", f"{key}: {value}", text, count=1, flags=re.MULTILINE)
    return out if count else f"{key}: {value}\n{text}"
