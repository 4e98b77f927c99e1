"""What one camera gives besides its picture, whatever simulator draws it: the stream names (`rgb`, `depth`,
`segmentation`), a list of them parsed from a command line, one frame's worth of them (`Shot`), and the table that
names a segmentation's ids (`SegmentTable`). MuJoCo's are drawn by x2/sim/mujoco/streams.py and named by
x2/sim/mujoco/segments.py; docs/format.md says how they are stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats, Image
from x2.base.errors import DatasetError

RGB, DEPTH, SEGMENTATION = "rgb", "depth", "segmentation"
STREAMS: tuple[str, ...] = (RGB, DEPTH, SEGMENTATION)  # in the order they are drawn and stored
DEFAULT_STREAMS: tuple[str, ...] = (RGB,)

Segments = npt.NDArray[np.uint16]  # (H, W) ids into a SegmentTable; 0: nothing (the camera sees no geom there)

# The kinds of thing a segmentation id names, in the order their ids are given
BACKGROUND, ROBOT, OBJECT, SCENERY = "background", "robot", "object", "scenery"


def parse_streams(text: str | None, where: str = "--streams") -> tuple[str, ...]:
    """``"rgb,depth"`` -> ("rgb", "depth") in STREAMS' order; None -> DEFAULT_STREAMS; anything else one line."""
    if text is None:
        return DEFAULT_STREAMS
    names = [n.strip() for n in text.split(",")]
    if not names or any(n not in STREAMS for n in names) or len(set(names)) != len(names):
        raise DatasetError(f"{where}: found {text!r}; allowed: distinct names of {', '.join(STREAMS)} separated by "
                           "commas, e.g. rgb,depth,segmentation")
    return tuple(s for s in STREAMS if s in names)


@dataclass(frozen=True)
class Shot:
    """One camera's streams of one state; a stream not asked for is None."""

    rgb: Image | None = None  # (H, W, 3) uint8
    depth: Floats | None = None  # (H, W) float32 metres along the camera's optical axis (z, not the ray's length)
    segmentation: Segments | None = None  # (H, W) uint16 ids of the renderer's SegmentTable


@dataclass(frozen=True)
class SegmentTable:
    """Segmentation id -> what it names: id i is `names[i]`, a thing of kind `kinds[i]` (BACKGROUND for id 0, then
    every ROBOT link, every OBJECT, every piece of SCENERY). Its one maker, x2/sim/mujoco/segments.py, builds
    `names` and `kinds` from one list that starts with the background and refuses a name used twice."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]

    def id_of(self, name: str) -> int:
        return self.names.index(name)
