"""The depth and segmentation an export carries: each exported camera's stored `/observations/depth/<cam>` and
`/observations/segmentation/<cam>` (made by `x2 render --streams`, docs/format.md "Camera streams"), its per-frame
extrinsics and its K at the exported size.

Nothing is drawn here: a stream goes into an export when the first exported episode stores it for that camera, and
every later episode must store it too (one line naming the first that does not: render it with --streams). An
existing dataset's exports without such streams are what they always were. Frames are taken at the camera's
exported size (`sizes`, the size its pictures are exported at): nearest neighbour when the stored size differs, so
a depth is never averaged across an edge and an id never blended with its neighbour's; K is scaled per axis as the
pictures are stretched (x2/recorded/camera_lenses.py's rule: pixel centres map to pixel centres).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Floats
from x2.base.errors import ExportError
from x2.datasets import Episode
from x2.export.provenance import Json
from x2.policy.protocol import OBS_DEPTH_SUFFIX
from x2.sim.camera import ImageSize, scaled_k

DEPTH_SUFFIX = OBS_DEPTH_SUFFIX  # (one name: what x2 eval sends a depth policy is what it was trained on)
SEGMENTATION_SUFFIX, EXTRINSICS_SUFFIX = "_segmentation", "_extrinsics"
_BLOCK = 32  # frames per read


@dataclass(frozen=True)
class SensorStreams:
    """Which exported cameras carry depth, which segmentation (in the export's camera order)."""

    depth: tuple[str, ...] = ()
    segmentation: tuple[str, ...] = ()

    @property
    def cameras(self) -> tuple[str, ...]:
        """The cameras with either, whose extrinsics go along."""
        return tuple(dict.fromkeys((*self.depth, *self.segmentation)))

    def __bool__(self) -> bool:
        return bool(self.depth or self.segmentation)

    def describe(self) -> dict[str, Json]:
        return {"depth": list(self.depth), "segmentation": list(self.segmentation),
                "source": "the episodes' /observations/depth and /observations/segmentation (x2 render --streams); "
                          "nearest neighbour to the exported size; K at that size (OpenCV's pixel convention), "
                          "extrinsics camera (OpenCV axes) to world per frame"}


def stored_streams(ep: Episode, cameras: Sequence[str]) -> SensorStreams:
    """The streams `ep` stores for `cameras` (with their extrinsics): what the export carries."""
    extr = [c for c in cameras if fmt.camera_extrinsics_path(c) in ep]
    return SensorStreams(tuple(c for c in extr if fmt.depth_path(c) in ep),
                         tuple(c for c in extr if fmt.segmentation_path(c) in ep))


def check_streams(ep: Episode, first: SensorStreams) -> None:
    """Refuse an episode without a stream the first exported episode had."""
    for paths in ([fmt.depth_path(c) for c in first.depth], [fmt.segmentation_path(c) for c in first.segmentation],
                  [fmt.camera_extrinsics_path(c) for c in first.cameras]):
        for path in paths:
            if path not in ep:
                raise ExportError(f"{ep.path}: {path}: found missing; allowed: stored, as in the first exported "
                                  "episode (x2 render --streams ... draws it)")


def _resized(block: npt.NDArray[np.generic], size: ImageSize) -> npt.NDArray[np.generic]:
    if block.shape[1:3] == (size.height, size.width):
        return block
    return np.stack([cv2.resize(f, (size.width, size.height), interpolation=cv2.INTER_NEAREST) for f in block])


def blocks(ep: Episode, path: str, size: ImageSize) -> Iterator[npt.NDArray[np.generic]]:
    """(n, H, W) blocks of the stored stream at `path`, in order, at `size`."""
    ds = ep.dataset(path)
    for lo in range(0, ep.frames, _BLOCK):
        yield _resized(np.asarray(ds[lo:lo + _BLOCK]), size)


def extrinsics(ep: Episode, cam: str) -> Floats:
    """(T, 4, 4) float64 camera (OpenCV axes) to world, as stored."""
    out: Floats = np.asarray(ep.dataset(fmt.camera_extrinsics_path(cam))[:], np.float64)
    return out


def lens(ep: Episode, path: str, size: ImageSize) -> dict[str, Json]:
    """The attrs an exported depth or segmentation array carries: K at `size`, its convention, its size."""
    attrs = ep.dataset_attrs(path)
    stored = ImageSize(int(attrs["height"]), int(attrs["width"]))
    k = scaled_k(np.asarray(attrs["K"], np.float64), stored, size)
    out: dict[str, Json] = {"K": [[float(v) for v in row] for row in k], "pixel_origin": str(attrs["pixel_origin"]),
                            "height": size.height, "width": size.width}
    if "distortion" in attrs:
        out["distortion"] = [float(v) for v in np.asarray(attrs["distortion"]).ravel()]
    return out


def table(ep: Episode, cam: str) -> dict[str, Json]:
    """The segmentation's id table: names and kinds, id i at index i."""
    attrs = ep.dataset_attrs(fmt.segmentation_path(cam))
    return {fmt.NAMES_ATTR: [str(n) for n in attrs[fmt.NAMES_ATTR]],
            fmt.SEGMENT_KINDS_ATTR: [str(k) for k in attrs[fmt.SEGMENT_KINDS_ATTR]]}
