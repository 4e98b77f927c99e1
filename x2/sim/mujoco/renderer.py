"""MuJoCo's `StateRenderer` (x2/sim/camera.py): the one place x2 makes a `mujoco.Renderer`.

A picture needs only positions: `set_state` runs `mj_kinematics` (bodies), `mj_comPos` (the centres of mass that
tracking cameras aim at) and `mj_camlight` (cameras and lights) on the renderer's own MjData; `mj_forward` would
also run collision and dynamics, which no pixel of x2's worlds depends on. The backend's own data is never touched,
so a renderer can draw stored states while the world it came from steps on.

Two engines draw a camera's picture (x2/sim/camera.py: RENDERERS, chosen by `X2_RENDERER`, default classic):
MuJoCo's classic OpenGL renderer (`mujoco.Renderer`), and MuJoCo 4's physically based Filament renderer
(`mujoco.rendering.filament`, `FilamentView` below). Filament draws RGB only: silhouettes, free cameras and
calibrated lenses stay classic. On a machine without a GPU it runs on Mesa's llvmpipe through OpenGL, which it
opens through an X display (Xvfb does); its Vulkan backend needs the Vulkan loader (libvulkan.so.1) and
fails without it, so x2 asks for OpenGL (docs/looks.md has the measurements).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Image
from x2.sim.camera import (
    CENTRE,
    CameraError,
    FreeCamera,
    ImageSize,
    Intrinsics,
    Viewpoint,
    WorldCameras,
    chosen_renderer,
    pinhole,
)
from x2.sim.mujoco.lens import DistortedView, camera_matrix, distortion
from x2.sim.mujoco.state import STATE_SPEC, state_size
from x2.sim.mujoco.streams import StreamDrawer
from x2.sim.streams import RGB, SegmentTable, Shot


def world_cameras(model: mujoco.MjModel) -> WorldCameras:
    """The model's cameras in its order, and its offscreen buffer: the largest picture a renderer of it draws."""
    return WorldCameras(tuple(model.camera(i).name for i in range(model.ncam)),
                        ImageSize(model.vis.global_.offheight, model.vis.global_.offwidth))


class FilamentView:
    """MuJoCo 4's Filament renderer drawing `model`'s cameras into one (H, W, 3) buffer at `size`."""

    def __init__(self, model: mujoco.MjModel, size: ImageSize) -> None:
        if not os.environ.get("DISPLAY"):
            raise CameraError("renderer: found 'filament' without an X display ($DISPLAY unset; MuJoCo's Filament "
                              "opens OpenGL through X here, its Vulkan needs libvulkan.so.1); allowed: classic, or "
                              "filament under an X server (e.g. xvfb-run -a x2 ...)")
        # (imported here: the Filament bindings load only when asked for)
        from mujoco import mjrf
        from mujoco.rendering.filament import model_scene, renderer
        self.model = model
        self._mjrf: Any = mjrf
        self._ctx = mjrf.Context(mjrf.ContextConfig(graphics_api=mjrf.GraphicsApi.GRAPHICS_API_OPENGL))
        self._renderer = renderer.Renderer(self._ctx)
        self._scene = model_scene.ModelScene(self._ctx, model, self._renderer.scene("world"))
        self._buffer = np.zeros((size.height, size.width, 3), np.uint8)
        self._renderer.target("rgb", self._buffer)
        self._view = renderer.View
        # the classic scene gives each camera's frustum (position, axes, near/far) exactly as mujoco.Renderer
        self._camera = mujoco.MjvCamera()
        self._mjv = mujoco.MjvScene(model, maxgeom=1)
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED

    def render(self, data: mujoco.MjData, camera: int) -> Image:
        self._camera.fixedcamid = camera
        mujoco.mjv_updateCamera(self.model, data, self._camera, self._mjv)
        glcam = mujoco.mjv_averageCamera(self._mjv.camera[0], self._mjv.camera[1])
        self._scene.update(data)
        self._renderer.render([self._view(scene="world", target="rgb", camera=glcam)])
        return self._buffer.copy()


