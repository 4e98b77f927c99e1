"""A robot's table for its real recordings (the robot file's `lerobot:` block): which column of a recording becomes
which x2 action value, and how its unit maps onto x2's (rad for a joint, 0 closed .. 1 open for a gripper).

Every unit is an affine map, x2 = value * scale + shift, computed in float64 and stored as float32: radians as they
are (scale = sign), degrees (sign * pi / 180), servo ticks (sign * 2 pi / ticks_per_turn about the `zero` count),
and a gripper's range [closed, open] stretched onto [0, 1]. `x2 import lerobot` applies it (x2/ingest)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from x2.base.arrays import Floats
from x2.envspec.action import GRIPPER_SUFFIX
from x2.envspec.schema import RecordingLayoutFile
from x2.envspec.source import Fragment


@dataclass(frozen=True)
class ColumnMap:
    """One recording column -> one x2 action value."""

    name: str  # in the recording
    target: str  # the x2 action name
    unit: str  # rad, deg, ticks, range (as the robot file says)
    scale: float
    shift: float

    def describe(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RecordingTable:
    """A robot's recording layout, checked against its action names."""

    source: str  # where the numbers come from, in words
    action_feature: str  # the recording's commanded joints (LeRobot's `action`)
    state_feature: str  # its measured joints (LeRobot's `observation.state`)
    columns: tuple[ColumnMap, ...]  # in the recording's column order
    action_names: tuple[str, ...]  # x2's, in x2's order

    @property
    def names(self) -> tuple[str, ...]:
        """The recording's column names, in its order."""
        return tuple(c.name for c in self.columns)

    def convert(self, values: Floats, names: Sequence[str]) -> Floats:
        """(T, n) recording values whose columns are `names` (the table's, in any order) -> (T, A) float32 in x2's
        action order and units."""
        rows = np.asarray(values, dtype=np.float64)
        where = {name: i for i, name in enumerate(names)}
        out = np.empty((rows.shape[0], len(self.action_names)), dtype=np.float64)
        slot = {name: i for i, name in enumerate(self.action_names)}
        for col in self.columns:
            out[:, slot[col.target]] = rows[:, where[col.name]] * col.scale + col.shift
        return out.astype(np.float32)

    def describe(self) -> dict[str, Any]:
        """The table as an imported episode records it (its `recording` attr)."""
        return {"source": self.source, "action": self.action_feature, "state": self.state_feature,
                "columns": [c.describe() for c in self.columns]}


def compile_table(layout: RecordingLayoutFile, action_names: Sequence[str], frag: Fragment) -> RecordingTable:
    """Check that the columns name every action value once (a gripper by a range, a joint by an angle) and make
    each one's affine map."""
    key = ("lerobot", "columns")
    seen_names: set[str] = set()
    targets: dict[str, int] = {}
    columns: list[ColumnMap] = []
    for i, col in enumerate(layout.columns):
        target = col.to or col.name
        if col.name in seen_names:
            raise frag.error((*key, i, "name"), repr(col.name), "each recording column once")
        if target not in action_names:
            raise frag.error((*key, i, "to"), repr(target), f"an action name of this robot: {', '.join(action_names)}")
        if target in targets:
            raise frag.error((*key, i, "to"), repr(target), f"each action name once (column {targets[target]} has it)")
        gripper = target.endswith(GRIPPER_SUFFIX)
        if gripper != (col.unit == "range"):
            found = f"unit {col.unit} for {'a gripper' if gripper else 'a joint'}"
            allowed = "unit range [closed, open] (x2's opening 0..1)" if gripper else "rad, deg or ticks"
            raise frag.error((*key, i, "unit"), found, allowed)
        seen_names.add(col.name)
        targets[target] = i
        columns.append(ColumnMap(col.name, target, col.unit, *_affine(col.unit, col.sign, col.offset,
                                                                      col.ticks_per_turn, col.zero, col.range)))
    missing = [n for n in action_names if n not in targets]
    if missing:
        raise frag.error(key, f"no column for {', '.join(missing)}", "one column for every action name")
    return RecordingTable(layout.source, layout.action, layout.state, tuple(columns), tuple(action_names))


def _affine(unit: str, sign: int, offset: float, ticks_per_turn: int | None, zero: float,
            span: tuple[float, float] | None) -> tuple[float, float]:
    if unit == "rad":
        return float(sign), float(offset)
    if unit == "deg":
        return sign * math.pi / 180.0, float(offset)
    if unit == "ticks":
        assert ticks_per_turn is not None  # (the schema holds unit and ticks_per_turn together)
        scale = sign * 2.0 * math.pi / ticks_per_turn
        return scale, float(offset) - zero * scale
    assert span is not None
    closed, opened = span
    return 1.0 / (opened - closed), -closed / (opened - closed)
