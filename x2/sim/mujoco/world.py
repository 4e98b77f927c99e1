"""Build the MuJoCo world for an EnvSpec: robot + grippers, green booth, and the scene's objects.

Names in the compiled model (the backend and the dataset store rely on them):

- robot: exactly as in its MJCF (``left_j1`` ... ``right_j6``, actuators of the same names, sites
  ``left_flange`` / ``right_flange``, camera ``head``);
- grippers: prefixed ``<arm>_`` (``left_finger_a``, actuator ``left_gripper``, site ``left_tcp``,
  camera ``left_wrist``);
- booth: geoms ``floor``, ``table_top``, ``wall_*`` (each wall in a static body of the same name),
  lights ``key`` / ``fill_*``, camera ``front``, site ``table_surface``;
- objects: everything prefixed ``<instance>/`` (body ``microwave/object``, joint
  ``microwave/door_hinge``, site ``microwave/cavity``); free assets get a free joint
  ``<instance>/free``, welded assets none (move them through ``model.body_pos``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import mujoco

from x2.errors import SpecError
from x2.sim.mujoco.booth import add_booth
from x2.sim.mujoco.robot import load_mjcf, load_robot
from x2.spec.env import AssetModel, EnvSpec, ObjectInstance

ASSET_ROOT_BODY = "object"


def object_prefix(instance: str) -> str:
    return f"{instance}/"


def object_body(instance: str) -> str:
    return f"{instance}/{ASSET_ROOT_BODY}"


def free_joint(instance: str) -> str:
    return f"{instance}/free"


def initial_pose(obj: ObjectInstance, asset: AssetModel) -> tuple[float, float, float, float]:
    """(x, y, z, yaw) of the asset origin before the backend's reset moves it."""
    if obj.pose is not None:
        return obj.pose
    if obj.region is not None:
        r = obj.region
        yaw = 0.5 * (r.yaw_range[0] + r.yaw_range[1])
        return (r.center[0], r.center[1], r.z + asset.height, yaw)
    raise SpecError(None, None, f"objects.{obj.name}", "neither pose nor region",
                    "a pose (x, y, z, yaw) or a region")


def _yaw_quat(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def add_object(spec: mujoco.MjSpec, obj: ObjectInstance, asset: AssetModel) -> mujoco.MjsBody:
    """Attach one asset under the world at its initial pose; free assets get a free joint."""
    x, y, z, yaw = initial_pose(obj, asset)
    child = load_mjcf(asset.mjcf, f"asset {asset.name!r}")
    if child.body(ASSET_ROOT_BODY) is None:
        bodies = [b.name for b in child.worldbody.bodies]
        raise SpecError(str(asset.mjcf), None, "worldbody", f"top-level bodies {bodies}",
                        f"one top-level body named {ASSET_ROOT_BODY!r}")
    frame = spec.worldbody.add_frame(pos=[x, y, z], quat=_yaw_quat(yaw))
    spec.attach(child, frame=frame, prefix=object_prefix(obj.name))
    body = spec.body(object_body(obj.name))
    if asset.free:
        body.add_freejoint(name=free_joint(obj.name))
    return body


def build_world(env: EnvSpec, chosen: Mapping[str, AssetModel]) -> mujoco.MjSpec:
    """The complete world spec; ``chosen`` maps instance names to the drawn asset (default: the
    instance's first candidate). Compile with ``spec.compile()``."""
    spec = load_robot(env.robot)
    # Welded objects must stay separate bodies: the backend moves them through model.body_pos.
    spec.compiler.fusestatic = False
    add_booth(spec, env.booth)
    for obj in env.objects:
        add_object(spec, obj, chosen.get(obj.name, obj.candidates[0]))
    return spec
