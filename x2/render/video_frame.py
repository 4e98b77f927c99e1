"""The picture of one video frame: the episode's cameras side by side (the contact sheet's grid,
x2/render/grid.py) above a band of text lines that change with the frame: the frame number, the active subtask
(a line per arm when the episode labels each arm), and, from the frame the DAG blamed on, the failure.

The labels come from the file (docs/format.md, "Labels" and "Per-arm labels"; the failure from /dag), so the
video shows what the labels claim, frame by frame. The title and the camera names are drawn once; each frame
copies that background, puts its tiles in and writes its band.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from x2 import format as fmt
from x2.base.arrays import Image as Pixels
from x2.datasets import Episode
from x2.render.grid import GAP, PAPER, TEXT, Box, GridRow, draw_grid, grid_font
from x2.sim.camera import ImageSize

FAILED = (200, 20, 20)


@dataclass(frozen=True)
class FrameLabels:
    """What the band says of each frame, read once from the episode's labels."""

    frames: int
    fps: float | None
    subtasks: list[list[str]]  # per frame, its subtask lines: ["subtask: pick"], or per arm ["left: open_door",
    # "right: pick_fruit"] ([""] unlabelled)
    progress: list[float] | None  # per frame, /labels/progress; None when the episode has none
    failure: tuple[str, int, str] | None  # (node, frame, reason) from /dag
    ended: str | None = None  # how an unsuccessful episode without a DAG failure ended (end_reason), said at its end

    @classmethod
    def of(cls, ep: Episode) -> FrameLabels:
        names = ep.subtask_names
        arms, per_arm = ep.arm_names, ep.arm_subtask_index
        subtasks: list[list[str]]
        if per_arm is not None and len(arms) > 1:
            subtasks = [[f"{arm}: {_name(int(v), names)}" for arm, v in zip(arms, row, strict=True)]
                        for row in per_arm.tolist()]
        elif fmt.SUBTASK_INDEX in ep:
            subtasks = [[f"subtask: {_name(int(v), names)}"] for v in ep[fmt.SUBTASK_INDEX].tolist()]
        else:  # (a real recording: no task labelled it)
            subtasks = [[""]] * ep.frames
        progress = ep[fmt.PROGRESS].astype(float).tolist() if fmt.PROGRESS in ep else None
        failure = ep.failure
        ended = None if ep.success or failure is not None or not ep.dag["nodes"] else ep.text(fmt.END_REASON_ATTR)
        return cls(ep.frames, ep.fps, subtasks, progress, failure, ended or None)

    @property
    def line_count(self) -> int:
        return 2 + len(self.subtasks[0]) if self.subtasks else 3

    def lines(self, t: int) -> list[str]:
        """The band's lines at frame `t`: the frame, its subtask line(s), the failure ("": none yet)."""
        head = f"frame {t}/{self.frames - 1}"
        if self.fps:
            head += f" · {t / self.fps:.2f} s"
        if self.progress is not None and t < len(self.progress):
            head += f" · progress {self.progress[t]:.2f}"
        failure = ""
        if self.failure is not None and t >= self.failure[1]:
            node, frame, reason = self.failure
            failure = f"FAILED: {node} ({reason}) at frame {frame}"
        elif self.ended is not None and t == self.frames - 1:
            failure = f"ended unfinished: {self.ended}"
        return [head, *self.subtasks[t], failure]


def _name(value: int, names: Sequence[str]) -> str:
    if 0 <= value < len(names):
        return str(names[value])
    return "done" if value == len(names) else "unfinished" if value == -1 else str(value)


@dataclass(frozen=True)
class VideoLayout:
    """Where everything lands on a frame (pixels); width and height are even, as H.264's 4:2:0 needs."""

    width: int
    height: int
    tiles: list[Box]  # one per camera, in the order given
    band: list[Box]  # one per line of FrameLabels.lines, top to bottom


class FramePainter:
    """Draws frames of one episode: `paint(t, tiles)` -> the (H, W, 3) uint8 picture of frame t."""

    def __init__(self, title: str, cameras: Sequence[str], size: ImageSize, labels: FrameLabels):
        self.cameras, self.size, self.labels = tuple(cameras), size, labels
        self.font = grid_font(size)
        black = np.zeros((size.height, size.width, 3), np.uint8)
        grid, boxes = draw_grid(title, [GridRow([black] * len(cameras), list(cameras))], size)
        line = int(self.font.size * 1.4)
        top = grid.height
        width = grid.width + grid.width % 2
        height = top + labels.line_count * line + GAP
        height += height % 2
        canvas = Image.new("RGB", (width, height), PAPER)
        canvas.paste(grid, (0, 0))
        self.background = np.asarray(canvas).copy()
        band = [Box(GAP, top + k * line, width - 2 * GAP, line) for k in range(labels.line_count)]
        self.layout = VideoLayout(width, height, boxes[0], band)
        self._band_top = top

    def paint(self, t: int, tiles: Mapping[str, Pixels]) -> Pixels:
        out = self.background.copy()
        for cam, box in zip(self.cameras, self.layout.tiles, strict=True):
            out[box.y:box.y + box.height, box.x:box.x + box.width] = self._fit(tiles[cam])
        band = Image.fromarray(out[self._band_top:])
        draw = ImageDraw.Draw(band)
        lines = self.labels.lines(t)
        for k, (text, box) in enumerate(zip(lines, self.layout.band, strict=True)):
            colour = FAILED if k == len(lines) - 1 else TEXT
            if text:
                draw.text((box.x, box.y - self._band_top + 2), _clip(text, self.font, box.width), fill=colour,
                          font=self.font)
        out[self._band_top:] = np.asarray(band)
        return out

    def _fit(self, tile: Pixels) -> Pixels:
        """A stored stream of another size (a real recording's, a policy's small frames) scaled to the tile."""
        if tile.shape[:2] == (self.size.height, self.size.width):
            return tile
        picture = Image.fromarray(np.ascontiguousarray(tile)).resize((self.size.width, self.size.height),
                                                                     Image.Resampling.BILINEAR)
        return np.asarray(picture)


def _clip(text: str, font: ImageFont.FreeTypeFont, width: int) -> str:
    """`text` cut with an ellipsis to fit `width` pixels (a band line never wraps: the frame's size is fixed)."""
    if font.getlength(text) <= width:
        return text
    while text and font.getlength(text + " …") > width:
        text = text[:-1]
    return text + " …"
