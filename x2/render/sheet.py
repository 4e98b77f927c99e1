"""A contact sheet of one episode: every camera (rows) at the start, at each subtask completion and at
the end (columns), labelled, as one PNG written atomically.

The moments come from the episode's own DAG record (/dag events, and the failure if any), so the sheet
shows what the labels claim: a frame where "pick_fruit" completed should show the fruit in the gripper.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from x2.datasets import Episode
from x2.recorded.frames import frames_at
from x2.render.grid import GridRow, draw_grid, write_png
from x2.sim.camera import ImageSize


def sheet_moments(ep: Episode) -> list[tuple[int, str]]:
    """(frame, label) columns: start, every completion (and the failure) in frame order, end; a frame
    that is several of these gets one column with all its labels."""
    last = ep.frames - 1
    moments: dict[int, list[str]] = {0: ["start"]}
    for node, frame in ep.events:
        moments.setdefault(int(frame), []).append(f"{node} done")
    failure = ep.failure
    if failure is not None:
        moments.setdefault(int(failure[1]), []).append(f"{failure[0]} failed")
    moments.setdefault(last, []).append("end")
    return [(frame, ", ".join(labels) + f" @ {frame}") for frame, labels in sorted(moments.items())]


def contact_sheet(ep: Episode, cameras: Sequence[str], size: ImageSize, out: str | Path) -> Path:
    """Draw the sheet of `ep` (stored streams at `size` are read, other cameras rendered) into `out`."""
    moments = sheet_moments(ep)
    frames = list(frames_at(ep, cameras, [f for f, _ in moments], size))
    # One row per camera; the moments' labels head the columns once, above the first row.
    rows = [GridRow([f[cam] for f in frames], [label for _, label in moments] if i == 0 else None, cam)
            for i, cam in enumerate(cameras)]
    title = f"episode {ep.index} · {ep.task} · {ep.outcome} · {ep.frames} frames · {size}"
    picture, _ = draw_grid(title, rows, size)
    return write_png(picture, out)