class MujocoRenderer:
    """Draws `cameras` of `model` at `size` from any state of it (see the module docstring)."""

    def __init__(self, model: mujoco.MjModel, cameras: Sequence[str], size: ImageSize) -> None:
        self.model, self.size = model, size
        self.data = mujoco.MjData(model)  # our own: the backend's data stays as the loop left it
        world = world_cameras(model)
        missing = world.missing(cameras)
        if missing:
            raise CameraError(f"cameras: found {missing}; allowed: the model's cameras {list(world.names)}")
        self.cameras = tuple(cameras)
        self._ids = {c: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c) for c in self.cameras}
        if not world.fits(size):
            raise CameraError(f"size: found {size}; allowed: up to {world.largest} (the model's offscreen buffer)")
        self.state_size = state_size(model)
        self.engine = chosen_renderer()
        self.description = f"mujoco {mujoco.__version__}" + ("" if self.engine == "classic" else f" {self.engine}")
        # Each GL context made is closed again when a later part fails (Filament without $DISPLAY refuses here):
        # a renderer that was never returned cannot be closed by its caller.
        with contextlib.ExitStack() as made:
            self._drawer = StreamDrawer(model, size.height, size.width)  # depth and segmentation beside the picture
            made.callback(self._drawer.close)
            self._renderer = self._drawer.renderer
            self._filament = FilamentView(model, size) if self.engine == "filament" else None
            # cameras with a calibrated, distorting lens are drawn wider and remapped (x2/sim/mujoco/lens.py)
            self._lenses: dict[str, DistortedView] = {}
            for c, i in self._ids.items():
                if distortion(model, i) is not None:
                    self._lenses[c] = DistortedView(model, i, size)
                    made.callback(self._lenses[c].close)
            made.pop_all()

    @classmethod
    def of_xml(cls, model_xml: str, cameras: Sequence[str], size: ImageSize,
               textures: Mapping[str, bytes] | None = None) -> MujocoRenderer:
        """A renderer of the world `model_xml` describes (MJCF text as `Backend.model_xml` gives it, with the
        images `Backend.model_textures` gives)."""
        return cls(mujoco.MjModel.from_xml_string(model_xml, dict(textures or {})), cameras, size)

    def set_state(self, state: Floats) -> None:
        mujoco.mj_setState(self.model, self.data, np.asarray(state, np.float64), STATE_SPEC)
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def render(self, camera: str) -> Image:
        """The camera's picture of the state last set: (H, W, 3) uint8, a fresh array."""
        lens = self._lenses.get(camera)
        if lens is not None:
            return lens.render(self.data)
        if self._filament is not None:
            return self._filament.render(self.data, self._ids[camera])
        self._renderer.update_scene(self.data, camera=self._ids[camera])
        image: Image = self._renderer.render()
        return image

    def shot(self, camera: str, streams: tuple[str, ...]) -> Shot:
        """The camera's `streams` (x2.sim.streams: rgb, depth, segmentation) of the state last set, in as few
        renders as they allow (x2/sim/mujoco/streams.py); through the camera's lens when it has one."""
        lens = self._lenses.get(camera)
        if lens is not None:
            return lens.shot(self.data, streams)
        if self._filament is None or RGB not in streams:
            return self._drawer.draw(self.data, self._ids[camera], streams)
        # Filament draws the picture; depth and segmentation stay MuJoCo's classic passes (the same geometry)
        rest = self._drawer.draw(self.data, self._ids[camera], tuple(s for s in streams if s != RGB))
        return replace(rest, rgb=self._filament.render(self.data, self._ids[camera]))

    @property
    def segment_table(self) -> SegmentTable:
        """What each id of `shot`'s segmentation names (x2/sim/mujoco/segments.py)."""
        return self._drawer.segments.table

    def silhouette(self, camera: str) -> Bools:
        """(H, W) where the camera sees a geom of the state last set (MuJoCo's segmentation rendering; through the
        camera's lens): the outline `x2 calibrate camera --frame` draws over a real picture."""
        lens = self._lenses.get(camera)
        if lens is not None:
            return lens.silhouette(self.data)
        self._renderer.enable_segmentation_rendering()
        try:
            self._renderer.update_scene(self.data, camera=self._ids[camera])
            mask: Bools = self._renderer.render()[..., 0] >= 0
        finally:
            self._renderer.disable_segmentation_rendering()
        return mask

    def render_free(self, view: FreeCamera) -> tuple[Image, Viewpoint]:
        """The picture of the state last set from a free camera, and where the renderer placed that camera."""
        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.lookat[:], cam.distance, cam.azimuth, cam.elevation = view.lookat, view.distance, view.azimuth, \
            view.elevation
        self._renderer.update_scene(self.data, camera=cam)
        image: Image = self._renderer.render()
        glcam = self._renderer.scene.camera[0]
        return image, Viewpoint(np.array(glcam.pos), np.array(glcam.forward), np.array(glcam.up),
                                float(self.model.vis.global_.fovy))

    def frame(self, state: Floats) -> dict[str, Image]:
        self.set_state(state)
        return {c: self.render(c) for c in self.cameras}

    def frames(self, states: Floats) -> Iterator[dict[str, Image]]:
        for state in states:
            yield self.frame(state)

    def camera_pose(self, camera: str) -> Floats:
        """(7,) float64 world pose of the camera at the state last set: position, quaternion w x y z
        (MuJoCo/OpenGL camera axes: looking along -z, y up)."""
        cid = self._ids[camera]
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.cam_xmat[cid])
        return np.concatenate([self.data.cam_xpos[cid], quat])

    def camera_frame(self, camera: str) -> tuple[Floats, Floats]:
        """The camera's position (3,) and rotation (3, 3) at the state last set, copies."""
        cid = self._ids[camera]
        return self.data.cam_xpos[cid].copy(), self.data.cam_xmat[cid].reshape(3, 3).copy()

    def intrinsics(self, camera: str) -> Intrinsics:
        """Intrinsics at this size, as stored with the image stream: a calibrated camera's K (and its distortion,
        when it has one), else the pinhole of its field of view."""
        cid = self._ids[camera]
        fovy = float(self.model.cam_fovy[cid])
        k = camera_matrix(self.model, cid, self.size)
        out: Intrinsics = {"fovy_deg": fovy, "intrinsics": pinhole(fovy, self.size.height, self.size.width) if k is None
                           else k, "height": self.size.height, "width": self.size.width}
        d = distortion(self.model, cid)
        if d is not None:
            out["distortion"] = d
        if k is not None:
            out["pixel_origin"] = CENTRE
        return out

    def camera_body(self, camera: str) -> str:
        """The body the camera is fixed to (``world`` for a booth camera)."""
        return str(self.model.body(int(self.model.cam_bodyid[self._ids[camera]])).name)

    def close(self) -> None:
        self._filament = None  # (MuJoCo's Filament bindings have no close: dropping the view frees its context)
        self._drawer.close()  # (its mujoco.Renderer is self._renderer)
        for lens in self._lenses.values():
            lens.close()

    def __enter__(self) -> MujocoRenderer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
