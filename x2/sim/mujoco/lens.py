"""A calibrated camera's lens in a MuJoCo model: its pinhole matrix K at any picture size, its OpenCV distortion, and
the distorted picture drawn from a wider pinhole one (x2/sim/mujoco/renderer.py draws every camera through this).

MuJoCo draws pinhole pictures. A camera x2 calibrated (x2/sim/mujoco/camera_calibration.py) carries its intrinsics in
MuJoCo's own fields (`sensorsize` set) and its distortion coefficients as its user data: the world's
`<size nuser_cam="8"/>` and the camera's `user="k1 k2 p1 p2 k3 k4 k5 k6"` (OpenCV's order; plumb_bob's five then
zeros), so a world's MJCF text, the one thing an episode stores of its world, carries the whole lens.

A distorted picture of `size` is made as a lens makes it: for each of its pixels the ray the distortion model sends
it (cv2.undistortPointsIter: the inverse of OpenCV's projection), looked up in a pinhole picture with the same focal
lengths drawn large enough to hold every such ray (a margin around the picture), bilinearly (cv2.remap).
"""

from __future__ import annotations

import copy
import math

import cv2
import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Image
from x2.base.errors import X2Error
from x2.sim.camera import ImageSize
from x2.sim.mujoco.streams import StreamDrawer
from x2.sim.streams import Segments, Shot

DISTORTION_SLOTS = 8  # the camera user data x2 writes: OpenCV's k1 k2 p1 p2 k3 k4 k5 k6
PRINCIPAL_SIGN = -1.0  # MuJoCo 4.0.1: image centre + PRINCIPAL_SIGN * principal offset = the principal point


def calibrated(model: mujoco.MjModel, cid: int) -> bool:
    """Whether camera `cid` has real intrinsics (a sensor size) rather than a field of view."""
    return bool(np.any(model.cam_sensorsize[cid] > 0))


def camera_matrix(model: mujoco.MjModel, cid: int, size: ImageSize) -> Floats | None:
    """K (3x3) of camera `cid` in a picture of `size`, OpenCV's pixel convention (the first pixel's centre at 0, 0),
    for a calibrated camera; None for a field-of-view one (x2.sim.camera.pinhole)."""
    if not calibrated(model, cid):
        return None
    sensor = np.asarray(model.cam_sensorsize[cid], np.float64)
    focal, principal = np.asarray(model.cam_intrinsic[cid][:2]), np.asarray(model.cam_intrinsic[cid][2:])
    pixels = np.array([size.width, size.height], np.float64)
    f = focal / sensor * pixels
    c = pixels / 2 + PRINCIPAL_SIGN * principal / sensor * pixels - 0.5
    return np.array([[f[0], 0.0, c[0]], [0.0, f[1], c[1]], [0.0, 0.0, 1.0]])


def distortion(model: mujoco.MjModel, cid: int) -> Floats | None:
    """Camera `cid`'s OpenCV distortion coefficients (8,), or None for a pinhole camera."""
    if not calibrated(model, cid) or model.nuser_cam < DISTORTION_SLOTS:
        return None
    d = np.asarray(model.cam_user[cid][:DISTORTION_SLOTS], np.float64)
    return d if np.any(d != 0) else None


class DistortedView:
    """Draws camera `cid` of `model` at `size` through its lens (see the module docstring). It draws from a copy of
    the model whose camera has a wider sensor (the same pixels per radian, a margin around the picture)."""

    def __init__(self, model: mujoco.MjModel, cid: int, size: ImageSize) -> None:
        k, d = camera_matrix(model, cid, size), distortion(model, cid)
        assert k is not None and d is not None
        self.cid = cid
        v, u = np.mgrid[0:size.height, 0:size.width].astype(np.float64)
        pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
        # each pixel's ray, as the pixel it lands on in the pinhole picture of the same K
        rays = np.asarray(cv2.undistortPointsIter(pts, k, d, np.eye(3), k, (cv2.TERM_CRITERIA_COUNT
                                                                            | cv2.TERM_CRITERIA_EPS, 100, 1e-10)),
                          np.float64).reshape(-1, 2)
        sx, sy = rays[:, 0], rays[:, 1]
        mx = max(0, math.ceil(max(-sx.min(), sx.max() - (size.width - 1)))) + 2
        my = max(0, math.ceil(max(-sy.min(), sy.max() - (size.height - 1)))) + 2
        if not (np.all(np.isfinite(rays)) and mx <= size.width and my <= size.height):
            raise X2Error(f"camera {model.camera(cid).name!r}: distortion: found coefficients {d.tolist()} that send "
                          "the picture's edge past twice its field of view; allowed: a lens OpenCV's model can invert")
        self.map_x = (sx + mx).reshape(size.height, size.width).astype(np.float32)
        self.map_y = (sy + my).reshape(size.height, size.width).astype(np.float32)
        wide = ImageSize(size.height + 2 * my, size.width + 2 * mx)
        self.model = copy.copy(model)  # (only this camera's sensor and the offscreen buffer differ)
        self.model.cam_sensorsize[cid] = model.cam_sensorsize[cid] * np.array([wide.width / size.width,
                                                                             wide.height / size.height])
        self.model.vis.global_.offwidth = max(self.model.vis.global_.offwidth, wide.width)
        self.model.vis.global_.offheight = max(self.model.vis.global_.offheight, wide.height)
        self._drawer = StreamDrawer(self.model, wide.height, wide.width)
        self._renderer = self._drawer.renderer

    def render(self, data: mujoco.MjData) -> Image:
        """The distorted picture of the state in `data` (data of the original model: the copy has its layout)."""
        self._renderer.update_scene(data, camera=self.cid)
        wide = self._renderer.render()
        image: Image = cv2.remap(wide, self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        return image

    def shot(self, data: mujoco.MjData, streams: tuple[str, ...]) -> Shot:
        """The distorted streams of the state in `data`: the picture bilinearly, depth and segmentation from the
        nearest pinhole pixel (a depth or an id is not blended with its neighbour's)."""
        wide = self._drawer.draw(data, self.cid, streams)
        rgb: Image | None = None if wide.rgb is None else np.asarray(
            cv2.remap(wide.rgb, self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE), np.uint8)
        depth: Floats | None = None if wide.depth is None else np.asarray(
            cv2.remap(wide.depth, self.map_x, self.map_y, cv2.INTER_NEAREST), np.float32)
        ids: Segments | None = None if wide.segmentation is None else np.asarray(
            cv2.remap(wide.segmentation, self.map_x, self.map_y, cv2.INTER_NEAREST), np.uint16)
        return Shot(rgb=rgb, depth=depth, segmentation=ids)

    def silhouette(self, data: mujoco.MjData) -> Bools:
        """Where the distorted picture shows a geom (MuJoCo's segmentation, remapped to the nearest pixel)."""
        self._renderer.enable_segmentation_rendering()
        try:
            self._renderer.update_scene(data, camera=self.cid)
            seen = (self._renderer.render()[..., 0] >= 0).astype(np.uint8)
        finally:
            self._renderer.disable_segmentation_rendering()
        mask: Bools = cv2.remap(seen, self.map_x, self.map_y, cv2.INTER_NEAREST) > 0
        return mask

    def close(self) -> None:
        self._renderer.close()
