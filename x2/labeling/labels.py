"""Per-frame labels from completion events (report section 3.3.2 segment rule).

Pure functions of the runtime's record, so an offline re-label of a stored episode and the online
run produce the same arrays from the same events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

DONE = "done"
UNFINISHED = "unfinished"
UNFINISHED_INDEX = -1


def segment_owners(events: Sequence[tuple[str, int]], first_frame: int, n_frames: int,
                   success: bool) -> list[str]:
    """Label frames ``first_frame .. first_frame + n_frames - 1``.

    A frame belongs to the first event at or after it, so [t0, f1] -> v1, (f1, f2] -> v2, and a
    second event in the same frame as the first gets an empty segment. Frames after the last
    event are DONE when the task succeeded, else UNFINISHED. `events` must be in emission order.
    """
    tail = DONE if success else UNFINISHED
    owners: list[str] = []
    k = 0
    for t in range(first_frame, first_frame + n_frames):
        while k < len(events) and events[k][1] < t:
            k += 1
        owners.append(events[k][0] if k < len(events) else tail)
    return owners


def label_arrays(nodes: Sequence[str], owners: Sequence[str], active: Sequence[Sequence[int]],
                 progress: Sequence[float]) -> dict[str, npt.NDArray[np.generic]]:
    """Arrays over T frames: subtask_index (T,) int16, active_mask (T, N) bool, progress (T,) float32.

    subtask_index indexes the declared `nodes`; len(nodes) means DONE and -1 UNFINISHED.
    `active` holds, per frame, the declared indices of the nodes active after that frame's step.
    """
    code: Mapping[str, int] = {**{n: i for i, n in enumerate(nodes)}, DONE: len(nodes),
                               UNFINISHED: UNFINISHED_INDEX}
    n_frames = len(owners)
    mask = np.zeros((n_frames, len(nodes)), dtype=bool)
    for t, idx in enumerate(active):
        mask[t, list(idx)] = True
    return {
        "subtask_index": np.array([code[o] for o in owners], dtype=np.int16),
        "active_mask": mask,
        "progress": np.asarray(progress, dtype=np.float32).reshape(n_frames),
    }


ARM_SUBTASK_INDEX_KEY = "arm_subtask_index"  # the label array's name under /labels


def arm_segment_owners(events: Sequence[tuple[str, int]], nodes: Sequence[str],
                       arms_of_node: Mapping[str, Sequence[str]], arm_names: Sequence[str], first_frame: int,
                       n_frames: int, failed: str | None = None) -> list[list[str]]:
    """Per arm (in `arm_names` order), the owner of each frame as `segment_owners` gives it, from the events of
    the nodes attributed to that arm only. A node missing from `arms_of_node` is on every arm (an episode
    recorded before the map was kept). Frames after an arm's last event are DONE when every node attributed to
    it completed and none of them is the `failed` node, else UNFINISHED; an arm without nodes is DONE throughout.

    With one arm carrying every node this is `segment_owners(events, ...)` with success = every node completed
    and no failure, which is the runtime's success, so the column equals subtask_index.
    """
    completed = {node for node, _ in events}
    out: list[list[str]] = []
    for arm in arm_names:
        mine = {n for n in nodes if arm in arms_of_node.get(n, arm_names)}
        finished = mine <= completed and failed not in mine
        out.append(segment_owners([e for e in events if e[0] in mine], first_frame, n_frames, finished))
    return out


def arm_label_arrays(nodes: Sequence[str], owners: Sequence[Sequence[str]],
                     n_frames: int) -> dict[str, npt.NDArray[np.generic]]:
    """arm_subtask_index (T, A) int16: column a codes `owners[a]` as subtask_index codes its owners
    (declared node index, len(nodes) DONE, -1 UNFINISHED)."""
    code: Mapping[str, int] = {**{n: i for i, n in enumerate(nodes)}, DONE: len(nodes),
                               UNFINISHED: UNFINISHED_INDEX}
    table = np.full((n_frames, len(owners)), UNFINISHED_INDEX, dtype=np.int16)
    for a, column in enumerate(owners):
        table[:, a] = [code[o] for o in column]
    return {ARM_SUBTASK_INDEX_KEY: table}
