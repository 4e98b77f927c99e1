"""The legend a contact sheet draws under its depth and segmentation tiles: what their colours mean (the colours
themselves: x2/sim/stream_colours.py, shared with the teleop panel's live view)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from x2.render.grid import GAP, PAPER, TEXT, grid_font, wrap
from x2.sim.camera import ImageSize
from x2.sim.stream_colours import BACKGROUND_COLOUR, depth_colours, segment_colour
from x2.sim.streams import OBJECT, ROBOT, SCENERY, SegmentTable


def add_legend(picture: Image.Image, size: ImageSize, table: SegmentTable | None, seen: set[int],
               with_depth: bool) -> Image.Image:
    """`picture` with a legend below it: the depth colormap from near to far (each depth row's label gives its
    metres) and, for a segmentation, a swatch per object and piece of scenery among the `seen` ids and one line
    for the robot's links."""
    font = grid_font(size)
    line = int(font.size * 1.4)
    swatch = int(font.size)
    width = picture.width
    items: list[tuple[tuple[int, int, int] | None, str]] = []
    if table is not None:
        items.append((None, "segmentation:"))
        robot = [i for i in sorted(seen) if table.kinds[i] == ROBOT]
        if robot:
            items.append((segment_colour(ROBOT, table.names[robot[0]]),
                          f"robot ({len(robot)} links, cyan to violet)"))
        for i in sorted(seen):
            if table.kinds[i] in (OBJECT, SCENERY):
                items.append((segment_colour(table.kinds[i], table.names[i]), table.names[i]))
        items.append((BACKGROUND_COLOUR, "nothing"))
    # lay the items out left to right, wrapping at the picture's width
    note = wrap("(each depth row's label gives its metres from near to far; dark: nothing seen)", font,
                width - 2 * GAP) if with_depth else []
    placed: list[tuple[int, int, tuple[int, int, int] | None, str]] = []
    x, y = GAP, ((1 + len(note)) * line if with_depth else 0) + GAP
    for colour, text in items:
        w = (swatch + GAP if colour is not None else 0) + int(font.getlength(text)) + 3 * GAP
        if x > GAP and x + w > width:
            x, y = GAP, y + line
        placed.append((x, y, colour, text))
        x += w
    height = (y + line + GAP) if items else (1 + len(note)) * line + 2 * GAP
    out = Image.new("RGB", (width, picture.height + height), PAPER)
    out.paste(picture, (0, 0))
    draw = ImageDraw.Draw(out)
    top = picture.height
    if with_depth:
        label = "depth: near"
        bar_x = GAP + int(font.getlength(label)) + GAP
        bar_w = max(64, min(size.width * 2, width - bar_x - int(font.getlength(" far")) - 4 * GAP))
        bar = depth_colours(np.linspace(0.0, 1.0, bar_w))[None].repeat(swatch, axis=0)
        draw.text((GAP, top + GAP), label, fill=TEXT, font=font)
        out.paste(Image.fromarray(np.ascontiguousarray(bar)), (bar_x, top + GAP + (line - swatch) // 2))
        draw.text((bar_x + bar_w + GAP, top + GAP), "far", fill=TEXT, font=font)
        for k, text in enumerate(note):
            draw.text((GAP, top + GAP + (1 + k) * line), text, fill=TEXT, font=font)
    for x, y, colour, text in placed:
        tx = x
        if colour is not None:
            draw.rectangle((x, top + y + (line - swatch) // 2, x + swatch - 1, top + y + (line - swatch) // 2
                            + swatch - 1), fill=colour, outline=TEXT if colour == BACKGROUND_COLOUR else None)
            tx = x + swatch + GAP
        draw.text((tx, top + y), text, fill=TEXT, font=font)
    return out
