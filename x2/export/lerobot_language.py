"""x2's subtask segments as LeRobot 0.6 `language_persistent` rows (plain dicts; no LeRobot import here).

LeRobot 0.6 reads a subtask as a persistent row that becomes active at its `timestamp` and stays active
until the next row of the same style. One row per segment start, stamped with that frame's own
timestamp (float32 of frame_index / fps, bit-equal to LeRobot's `timestamp` column), so
`language_render.active_at(frame timestamp, style="subtask")` gives the segment of every frame. Every
frame of an episode carries the episode's full list (LeRobot's layout). "done" and "unfinished" tails
get rows too: otherwise the subtask before them would look active until the end.

With per-arm labels a frame's text names what every arm works on (`frame_subtasks`): the arms' subtask
names joined " + " in arm order, each name once ("open_door + pick_fruit" while the left arm opens the door
and the right one picks the fruit), and one name when the arms agree. Without per-arm labels (older
episodes, one arm) it is x2's single label, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SUBTASK_STYLE = "subtask"
ARM_JOIN = " + "


def frame_timestamp(frame_index: int, fps: int) -> float:
    """The timestamp LeRobot stores for `frame_index` (its float32 column), as a Python float."""
    return float(np.float32(frame_index / fps))


def frame_subtasks(per_arm: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """Per frame, the distinct subtask names of the arms (`per_arm[a][t]`), in arm order, joined " + "."""
    return tuple(ARM_JOIN.join(dict.fromkeys(names)) for names in zip(*per_arm, strict=True))


def subtask_rows(labels: Sequence[str], fps: int) -> list[dict[str, object]]:
    """One persistent row per run of equal labels, at the run's first frame."""
    rows: list[dict[str, object]] = []
    for t, name in enumerate(labels):
        if t == 0 or name != labels[t - 1]:
            rows.append({"role": "assistant", "content": str(name), "style": SUBTASK_STYLE,
                         "timestamp": frame_timestamp(t, fps), "camera": None, "tool_calls": None})
    return rows
