"""A contact sheet of one episode: every camera (rows) at the start, at each subtask completion and at
the end (columns), labelled, as one PNG written atomically.

The moments come from the episode's own DAG record (/dag events, and the failure if any), so the sheet
shows what the labels claim: a frame where "pick_fruit" completed should show the fruit in the gripper.

With depth or segmentation asked for, each camera gets a row per stream (rgb, depth, segmentation), drawn as
x2/sim/stream_colours.py colours them, and a legend under the grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from x2.base.arrays import Image as Pixels
from x2.datasets import Episode
from x2.recorded.frames import frames_at, shots_at
from x2.render.grid import Box, GridRow, draw_grid, write_png
from x2.render.stream_legend import add_legend
from x2.sim.camera import ImageSize
from x2.sim.stream_colours import depth_range, depth_tile, segment_palette, segmentation_tile
from x2.sim.streams import DEFAULT_STREAMS, DEPTH, RGB, SEGMENTATION


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


def contact_sheet(ep: Episode, cameras: Sequence[str], size: ImageSize, out: str | Path,
                  streams: tuple[str, ...] = DEFAULT_STREAMS) -> Path:
    """Draw the sheet of `ep` (stored pictures at `size` are read, other cameras rendered; depth and segmentation
    are drawn from the states) into `out`."""
    picture, _ = sheet_picture(ep, cameras, size, streams)
    return write_png(picture, out)


def sheet_picture(ep: Episode, cameras: Sequence[str], size: ImageSize,
                  streams: tuple[str, ...] = DEFAULT_STREAMS) -> tuple[Image.Image, list[list[Box]]]:
    """The sheet as one picture, and each tile's box (rows: per camera, its `streams` in STREAMS' order)."""
    moments = sheet_moments(ep)
    at, labels = [f for f, _ in moments], [label for _, label in moments]
    title = f"episode {ep.index} · {ep.task} · {ep.outcome} · {ep.frames} frames · {size}"
    tiles: dict[tuple[str, str], list[Pixels]] = {(cam, s): [] for cam in cameras for s in streams}
    names = {(cam, s): cam if s == RGB else f"{cam} {s}" for cam in cameras for s in streams}
    if RGB in streams:
        for frame in frames_at(ep, cameras, at, size):
            for cam in cameras:
                tiles[cam, RGB].append(frame[cam])
    extra = DEPTH in streams or SEGMENTATION in streams
    # (depth needs the segmentation too, to leave dark what the camera does not see: one pass draws both)
    shots, table = shots_at(ep, cameras, at, size, (DEPTH, SEGMENTATION)) if extra else ([], None)
    seen: set[int] = set()
    for cam in cameras:
        depths = [s[cam].depth for s in shots]
        segments = [s[cam].segmentation for s in shots]
        if not all(d is not None for d in depths) or not all(g is not None for g in segments):
            raise AssertionError("the renderer left out a stream it was asked for")  # (StateRenderer's contract)
        ds, gs = [d for d in depths if d is not None], [g for g in segments if g is not None]
        if DEPTH in streams:
            span = depth_range(ds, gs)
            tiles[cam, DEPTH] = [depth_tile(d, g, span) for d, g in zip(ds, gs, strict=True)]
            names[cam, DEPTH] = f"{cam} depth {span}"
        if SEGMENTATION in streams and table is not None:
            palette = segment_palette(table)
            tiles[cam, SEGMENTATION] = [segmentation_tile(g, palette) for g in gs]
            seen.update(int(i) for g in gs for i in np.unique(g))
    # One row per camera and stream; the moments' labels head the columns once, above the first row.
    rows = [GridRow(tiles[key], labels if i == 0 else None, names[key]) for i, key in enumerate(tiles)]
    picture, boxes = draw_grid(title, rows, size)
    if extra:
        picture = add_legend(picture, size, table if SEGMENTATION in streams else None, seen, DEPTH in streams)
    return picture, boxes
