"""How depth and segmentation are coloured for a person, wherever they are shown (a contact sheet's tiles,
x2/render/sheet.py; the teleop panel's live view, x2/teleop/preview.py), so one thing has one colour everywhere.

Depth: one fixed colormap (close to matplotlib's viridis, nine stops, linear between them) over a range given in
metres, the near end yellow and the far end dark violet; a pixel where the camera sees nothing is BACKGROUND.
Segmentation: each id a colour derived from its kind and name alone (SHA-256 of the name), so one link, object or
wall has one colour on every sheet of every dataset: robot links in cyan to violet, objects in red to yellow,
scenery in muted greens, the background dark.
"""

from __future__ import annotations

import colorsys
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from x2.base.arrays import Floats
from x2.base.arrays import Image as Pixels
from x2.sim.streams import BACKGROUND, OBJECT, ROBOT, SCENERY, Segments, SegmentTable

BACKGROUND_COLOUR = (20, 20, 20)
# near (t = 0) to far (t = 1): viridis reversed, so what is close is bright
DEPTH_STOPS = np.array([(253, 231, 37), (170, 220, 50), (94, 201, 98), (39, 173, 129), (33, 145, 140),
                        (44, 113, 142), (59, 82, 139), (71, 44, 122), (68, 1, 84)], np.float64)
# each kind's band of hue, saturation and value (0..1); a name's digest picks its place in them
_BANDS: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float]]] = {
    ROBOT: ((0.50, 0.78), (0.55, 0.85), (0.75, 1.0)),
    OBJECT: ((-0.04, 0.16), (0.75, 1.0), (0.85, 1.0)),
    SCENERY: ((0.22, 0.42), (0.25, 0.45), (0.45, 0.65)),
}


@dataclass(frozen=True)
class DepthRange:
    """The metres a depth tile's colours span: `near` is DEPTH_STOPS[0], `far` the last stop."""

    near: float
    far: float

    def __str__(self) -> str:
        return f"{self.near:.2f}-{self.far:.2f} m"


def depth_range(depths: Sequence[Floats], seen: Sequence[Segments]) -> DepthRange:
    """The nearest and farthest depth where a segmentation sees something (id > 0), over all the given views,
    widened to whole centimetres; 0-1 m when nothing is seen."""
    values = [d[(s > 0) & np.isfinite(d)] for d, s in zip(depths, seen, strict=True)]
    valid = np.concatenate([v.ravel() for v in values]) if values else np.empty(0, np.float32)
    if valid.size == 0:
        return DepthRange(0.0, 1.0)
    near = float(np.floor(float(valid.min()) * 100) / 100)
    far = float(np.ceil(float(valid.max()) * 100) / 100)
    return DepthRange(near, far if far > near else near + 0.01)


def depth_colours(t: Floats) -> Pixels:
    """Colormap positions (0 near .. 1 far, clipped) -> uint8 colours of DEPTH_STOPS, the same shape plus 3."""
    x = np.clip(np.asarray(t, np.float64), 0.0, 1.0) * (len(DEPTH_STOPS) - 1)
    grid = np.arange(len(DEPTH_STOPS), dtype=np.float64)
    out = np.stack([np.interp(x, grid, DEPTH_STOPS[:, c]) for c in range(3)], axis=-1)
    colours: Pixels = np.rint(out).astype(np.uint8)
    return colours


def depth_tile(depth: Floats, segments: Segments, span: DepthRange) -> Pixels:
    """(H, W) metres -> (H, W, 3) colours over `span`; where the segmentation sees nothing, BACKGROUND_COLOUR."""
    tile = depth_colours((np.asarray(depth, np.float64) - span.near) / (span.far - span.near))
    tile[segments == 0] = BACKGROUND_COLOUR
    return tile


def segment_colour(kind: str, name: str) -> tuple[int, int, int]:
    """The one colour of a thing of `kind` named `name` (see the module docstring)."""
    if kind == BACKGROUND or kind not in _BANDS:
        return BACKGROUND_COLOUR
    digest = hashlib.sha256(f"{kind}/{name}".encode()).digest()
    (h0, h1), (s0, s1), (v0, v1) = _BANDS[kind]
    h, s, v = (lo + (b / 255) * (hi - lo) for b, (lo, hi) in zip(digest[:3], ((h0, h1), (s0, s1), (v0, v1)),
                                                                  strict=True))
    r, g, b = colorsys.hsv_to_rgb(h % 1.0, s, v)
    return round(r * 255), round(g * 255), round(b * 255)


def segment_palette(table: SegmentTable) -> Pixels:
    """(len(table.names), 3) uint8: row i is id i's colour."""
    palette: Pixels = np.array([segment_colour(k, n) for k, n in zip(table.kinds, table.names, strict=True)],
                               np.uint8).reshape(-1, 3)
    return palette


def segmentation_tile(segments: Segments, palette: Pixels) -> Pixels:
    """(H, W) ids -> (H, W, 3) colours of `palette` (segment_palette)."""
    tile: Pixels = palette[np.asarray(segments, np.intp)]
    return tile
