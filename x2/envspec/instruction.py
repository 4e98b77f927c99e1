"""Instruction templates: checked once at compile time, drawn and filled in at every reset.

A template is text with placeholders: `{OBJECT}` names the asset drawn for that scene object (an "apple" or a
"lemon" for `{fruit}`): its `display` name when its asset file gives one ("red mug"), else the asset's name.
`{OBJECT.row}` and `{OBJECT.column}` say where the object stands on its region's grid of slots. Rows count from
the robot outward (the robot stands at the table's -x edge, so row 1 has the smallest x); columns count from the
robot's left to its right (largest y first). A task's templates are its `instruction` and its train
paraphrases; a run in an evaluation scene variant draws from the task's eval paraphrases instead, when it has
any, so held-out wording is never trained on.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

import numpy as np

from x2.envspec.env import ObjectInstance, Region, TaskSpec
from x2.envspec.source import Fragment, Path_

__all__ = ["POSITION_FIELDS", "check_template", "fill", "grid_position", "pick_template", "templates_for"]

POSITION_FIELDS = ("row", "column")
_MM = 3  # slots closer than a millimetre share a row (or a column)


def check_template(frag: Fragment, key: Path_, text: str, objects: Sequence[ObjectInstance]) -> None:
    """Placeholders are bare `{OBJECT}` names or `{OBJECT.row}` / `{OBJECT.column}` of an object placed on
    slots: each reset fills them in, so a conversion, a format spec or an index (`{fruit!r}`,
    `{fruit:>9999999}`, `{0}`) is refused."""
    by_name = {o.name: o for o in objects}
    gridded = [o.name for o in objects if o.region is not None and o.region.slots]
    allowed = "placeholders naming scene objects: " + (", ".join(by_name) or "none") + (
        "; OBJECT.row or OBJECT.column for an object on slots: " + ", ".join(gridded) if gridded else "")
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:  # a lone brace
        raise frag.error(key, f"{exc} in {text!r}", "text with {OBJECT} placeholders, literal braces doubled "
                         "({{ }})") from None
    for _, field, format_spec, conversion in parts:
        if field is None:
            continue
        name, _, position = field.partition(".")
        shown = field + (f"!{conversion}" if conversion else "") + (f":{format_spec}" if format_spec else "")
        if name not in by_name or format_spec or conversion or (position and name not in gridded) or (
                position and position not in POSITION_FIELDS):
            raise frag.error(key, f"placeholder {{{shown}}}", allowed)


def templates_for(task: TaskSpec, split: str) -> tuple[str, ...]:
    """The templates a reset in a scene of `split` draws from."""
    if split == "eval" and task.eval_paraphrases:
        return task.eval_paraphrases
    return (task.instruction, *task.paraphrases)


def pick_template(task: TaskSpec, split: str, rng: np.random.Generator) -> str:
    """One template; the draw is made (and `rng` advanced) only when there is a choice, so a task without
    paraphrases draws nothing."""
    options = templates_for(task, split)
    return options[0] if len(options) == 1 else options[int(rng.integers(len(options)))]


def grid_position(region: Region, x: float, y: float) -> tuple[int, int]:
    """(row, column), both from 1, of the slot of `region` nearest to (x, y)."""
    sx, sy = min(region.slots, key=lambda s: (s[0] - x) ** 2 + (s[1] - y) ** 2)
    rows = sorted({round(s[0], _MM) for s in region.slots})
    columns = sorted({round(s[1], _MM) for s in region.slots}, reverse=True)
    return rows.index(round(sx, _MM)) + 1, columns.index(round(sy, _MM)) + 1


def fill(template: str, objects: Sequence[ObjectInstance], assets: Mapping[str, str],
         positions: Mapping[str, tuple[float, float]]) -> str:
    """The template with each placeholder replaced: the drawn assets (`assets`: object -> asset name) by their
    display names (else their names), and grid positions from `positions` (object -> world x, y) for `.row` /
    `.column`."""
    by_name = {o.name: o for o in objects}
    out = []
    for literal, field, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if field is None:
            continue
        name, _, position = field.partition(".")
        if not position:
            drawn = assets[name]
            out.append(next((a.said for a in by_name[name].candidates if a.name == drawn), drawn))
            continue
        region = by_name[name].region
        assert region is not None and region.slots  # check_template refused anything else
        row, column = grid_position(region, *positions[name])
        out.append(str(row if position == "row" else column))
    return "".join(out)
