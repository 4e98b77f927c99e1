"""A robot file's `lerobot:` table (x2/envspec/recording_table.py): every action name once, a gripper by a range, a
joint by an angle, each unit's fields only with it; a mistake is one line naming the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from x2.base.errors import X2Error
from x2.envspec.robot import load_robot

ALOHA = Path(__file__).parents[1] / "x2" / "robots" / "aloha.yaml"
JOINTS = ["waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate"]


def _robot(tmp_path: Path, columns: list[str]) -> Path:
    path = tmp_path / "lab-aloha.yaml"
    rows = "\n".join(f"    - {c}" for c in columns)
    path.write_text(f"include: {ALOHA}\nname: lab-aloha\nlerobot:\n  columns:\n{rows}\n")
    return path


def _aloha_columns(gripper: str = "unit: range, range: [0.0, 1.0]") -> list[str]:
    out = []
    for arm in ("left", "right"):
        out += [f"{{name: {arm}_{j}}}" for j in JOINTS] + [f"{{name: {arm}_gripper, {gripper}}}"]
    return out


def test_the_builtin_aloha_table_is_lerobots_layout_in_x2_units() -> None:
    table = load_robot("aloha").recording
    assert table is not None and table.names == load_robot("aloha").model.action_names
    assert (table.action_feature, table.state_feature) == ("action", "observation.state")
    rows = np.array([[0.5] * 14, [-0.25] * 14], np.float32)
    assert np.array_equal(table.convert(rows, table.names), rows)  # rad and 0..1 already: untouched
    reordered = list(reversed(table.names))
    assert np.array_equal(table.convert(rows[:, ::-1], reordered), rows)  # columns found by name


@pytest.mark.parametrize(("columns", "found"), [
    (_aloha_columns()[:-1], r"lerobot\.columns: found no column for right_gripper; allowed: one column for every"),
    (_aloha_columns("unit: rad"), r"lerobot\.columns\[6\]\.unit: found unit rad for a gripper; allowed: unit range"),
    ([*_aloha_columns()[:-1], "{name: right_claw, to: right_waist}"],
     r"lerobot\.columns\[13\]\.to: found 'right_waist'; allowed: each action name once \(column 7 has it\)"),
    ([*_aloha_columns()[:-1], "{name: right_claw}"], r"lerobot\.columns\[13\]\.to: found 'right_claw'; allowed: an "
                                                     "action name of this robot"),
    (["{name: left_waist, unit: ticks}", *_aloha_columns()[1:]], r"ticks_per_turn is given with unit ticks"),
    (_aloha_columns("unit: range, range: [0.5, 0.5]"), r"closed and open must differ"),
])
def test_a_bad_table_is_one_line_naming_the_file(columns: list[str], found: str, tmp_path: Path) -> None:
    path = _robot(tmp_path, columns)
    with pytest.raises(X2Error, match=found) as err:
        load_robot(str(path))
    assert str(path) in str(err.value) and "\n" not in str(err.value)
