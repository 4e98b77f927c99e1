"""Draw an embodiment for one reset (the cameras' mounting and lens, within the robot's declared jitter), and
apply it to a world.

A draw is plain JSON, stored with the episode (format.RESET_EMBODIMENT_ATTR):

    {"cameras": {"head": {"offset": [dx, dy, dz], "turn": [rx, ry, rz], "fovy": d}}}

offset in metres (world axes of the camera's parent frame), turn a rotation vector in radians (camera frame),
fovy in degrees. Numbers are rounded to DECIMALS, so the MJCF text (6 significant digits) carries them as
drawn and the world is the same text whichever machine draws it. Only cameras change: no body, geom or
option the physics reads, so a jittered world steps exactly as the nominal one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mujoco
import numpy as np
import numpy.typing as npt

from x2.errors import X2Error
from x2.sim.mujoco.world import world_text
from x2.spec.env import CameraJitter

DECIMALS = 5


def sample_embodiment(jitter: Sequence[CameraJitter], rng: np.random.Generator) -> dict[str, Any]:
    """One draw per declared camera, in declaration order, each taking exactly 8 uniforms (offset 3, turn axis 3,
    turn angle 1, fovy 1), so a camera's draw does not depend on another camera's ranges."""
    cameras: dict[str, Any] = {}
    for j in jitter:
        u = rng.uniform(-1.0, 1.0, size=8)
        offset = u[:3] * j.position
        axis = u[3:6] / max(float(np.linalg.norm(u[3:6])), 1e-9)
        turn = axis * np.deg2rad(j.angle) * abs(u[6])
        cameras[j.camera] = {"offset": _round(offset), "turn": _round(turn), "fovy": round(float(u[7] * j.fovy),
                                                                                           DECIMALS)}
    return {"cameras": cameras}


def apply_embodiment(spec: mujoco.MjSpec, draw: Mapping[str, Any]) -> None:
    """Move, turn and re-lens the drawn cameras of a world spec in place."""
    for name, change in draw.get("cameras", {}).items():
        cam = spec.camera(name)
        if cam is None:
            raise X2Error(f"camera_jitter: found camera {name!r}, which the world has not; allowed: its cameras")
        cam.pos = np.round(np.asarray(cam.pos) + np.asarray(change["offset"]), DECIMALS)
        turn = np.asarray(change["turn"], dtype=np.float64)
        dq = np.array([1.0, 0.0, 0.0, 0.0])
        angle = float(np.linalg.norm(turn))
        if angle > 0:
            mujoco.mju_axisAngle2Quat(dq, turn / angle, angle)
        q = np.zeros(4)
        mujoco.mju_mulQuat(q, np.asarray(cam.quat, dtype=np.float64), dq)  # turned in its own frame
        cam.quat = np.round(q / np.linalg.norm(q), DECIMALS + 1)
        cam.fovy = round(float(cam.fovy) + float(change["fovy"]), DECIMALS)


def jittered_world(model_xml: str, draw: Mapping[str, Any]) -> str:
    """A world's MJCF text (as x2 printed it) with the drawn embodiment applied, printed the same way."""
    spec = mujoco.MjSpec.from_string(model_xml)
    apply_embodiment(spec, draw)
    return world_text(spec, spec.option.timestep)


def _round(values: npt.NDArray[np.float64]) -> list[float]:
    return [round(float(v), DECIMALS) for v in values]
