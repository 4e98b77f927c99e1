"""What a recorded episode's cameras are: each one's intrinsics at a picture size, its lens's distortion and where it
was at the first frame, as the exporters write them beside the frames (`camera_lenses` in the LeRobot, zarr and HDF5
exports' x2 provenance; docs/format.md).

A camera stored in the file is described by its stream's attrs (`intrinsics` K at the stored size, `distortion`
when its lens has one) and its first `/observations/camera_poses` row; one that is not is asked of the episode's
world (its renderer, at the first state). K is scaled to the exported size: a calibrated camera's K (x2 calibrate
camera, OpenCV's pixel convention) as its lens would be at that size, a field-of-view camera's K made again from its
field of view (`pinhole`). A recording without a world (source `real`) describes only what its streams' attrs say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from x2 import format as fmt
from x2.base.arrays import Floats
from x2.datasets import Episode
from x2.envspec.camera_calibration import quat_to_rotation
from x2.recorded.frames import stored_cameras
from x2.recorded.world import open_world
from x2.sim.camera import ImageSize, pinhole

OPTICAL = np.diag([1.0, -1.0, -1.0])  # MuJoCo's camera axes (looking along -z, y up) -> OpenCV's optical frame


@dataclass(frozen=True)
class _Seen:
    size: ImageSize
    k: Floats
    fovy: float
    distortion: Floats | None
    pose: Floats | None  # (7,) first frame
    body: str


class CameraLens(TypedDict, total=False):
    height: int
    width: int
    K: list[list[float]]  # 3x3 at height x width
    distortion: list[float]  # OpenCV's k1 k2 p1 p2 k3 k4 k5 k6; absent: none
    fovy_deg: float
    body: str  # the body the camera is fixed to (`world`: it does not move)
    pose: list[list[float]]  # 4x4 camera (OpenCV optical frame: x right, y down, z forward) to world, first frame
    poses: str  # where the per-frame poses are in the source episode


def camera_lenses(ep: Episode, cameras: Sequence[str], sizes: Mapping[str, ImageSize]) -> dict[str, CameraLens]:
    """Each of `cameras` described at its size in `sizes` (else its stored size), as the module docstring says."""
    stored = stored_cameras(ep)
    out: dict[str, CameraLens] = {}
    described = {c: _stored(ep, c) for c in cameras if c in stored}
    missing = [c for c in cameras if described.get(c) is None]
    if missing and not ep.is_real and fmt.MODEL_XML_ATTR in ep.attrs:
        states = ep.numeric(fmt.STATES, 2, 1)
        size = next(iter(stored.values()), ImageSize(240, 320))
        with open_world(ep) as world, world.backend.renderer(missing, size) as renderer:
            renderer.set_state(np.asarray(states[0], np.float64))
            for c in missing:
                i = renderer.intrinsics(c)
                described[c] = _Seen(size, np.asarray(i["intrinsics"], np.float64), float(i["fovy_deg"]),
                                     i.get("distortion"), renderer.camera_pose(c), renderer.camera_body(c))
    for c in cameras:
        seen = described.get(c)
        if seen is None:
            continue
        h, w, fovy = seen.size.height, seen.size.width, seen.fovy
        to = sizes.get(c, seen.size)
        k = seen.k
        if np.allclose(k, pinhole(fovy, h, w)):
            k = pinhole(fovy, to.height, to.width)
        else:  # a calibrated lens: the same lens on a sensor of `to` pixels (pixel centres at integers)
            sx, sy = to.width / w, to.height / h
            k = np.array([[k[0, 0] * sx, 0.0, (k[0, 2] + 0.5) * sx - 0.5],
                          [0.0, k[1, 1] * sy, (k[1, 2] + 0.5) * sy - 0.5], [0.0, 0.0, 1.0]])
        lens: CameraLens = {"height": to.height, "width": to.width, "K": _rows(k), "fovy_deg": round(fovy, 6)}
        if seen.distortion is not None:
            lens["distortion"] = [round(float(v), 9) + 0.0 for v in np.asarray(seen.distortion).ravel()]
        if seen.pose is not None:
            lens["body"] = seen.body
            lens["pose"] = _rows(_optical(seen.pose))
            lens["poses"] = f"/{fmt.camera_pose_path(c)} (x y z, quaternion w x y z of MuJoCo's camera axes)"
        out[c] = lens
    return out


def _stored(ep: Episode, cam: str) -> _Seen | None:
    attrs = ep.dataset_attrs(fmt.image_path(cam))
    if not {"intrinsics", "height", "width", "fovy_deg"} <= set(attrs):
        return None  # (a real recording's stream: frames without a lens)
    path = fmt.camera_pose_path(cam)
    pose = np.asarray(ep[path][0], np.float64) if path in ep else None
    dist = np.asarray(attrs["distortion"], np.float64) if "distortion" in attrs else None
    return _Seen(ImageSize(int(attrs["height"]), int(attrs["width"])), np.asarray(attrs["intrinsics"], np.float64),
                 float(attrs["fovy_deg"]), dist, pose, str(attrs.get("body", "")))


def _optical(pose7: Floats) -> Floats:
    t = np.eye(4)
    t[:3, :3] = quat_to_rotation(np.asarray(pose7[3:7], np.float64)) @ OPTICAL
    t[:3, 3] = pose7[:3]
    return t


def _rows(m: Floats) -> list[list[float]]:
    return [[round(float(v), 9) + 0.0 for v in row] for row in m]
