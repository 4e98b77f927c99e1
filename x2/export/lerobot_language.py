"""x2's subtask segments as LeRobot 0.6 `language_persistent` rows (plain dicts; no LeRobot import here).

LeRobot 0.6 reads a subtask as a persistent row that becomes active at its `timestamp` and stays active
until the next row of the same style. One row per segment start, stamped with that frame's own
timestamp (float32 of frame_index / fps, bit-equal to LeRobot's `timestamp` column), so
`language_render.active_at(frame timestamp, style="subtask")` gives the segment of every frame. Every
frame of an episode carries the episode's full list (LeRobot's layout). "done" and "unfinished" tails
get rows too: otherwise the subtask before them would look active until the end.

With per-arm labels a frame's text names what every arm works on (`subtask_texts`): the arms' subtask
names joined " + " in arm order, each name once ("open_door + pick_fruit" while the left arm opens the door
and the right one picks the fruit), one name when the arms agree, and an arm that is done left out while
another works. Without per-arm labels (older
episodes, one arm) it is x2's single label, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from x2.labeling import DONE

SUBTASK_STYLE = "subtask"
ARM_JOIN = " + "


def frame_timestamp(frame_index: int, fps: int) -> float:
    """The timestamp LeRobot stores for `frame_index` (its float32 column), as a Python float."""
    return float(np.float32(frame_index / fps))


def subtask_texts(per_arm: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """Per frame, the distinct subtask names of the arms (`per_arm[a][t]`), in arm order, joined " + "; an arm
    that is done (all its nodes completed, or none on it: the idle arm of a one-arm task) is left out while
    another still works, so a one-arm task's text is that arm's subtask, as without per-arm labels."""
    out = []
    for names in zip(*per_arm, strict=True):
        working = [n for n in dict.fromkeys(names) if n != DONE] or [DONE]
        out.append(ARM_JOIN.join(working))
    return tuple(out)


def subtask_rows(labels: Sequence[str], fps: int) -> list[dict[str, object]]:
    """One persistent row per run of equal labels, at the run's first frame."""
    rows: list[dict[str, object]] = []
    for t, name in enumerate(labels):
        if t == 0 or name != labels[t - 1]:
            rows.append({"role": "assistant", "content": str(name), "style": SUBTASK_STYLE,
                         "timestamp": frame_timestamp(t, fps), "camera": None, "tool_calls": None})
    return rows
