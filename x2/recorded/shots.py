"""Every stream of a recorded episode's cameras, drawn now from its states: the picture, the depth and the
segmentation of each camera (x2.sim.streams) with the camera's K and its extrinsics at that frame. What a point
cloud is lifted from (x2/export/point_cloud.py): drawn from `/states` in the file's own world, so an episode
without stored depth gains it without re-collection, and the geometry is the physics' own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from x2 import format as fmt
from x2.base.arrays import Floats
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.recorded.world import SIM_BOUND, open_world
from x2.sim.camera import ImageSize, StateRenderer, opencv_matrix, optical_to_world
from x2.sim.streams import STREAMS, SegmentTable, Shot


@dataclass(frozen=True)
class CameraShot:
    """One camera at one frame: its streams, K (OpenCV's pixel convention) and camera (OpenCV axes) to world."""

    shot: Shot
    k: Floats  # (3, 3)
    extrinsics: Floats  # (4, 4)


def drawn_shots(ep: Episode, cameras: Sequence[str], size: ImageSize, frames: Sequence[int] | None = None,
                where: str = "cameras") -> Iterator[tuple[dict[str, CameraShot], SegmentTable]]:
    """Per frame (every frame, or `frames` in the order given) {camera: CameraShot} and the segmentation's id
    table. A camera the world lacks is refused in one line naming the episode and `where` (the option that named
    it); so is a camera whose lens distorts: its depth is not a pinhole's."""
    with open_world(ep) as world:
        known = world.backend.cameras
        missing = known.missing(cameras)
        if missing:
            raise DatasetError(f"{ep.path}: {where}: found {missing}; allowed: the world's cameras {list(known.names)}")
        yield from _drawn(ep, world.backend.renderer(cameras, size), cameras, frames)


def _drawn(ep: Episode, renderer: StateRenderer, cameras: Sequence[str],
           frames: Sequence[int] | None) -> Iterator[tuple[dict[str, CameraShot], SegmentTable]]:
    with renderer:
        ks = {}
        for cam in cameras:
            intrinsics = renderer.intrinsics(cam)
            if "distortion" in intrinsics:
                raise DatasetError(f"{ep.path}: camera {cam}: found a distorting calibrated lens; allowed: a pinhole "
                                   "camera for point clouds")
            ks[cam] = opencv_matrix(intrinsics)
        states = ep.numeric(fmt.STATES, 2, 1, bound=SIM_BOUND)
        for t in range(ep.frames) if frames is None else frames:
            renderer.set_state(states[t])
            yield ({cam: CameraShot(renderer.shot(cam, STREAMS), ks[cam], optical_to_world(*renderer.camera_frame(cam)))
                    for cam in cameras}, renderer.segment_table)
