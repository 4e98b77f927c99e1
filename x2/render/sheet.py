"""A contact sheet of one episode: every camera (rows) at the start, at each subtask completion and at
the end (columns), labelled, as one PNG written atomically.

The moments come from the episode's own DAG record (/dag events, and the failure if any), so the sheet
shows what the labels claim: a frame where "pick_fruit" completed should show the fruit in the gripper.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from x2.atomic import replacing
from x2.datasets import Episode
from x2.render.frames import ImageSize
from x2.render.source import frames_at

_GAP = 4  # px between tiles
_TEXT = (20, 20, 20)
_PAPER = (250, 250, 250)


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
    out = Path(out)
    moments = sheet_moments(ep)
    frames = list(frames_at(ep, cameras, [f for f, _ in moments], size))
    font = ImageFont.load_default(size=max(11, size.height // 16))
    assert isinstance(font, ImageFont.FreeTypeFont)  # a sized font: FreeType, which Pillow's wheels include
    line = int(font.size * 1.4)
    label_w = max(int(font.getlength(c)) for c in cameras) + 2 * _GAP
    title_h = line
    head_h = 2 * line  # a column label may wrap onto a second line
    width = label_w + len(moments) * (size.width + _GAP)
    height = title_h + head_h + len(cameras) * (size.height + _GAP)
    sheet = Image.new("RGB", (width, height), _PAPER)
    draw = ImageDraw.Draw(sheet)
    task = ep.task
    draw.text((_GAP, 2), f"episode {ep.index} · {task} · {ep.outcome} · {ep.frames} frames · {size}",
              fill=_TEXT, font=font)
    for col, (_, label) in enumerate(moments):
        x = label_w + col * (size.width + _GAP)
        for row, text in enumerate(_wrap(label, font, size.width)[:2]):
            draw.text((x, title_h + row * line), text, fill=_TEXT, font=font)
        for row, cam in enumerate(cameras):
            y = title_h + head_h + row * (size.height + _GAP)
            sheet.paste(Image.fromarray(np.ascontiguousarray(frames[col][cam])), (x, y))
    for row, cam in enumerate(cameras):
        y = title_h + head_h + row * (size.height + _GAP) + size.height // 2 - line // 2
        draw.text((_GAP, y), cam, fill=_TEXT, font=font)
    with replacing(out) as tmp:
        sheet.save(tmp, format="PNG", optimize=True)
    return out


def _wrap(text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split(" "):
        if lines and font.getlength(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines
