"""Draw an embodiment for one reset (the cameras' mounting and lens, and the table's height relative to the
robot's mount, within what the robot declares), and apply it to a world.

A draw is plain JSON, stored with the episode (format.RESET_EMBODIMENT_ATTR), each key present only when its
axis was drawn:

    {"cameras": {"head": {"offset": [dx, dy, dz], "turn": [rx, ry, rz], "fovy": d}}, "table_height": h}

offset in metres (world axes of the camera's parent frame), turn a rotation vector in radians (camera frame),
fovy in degrees; table_height in metres, how far the table's top stands above its nominal height as the robot
sees it. Numbers are rounded to DECIMALS, so the MJCF text (6 significant digits) carries them as drawn and the
world is the same text whichever machine draws it.

The cameras change no body, geom or option the physics reads, so a camera-jittered world steps exactly as the
nominal one. The table's height is realised by moving the robot's mount down by `h` (`mounted`), not the table
up: for a robot welded to the world the two are the same relative geometry under the same vertical gravity,
but moving the mount leaves the table, everything placed on it (objects, regions, welded fixtures) and every
world-frame height x2 reads as a constant (the booth's `table_height` in predicates and skills, scenery looks)
where they were, so none of them can disagree with the model. The planner, IK and collision checks read the
compiled model, where the mount has moved. A static mount never touches the floor or the table in MuJoCo
(bodies welded to the world are not collided with each other), so lowering a pedestal is harmless; a mobile
base rides on the floor, and its robot file may not declare the axis (x2/envspec/robot.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import mujoco
import numpy as np
import numpy.typing as npt

from x2.base.errors import X2Error
from x2.envspec.env import CameraJitter, EnvSpec, RobotSpec
from x2.sim.backend import CameraDraw, EmbodimentDraw
from x2.sim.mujoco.world import world_text

DECIMALS = 5


def sample_embodiment(robot: RobotSpec, axes: Sequence[str], rng: np.random.Generator) -> EmbodimentDraw | None:
    """The draw of the embodiment axes a scene lists (`axes`) for `robot`, or None when nothing is drawn (no
    axis listed, or none the robot declares a range for). The cameras come first, then the table's height, each
    taking a fixed number of uniforms from `rng`, so listing `table_height` leaves the cameras' draws as they
    were."""
    draw: EmbodimentDraw = {}
    if "camera" in axes and robot.camera_jitter:
        draw["cameras"] = sample_cameras(robot.camera_jitter, rng)
    if "table_height" in axes and robot.table_height_jitter > 0:
        draw["table_height"] = sample_table_height(robot.table_height_jitter, rng)
    return draw or None


def sample_cameras(jitter: Sequence[CameraJitter], rng: np.random.Generator) -> dict[str, CameraDraw]:
    """One draw per declared camera, in declaration order, each taking exactly 8 uniforms (offset 3, turn axis 3,
    turn angle 1, fovy 1), so a camera's draw does not depend on another camera's ranges."""
    cameras: dict[str, CameraDraw] = {}
    for j in jitter:
        u = rng.uniform(-1.0, 1.0, size=8)
        offset = u[:3] * j.position
        axis = u[3:6] / max(float(np.linalg.norm(u[3:6])), 1e-9)
        turn = axis * np.deg2rad(j.angle) * abs(u[6])
        cameras[j.camera] = {"offset": _round(offset), "turn": _round(turn), "fovy": round(float(u[7] * j.fovy),
                                                                                           DECIMALS)}
    return cameras


def sample_table_height(jitter: float, rng: np.random.Generator) -> float:
    """The table's height offset relative to the mount, uniform in +-`jitter` m: exactly one uniform."""
    u = float(rng.uniform(-1.0, 1.0, size=1)[0])
    return round(u * jitter, DECIMALS) + 0.0  # (+ 0.0: no "-0.0" in the JSON)


def mounted(env: EnvSpec, draw: EmbodimentDraw | None) -> EnvSpec:
    """`env` with the robot's mount moved down by the drawn table height (`env` itself when none was drawn): the
    world built from it has the table `table_height` m higher as the robot sees it (see the module docstring).
    Only the world is built from this env; the episode keeps the nominal one and the draw beside it."""
    height = 0.0 if draw is None else float(draw.get("table_height", 0.0))
    if height == 0.0:
        return env
    x, y, z = env.robot.base_pos
    robot = dataclasses.replace(env.robot, base_pos=(x, y, round(z - height, DECIMALS)))
    return dataclasses.replace(env, robot=robot)


def apply_embodiment(spec: mujoco.MjSpec, draw: EmbodimentDraw) -> None:
    """Move, turn and re-lens the drawn cameras of a world spec in place (the table's height is the world
    builder's: `mounted`)."""
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


def jittered_world(model_xml: str, draw: EmbodimentDraw, textures: Mapping[str, bytes] | None = None) -> str:
    """A world's MJCF text (as x2 printed it; `textures` the images it carries) with the drawn cameras applied,
    printed the same way."""
    spec = mujoco.MjSpec.from_string(model_xml)
    spec.assets = dict(textures or {})
    apply_embodiment(spec, draw)
    return world_text(spec, spec.option.timestep)


def _round(values: npt.NDArray[np.float64]) -> list[float]:
    return [round(float(v), DECIMALS) for v in values]
