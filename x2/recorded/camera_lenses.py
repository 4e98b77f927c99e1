"""What a recorded episode's cameras are: each one's intrinsics at a picture size, its lens's distortion and where it
was at the first frame, as the exporters write them beside the frames (`camera_lenses` in the LeRobot, zarr and HDF5
exports' x2 provenance; docs/format.md).

A camera is described at the size its exported frames were taken at (`taken_at`, as x2.recorded.frames.frames_at
takes it: a stream stored at that size, or at any size when None, is read; the other cameras are drawn at it): a
stream read is described by its attrs (`intrinsics` K at the stored size, `distortion` when its lens has one) and
its first `/observations/camera_poses` row; a camera drawn is asked of the episode's world (its renderer at that
size, at the first state). K is then scaled per axis to the exported size, as the exporters stretch the frames
(x2/export/episode_arrays.py resizes them whole, whatever the aspect).

The exported K is in OpenCV's pixel convention for every camera (`pixel_origin`: "centre": (0, 0) is the first
pixel's centre, so a centred camera's principal point is ((W-1)/2, (H-1)/2)). A calibrated camera's stored K
already is (x2 calibrate camera); a field-of-view camera's stored `intrinsics` (x2.sim.camera.pinhole) puts the
principal point at (W/2, H/2), the corner convention (0, 0 the first pixel's corner), and is moved half a pixel
here. A recording without a world (source `real`) describes only what its streams' attrs say.
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
from x2.recorded.frames import DEFAULT_SIZE, split_cameras, stored_cameras
from x2.recorded.world import open_world
from x2.sim.camera import CENTRE, ImageSize, Intrinsics, opencv_matrix, optical_to_world, scaled_k


@dataclass(frozen=True)
class _Seen:
    size: ImageSize
    k: Floats
    fovy: float
    distortion: Floats | None
    pose: Floats | None  # (7,) first frame
    body: str
    pixel_origin: str | None  # stored with a calibrated K; None: a pinhole's, or a stream from before it was stored


class CameraLens(TypedDict, total=False):
    height: int
    width: int
    K: list[list[float]]  # 3x3 at height x width, OpenCV's pixel convention
    pixel_origin: str  # "centre": (0, 0) is the first pixel's centre (OpenCV's, ROS's)
    distortion: list[float]  # OpenCV's k1 k2 p1 p2 k3 k4 k5 k6; absent: none
    fovy_deg: float
    body: str  # the body the camera is fixed to (`world`: it does not move)
    pose: list[list[float]]  # 4x4 camera (OpenCV optical frame: x right, y down, z forward) to world, first frame
    poses: str  # where the per-frame poses are in the source episode


def camera_lenses(ep: Episode, cameras: Sequence[str], sizes: Mapping[str, ImageSize],
                  taken_at: ImageSize | None = None) -> dict[str, CameraLens]:
    """Each of `cameras` described at its size in `sizes` (else the size its frames are taken at), its frames taken
    at `taken_at` as the module docstring says."""
    read, draw = split_cameras(ep, cameras, taken_at)
    stored = stored_cameras(ep)
    described = {c: _stored(ep, c) for c in read}
    # cameras drawn, each at the size it is drawn at: a stream read without a lens in its attrs at its own size
    drawn_at = {c: stored[c] for c in read if described[c] is None} | dict.fromkeys(draw, taken_at or DEFAULT_SIZE)
    if drawn_at and not ep.is_real and fmt.MODEL_XML_ATTR in ep.attrs:
        states = ep.numeric(fmt.STATES, 2, 1)
        for size in dict.fromkeys(drawn_at.values()):  # (in the cameras' order: the same every run)
            at = [c for c in cameras if drawn_at.get(c) == size]
            with open_world(ep) as world, world.backend.renderer(at, size) as renderer:
                renderer.set_state(np.asarray(states[0], np.float64))
                for c in at:
                    i = renderer.intrinsics(c)
                    described[c] = _Seen(size, np.asarray(i["intrinsics"], np.float64), float(i["fovy_deg"]),
                                         i.get("distortion"), renderer.camera_pose(c), renderer.camera_body(c),
                                         i.get("pixel_origin"))
    out: dict[str, CameraLens] = {}
    for c in cameras:
        seen = described.get(c)
        if seen is None:
            continue
        h, w, fovy = seen.size.height, seen.size.width, seen.fovy
        to = sizes.get(c, seen.size)
        intrinsics = Intrinsics(fovy_deg=fovy, intrinsics=seen.k, height=h, width=w)
        if seen.pixel_origin is not None:
            intrinsics["pixel_origin"] = seen.pixel_origin
        k = opencv_matrix(intrinsics)
        k = scaled_k(k, seen.size, to)  # the frames are stretched per axis to the exported size
        lens: CameraLens = {"height": to.height, "width": to.width, "K": _rows(k), "pixel_origin": CENTRE,
                            "fovy_deg": round(fovy, 6)}
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
                 float(attrs["fovy_deg"]), dist, pose, str(attrs.get("body", "")),
                 str(attrs["pixel_origin"]) if "pixel_origin" in attrs else None)


def _optical(pose7: Floats) -> Floats:
    return optical_to_world(pose7[:3], quat_to_rotation(np.asarray(pose7[3:7], np.float64)))


def _rows(m: Floats) -> list[list[float]]:
    return [[round(float(v), 9) + 0.0 for v in row] for row in m]
