"""A robot's table for its real recordings (the robot file's `lerobot:` block): which column of a recording becomes
which x2 action value, and how its unit maps onto x2's (rad for a joint, 0 closed .. 1 open for a gripper).

Every unit is an affine map, x2 = value * scale + shift, computed in float64 and stored as float32: radians as they
are (scale = sign), degrees (sign * pi / 180), servo ticks (sign * 2 pi / ticks_per_turn about the `zero` count),
and a gripper's range [closed, open] stretched onto [0, 1]. `x2 import lerobot` applies it (x2/ingest).

Every robot also reads x2's own LeRobot export back (`own_export_table`), with no table in its file: its action is
already x2's, and its state is the recorded joints, each gripper's first finger joint read as the opening."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from x2.base.arrays import Floats
from x2.envspec.action import GRIPPER_SUFFIX
from x2.envspec.schema import RecordingColumnFile, RecordingLayoutFile
from x2.envspec.source import Fragment

if TYPE_CHECKING:
    from x2.envspec.env import RobotSpec

# the features x2's own LeRobot export writes (x2/export/lerobot_plan.py), read back by `own_export_table`
ACTION_FEATURE, STATE_FEATURE = "action", "observation.state"


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
    columns: tuple[ColumnMap, ...]  # the commanded joints', in the recording's column order
    action_names: tuple[str, ...]  # x2's, in x2's order
    state_columns: tuple[ColumnMap, ...] = ()  # the measured joints', where they differ (empty: `columns`)
    ignored: tuple[str, ...] = ()  # recording columns deliberately not imported

    @property
    def names(self) -> tuple[str, ...]:
        """The recording's commanded columns, in its order."""
        return tuple(c.name for c in self.columns)

    @property
    def measured(self) -> tuple[ColumnMap, ...]:
        return self.state_columns or self.columns

    def names_of(self, feature: str) -> tuple[str, ...]:
        """The columns the table reads from `feature` (its action or its state feature)."""
        return tuple(c.name for c in (self.measured if feature == self.state_feature else self.columns))

    def convert(self, values: Floats, names: Sequence[str], measured: bool = False) -> Floats:
        """(T, n) recording values whose columns are `names` (the table's, in any order, and ignored ones) -> (T, A)
        float32 in x2's action order and units; `measured`: through the state feature's columns."""
        rows = np.asarray(values, dtype=np.float64)
        where = {name: i for i, name in enumerate(names)}
        out = np.empty((rows.shape[0], len(self.action_names)), dtype=np.float64)
        slot = {name: i for i, name in enumerate(self.action_names)}
        for col in self.measured if measured else self.columns:
            out[:, slot[col.target]] = rows[:, where[col.name]] * col.scale + col.shift
        return out.astype(np.float32)

    def describe(self) -> dict[str, Any]:
        """The table as an imported episode records it (its `recording` attr)."""
        out: dict[str, Any] = {"source": self.source, "action": self.action_feature, "state": self.state_feature,
                               "columns": [c.describe() for c in self.columns]}
        if self.state_columns:
            out["state_columns"] = [c.describe() for c in self.state_columns]
        if self.ignored:
            out["ignore"] = list(self.ignored)
        return out


def compile_table(layout: RecordingLayoutFile, action_names: Sequence[str], frag: Fragment) -> RecordingTable:
    """Check that the columns (and the state's own, when given) name every action value once (a gripper by a range,
    a joint by an angle) and make each one's affine map."""
    columns = _compile_columns(layout.columns, action_names, frag, ("lerobot", "columns"))
    state = () if layout.state_columns is None else \
        _compile_columns(layout.state_columns, action_names, frag, ("lerobot", "state_columns"))
    for i, name in enumerate(layout.ignore):
        if name in {c.name for c in (*columns, *state)}:
            raise frag.error(("lerobot", "ignore", i), repr(name), "a recording column the table does not map")
    return RecordingTable(layout.source, layout.action, layout.state, columns, tuple(action_names), state,
                          tuple(layout.ignore))


def _compile_columns(given: Sequence[RecordingColumnFile], action_names: Sequence[str], frag: Fragment,
                     key: tuple[str, str]) -> tuple[ColumnMap, ...]:
    seen_names: set[str] = set()
    targets: dict[str, int] = {}
    columns: list[ColumnMap] = []
    for i, col in enumerate(given):
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
    return tuple(columns)


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


OWN_EXPORT_SOURCE = "x2's own LeRobot export (x2 export lerobot): action in x2's layout, observation.state the " \
                    "recorded joints, each gripper's opening read from its first finger joint"


def own_export_table(robot: RobotSpec) -> RecordingTable | None:
    """The table that reads what `x2 export lerobot` wrote for `robot` (its feature names are x2's own): action
    as it is; the measured opening of a gripper from its first finger joint, whose position for opening u is
    closed + u (open - closed) on a slide-driven gripper. None for a gripper of another drive (a linkage's finger
    is no affine map of the opening)."""
    g = robot.gripper
    if g.drive != "slide" or g.open_ctrl == g.closed_ctrl:
        return None
    columns, state, ignored = [], [], []
    grippers = {f"{a.name}{GRIPPER_SUFFIX}": a for a in robot.arms}
    for name in robot.action_names:
        arm = grippers.get(name)
        if arm is None:
            columns.append(ColumnMap(name, name, "rad", 1.0, 0.0))
            state.append(ColumnMap(name, name, "rad", 1.0, 0.0))
            continue
        columns.append(ColumnMap(name, name, "range", 1.0, 0.0))
        finger, *others = arm.gripper_joints
        scale, shift = _affine("range", 1, 0.0, None, 0.0, (g.closed_ctrl, g.open_ctrl))
        state.append(ColumnMap(finger, name, "range", scale, shift))
        ignored += others
    return RecordingTable(OWN_EXPORT_SOURCE, ACTION_FEATURE, STATE_FEATURE, tuple(columns), robot.action_names,
                          tuple(state), tuple(ignored))
