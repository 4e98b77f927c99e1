"""Labelled picture grids: the one drawer behind every multi-picture PNG x2 makes from camera frames (an
episode's contact sheet, a task's preview of seeded resets).

A grid is a title, then rows of equally sized tiles; a row may have a band of labels above its tiles (one
per tile, at most two lines each) and a label on its left. The PNG is written whole under a temporary name
beside the target and renamed into place (x2/files/atomic.py), and the same pictures give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from x2.base.arrays import Image as Pixels  # (PIL.Image is the picture drawn)
from x2.files.atomic import replacing
from x2.sim.camera import ImageSize

GAP = 4  # px between tiles
TEXT = (20, 20, 20)
PAPER = (250, 250, 250)
LABEL_LINES = 2  # a tile's label wraps onto at most this many lines


@dataclass(frozen=True)
class GridRow:
    tiles: Sequence[Pixels]  # (H, W, 3) uint8 each, all of the grid's size
    labels: Sequence[str] | None = None  # one above each tile; None: the row has no label band
    name: str = ""  # drawn on the row's left


@dataclass(frozen=True)
class Box:
    """Where a tile landed on the picture (pixels, top-left corner)."""
    x: int
    y: int
    width: int
    height: int


def grid_font(size: ImageSize) -> ImageFont.FreeTypeFont:
    font = ImageFont.load_default(size=max(11, size.height // 16))
    assert isinstance(font, ImageFont.FreeTypeFont)  # a sized font: FreeType, which Pillow's wheels include
    return font


def draw_grid(title: str, rows: Sequence[GridRow], size: ImageSize) -> tuple[Image.Image, list[list[Box]]]:
    """The grid as one RGB picture, and each tile's box (rows, then tiles in a row)."""
    font = grid_font(size)
    line = int(font.size * 1.4)
    names = [r.name for r in rows if r.name]
    left = max(int(font.getlength(n)) for n in names) + 2 * GAP if names else GAP
    columns = max(len(r.tiles) for r in rows)
    width = left + columns * (size.width + GAP)
    # A title wider than the tiles wraps rather than widening the picture or running off its edge.
    title_lines = wrap(title, font, width - 2 * GAP)
    wrapped = [[_clipped(wrap(text, font, size.width)) for text in r.labels] if r.labels is not None else None
               for r in rows]
    # As many label lines as the longest label needs: short labels leave no empty line above every row.
    band = max((len(lines) for w in wrapped if w is not None for lines in w), default=0) * line
    tops, y = [], len(title_lines) * line
    for r in rows:
        tops.append(y + (band if r.labels is not None else 0))
        y = tops[-1] + size.height + GAP
    picture = Image.new("RGB", (width, y), PAPER)
    draw = ImageDraw.Draw(picture)
    for i, text in enumerate(title_lines):
        draw.text((GAP, 2 + i * line), text, fill=TEXT, font=font)
    boxes: list[list[Box]] = []
    for r, labels, top in zip(rows, wrapped, tops, strict=True):
        boxes.append([])
        for col, tile in enumerate(r.tiles):
            x = left + col * (size.width + GAP)
            if labels is not None:
                for k, text in enumerate(labels[col]):
                    draw.text((x, top - band + k * line), text, fill=TEXT, font=font)
            picture.paste(Image.fromarray(np.ascontiguousarray(tile)), (x, top))
            boxes[-1].append(Box(x, top, size.width, size.height))
        if r.name:
            draw.text((GAP, top + size.height // 2 - line // 2), r.name, fill=TEXT, font=font)
    return picture, boxes


def write_png(picture: Image.Image, out: str | Path) -> Path:
    """`picture` into `out`, complete or not at all."""
    out = Path(out)
    with replacing(out) as tmp:
        picture.save(tmp, format="PNG", optimize=True)
    return out


def wrap(text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    """`text` broken at spaces into lines of at most `width` pixels (a longer word gets a line of its own)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and font.getlength(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def _clipped(lines: list[str]) -> list[str]:
    # A label that does not fit says so rather than silently losing its end.
    return lines if len(lines) <= LABEL_LINES else [*lines[:LABEL_LINES - 1], lines[LABEL_LINES - 1] + " …"]
