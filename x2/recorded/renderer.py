"""Pixels from recorded states: set the state, run the kinematics, render. Physics is never stepped.

`StateRenderer` draws the cameras of one recorded world (`x2.recorded.world.open_world`) at one size.
A frame needs only positions: `mj_kinematics` places bodies, `mj_comPos` the centres of mass that
tracking cameras aim at, `mj_camlight` the cameras and lights; `mj_forward` would also run collision
and dynamics, which no pixel depends on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.errors import DatasetError
from x2.recorded.world import RecordedWorld
from x2.sim.mujoco.state import STATE_SPEC


@dataclass(frozen=True)
class ImageSize:
    height: int
    width: int

    @classmethod
    def parse(cls, text: str, where: str = "--size") -> ImageSize:
        """``"96x128"`` (height x width) -> ImageSize; anything else is a one-line error."""
        try:
            h, w = (int(x) for x in text.lower().split("x"))
        except ValueError:
            raise DatasetError(f"{where}: found {text!r}; allowed: HxW, e.g. 480x640") from None
        if not (16 <= h <= 2160 and 16 <= w <= 3840):
            raise DatasetError(f"{where}: found {text!r}; allowed: 16..2160 x 16..3840 pixels")
        return cls(h, w)

    def __str__(self) -> str:
        return f"{self.height}x{self.width}"


_CAMERA_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def parse_cameras(text: str | None, where: str = "--cameras") -> tuple[str, ...] | None:
    """``"head,left_wrist"`` -> ("head", "left_wrist"); None -> None (the command's default applies).
    Every command that takes a camera list parses it here."""
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(","))
    if not names or any(not _CAMERA_NAME.match(n) for n in names) or len(set(names)) != len(names):
        raise DatasetError(f"{where}: found {text!r}; allowed: distinct camera names separated by commas, "
                           "e.g. head,left_wrist")
    return names


class StateRenderer:
    """Renders `cameras` of a recorded world at `size` from any of its recorded states."""

    def __init__(self, world: RecordedWorld, cameras: Sequence[str], size: ImageSize) -> None:
        self.world, self.size = world, size
        self.model: mujoco.MjModel = world.backend.model
        self.data = mujoco.MjData(self.model)  # our own: the backend's data stays as the loop left it
        have = [self.model.camera(i).name for i in range(self.model.ncam)]
        missing = [c for c in cameras if c not in have]
        if missing:
            raise DatasetError(f"cameras: found {missing}; allowed: the model's cameras {have}")
        self.cameras = tuple(cameras)
        self._ids = {c: mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, c) for c in self.cameras}
        limit = (self.model.vis.global_.offheight, self.model.vis.global_.offwidth)
        if size.height > limit[0] or size.width > limit[1]:
            raise DatasetError(f"size: found {size}; allowed: up to {limit[0]}x{limit[1]} "
                               "(the model's offscreen buffer)")
        self._renderer = mujoco.Renderer(self.model, height=size.height, width=size.width)

    def set_state(self, state: np.ndarray) -> None:
        mujoco.mj_setState(self.model, self.data, np.asarray(state, np.float64), STATE_SPEC)
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def render(self, camera: str) -> np.ndarray:
        """The camera's picture of the state last set: (H, W, 3) uint8, a fresh array."""
        self._renderer.update_scene(self.data, camera=self._ids[camera])
        return self._renderer.render()

    def frame(self, state: np.ndarray) -> dict[str, np.ndarray]:
        self.set_state(state)
        return {c: self.render(c) for c in self.cameras}

    def camera_pose(self, camera: str) -> np.ndarray:
        """(7,) float64 world pose of the camera at the state last set: position, quaternion w x y z
        (MuJoCo/OpenGL camera axes: looking along -z, y up)."""
        cid = self._ids[camera]
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.cam_xmat[cid])
        return np.concatenate([self.data.cam_xpos[cid], quat])

    def intrinsics(self, camera: str) -> dict[str, object]:
        """Pinhole intrinsics at this size, as stored with the image stream."""
        fovy = float(self.model.cam_fovy[self._ids[camera]])
        f = 0.5 * self.size.height / np.tan(np.deg2rad(fovy) / 2)
        k = np.array([[f, 0.0, self.size.width / 2], [0.0, f, self.size.height / 2], [0.0, 0.0, 1.0]])
        return {"fovy_deg": fovy, "intrinsics": k, "height": self.size.height, "width": self.size.width}

    def camera_body(self, camera: str) -> str:
        """The body the camera is fixed to (``world`` for a booth camera)."""
        return str(self.model.body(int(self.model.cam_bodyid[self._ids[camera]])).name)

    def frames(self, states: np.ndarray) -> Iterator[dict[str, np.ndarray]]:
        for state in states:
            yield self.frame(state)

    def close(self) -> None:
        self._renderer.close()

    def __enter__(self) -> StateRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
