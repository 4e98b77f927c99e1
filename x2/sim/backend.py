"""The simulator interface every loop and tool talks to: the seam between x2 and a simulator. MuJoCo implements it
(x2/sim/mujoco/backend.py); another simulator plugs in through the entry point group `x2.backends` and must pass
tests/backend_contract (docs/backends.md).

A backend owns one world built from an `EnvSpec`. It knows nothing of loops, labels or datasets
(`sim` knows no loop): it resets, steps one control tick, saves and restores state, reports what
the robot and objects are doing, and makes pictures. Actions follow `x2.envspec.action` (per arm: joint targets,
then the gripper opening in [0, 1]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypedDict

import numpy as np

from x2.base.arrays import Floats, Image
from x2.base.errors import X2Error
from x2.envspec.action import ActionLayout
from x2.envspec.env import EnvSpec
from x2.sim.camera import ImageSize, StateRenderer, WorldCameras
from x2.sim.layout import Placement
from x2.sim.streams import Shot

if TYPE_CHECKING:
    import mujoco


class CameraDraw(TypedDict):
    """One camera's drawn change (x2/sim/mujoco/embodiment.py), in its own frame."""

    offset: list[float]  # m
    turn: list[float]  # a rotation vector, rad
    fovy: float  # degrees added to its field of view


class EmbodimentDraw(TypedDict, total=False):
    """The embodiment a reset drew, each part only when drawn (recorded as the episode's `reset_embodiment`)."""

    cameras: dict[str, CameraDraw]  # by camera name, in the robot's declaration order
    table_height: float  # m, relative to the robot's mount


@dataclass(frozen=True)
class ResetInfo:
    seed: int
    variant: str
    assets: dict[str, str]  # object instance -> chosen asset name
    layout: dict[str, Placement]
    instruction: str
    # the look drawn for this world when its scene randomises appearance: {"scenery": NAME, "look": {...}}
    # (x2/sim/mujoco/look.py); None when it does not
    appearance: dict[str, object] | None = None
    # the cameras and table height drawn for this world when its scene randomises embodiment
    # ({"cameras": ..., "table_height": m}, each when drawn: x2/sim/mujoco/embodiment.py)
    embodiment: EmbodimentDraw | None = None
    # the object each of the scene's roles was bound to (x2/envspec/roles.py); None when it declares none
    roles: dict[str, str] | None = None


@dataclass(frozen=True)
class RobotState:
    qpos: Floats  # (J,) arm joints then finger joints, per arm, in `Backend.robot_joint_names` order
    qvel: Floats  # (J,)
    ee_pose: Floats  # (arms, 7) tcp position + quaternion (w, x, y, z)


@dataclass(frozen=True)
class Contact:
    geom1: str
    geom2: str
    body1: str
    body2: str
    distance: float  # negative = penetration


@dataclass(frozen=True)
class CameraInfo:
    name: str
    width: int
    height: int
    fovy_deg: float
    intrinsics: Floats  # 3x3
    extrinsics: Floats  # 4x4 camera-to-world (OpenGL camera axes: -z forward)
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Jaw:
    """A linkage gripper's jaw, settled at evenly spaced commands (the gripper action, 0 closed .. 1 open) on the
    gripper alone (x2/sim/mujoco/jaw.py): the gap between its pads and every gripper joint."""

    commands: Floats  # (K,) increasing, 0 .. 1
    gaps: Floats  # (K,) m between the pads' inner faces, growing with the command
    qpos: Floats  # (K, J) the arm's gripper joints (ArmSpec.gripper_joints' order), finger_a first

    @property
    def gap_open(self) -> float:
        return float(self.gaps[-1])

    @property
    def gap_closed(self) -> float:
        return float(self.gaps[0])

    def joints_at(self, command: float) -> Floats:
        """Every gripper joint where `command` settles the linkage (interpolated between measured commands)."""
        return np.array([np.interp(command, self.commands, column) for column in self.qpos.T])

    def command_for_gap(self, gap: float) -> float:
        """The smallest command that opens the jaw to `gap` (0 below the closed gap, 1 beyond the open one)."""
        rising = np.concatenate([[True], np.diff(self.gaps) > 0])  # (a saturated closed end: its first command)
        return float(np.interp(gap, self.gaps[rising], self.commands[rising]))

    def command_tolerance(self, per_finger: float) -> float:
        """A tolerance of `per_finger` metres on each finger, as a change of the command (its finger joint is an
        angle, not an opening)."""
        return 2 * per_finger / (self.gap_open - self.gap_closed)

    def command_at(self, finger: float) -> float:
        """The command whose settled finger_a joint is `finger` (where the jaw stands when nothing blocks it)."""
        order = np.argsort(self.qpos[:, 0], kind="stable")
        return float(np.interp(finger, self.qpos[order, 0], self.commands[order]))


class SimulationUnstable(X2Error):
    """The physics diverged (non-finite accelerations): an attempt is rejected, a session ends."""


class Backend(Protocol):
    """One world, stepped one control tick at a time. The loop, teleop, synthesis, the safety filter, the readers of
    recorded episodes and the pictures talk to this, never to a simulator class.

    What reads `model` / `data`, a MuJoCo view of the world (kinematics, contacts, names, collision geometry):
    inside x2.sim, the collision world and IK (x2/sim/mujoco/collision.py, ik.py, kinematics.py: the planner's
    checks, synthesis's and teleop's IK, each handed the backend); outside it, only synthesis's skills
    (x2.synth.skills: grasp and place poses, shapes, mechanisms, contacts) and replay augmentation (x2.augment: the
    swept envelope, the placement of new geoms, the distance checker), the packages pyproject's mujoco contract
    names. Nothing writes them but the backend. The MuJoCo backend steps them itself; another simulator keeps them
    in sync with its own state. Everything else a caller needs is a method here: pictures come from `render` (the
    current state) and `renderer` (a `StateRenderer` of this world that draws any stored state), the world's
    cameras from `cameras`. The last group of methods is the predicates' `WorldView`.
    """

    env: EnvSpec
    model: mujoco.MjModel
    data: mujoco.MjData
    table_height: float

    @property
    def time(self) -> float: ...
    @property
    def state_size(self) -> int: ...
    @property
    def robot_joint_names(self) -> tuple[str, ...]: ...
    @property
    def object_names(self) -> tuple[str, ...]: ...
    @property
    def action_layout(self) -> ActionLayout: ...
    @property
    def layout(self) -> dict[str, Placement]: ...

    def reset(self, seed: int, variant: str | None = None, axes: dict[str, int] | None = None) -> ResetInfo: ...
    def step(self, action: Floats) -> None: ...  # raises SimulationUnstable
    def home_action(self) -> Floats: ...
    def get_state(self) -> Floats: ...
    def set_state(self, state: Floats) -> None: ...
    def robot_state(self) -> RobotState: ...
    def object_poses(self) -> Floats: ...  # (K, 7) position + quaternion (w, x, y, z)
    # robot_state's qpos, qvel and ee_pose and object_poses at each of these stored states (T, S) of the current
    # world, as {"qpos", "qvel", "ee_pose", "object_poses"} arrays with a leading T
    def observations(self, states: Floats) -> dict[str, Floats]: ...
    def joint_values(self, names: tuple[str, ...]) -> Floats: ...
    def joint_range(self, names: tuple[str, ...]) -> Floats: ...  # (n, 2), unlimited = -inf..inf
    def set_joint_values(self, values: dict[str, float]) -> None: ...
    def set_object_pose(self, obj: str, pos: Floats, quat: Floats | None = None) -> None: ...
    def contacts(self) -> list[Contact]: ...
    def penetration(self) -> float: ...  # depth (m) of the deepest contact now, 0 if none penetrates
    def deepest_contact(self) -> Contact | None: ...
    def geom_distance(self, geom1: str, geom2: str, cutoff: float = 1.0) -> float: ...
    # pictures: the current state's, the pinhole it was taken with, the world's cameras, and a renderer of this
    # world's stored states (its own state: the backend's stays as it is; made again after a reset builds a new world)
    def render(self, camera: str, width: int = 640, height: int = 480) -> Image: ...
    # the current state's streams (x2/sim/streams.py): what `renderer(...).shot` gives at `get_state()`
    def shot(self, camera: str, streams: tuple[str, ...], width: int = 640, height: int = 480) -> Shot: ...
    def camera_info(self, camera: str, width: int = 640, height: int = 480) -> CameraInfo: ...
    @property
    def cameras(self) -> WorldCameras: ...
    def renderer(self, cameras: Sequence[str], size: ImageSize) -> StateRenderer: ...
    def model_xml(self) -> str: ...
    def model_textures(self) -> dict[str, bytes]: ...  # the images the world carries beside its text, by name
    def jaw(self) -> Jaw | None: ...  # a linkage gripper's measured jaw; None: slide fingers (ctrl = opening)
    def close(self) -> None: ...

    # WorldView
    def object_pos(self, obj: str) -> Floats: ...
    def object_rest_height(self, obj: str) -> float: ...
    def site_box(self, site: str) -> tuple[Floats, Floats, Floats]: ...
    def joint_value(self, joint: str) -> float: ...
    def touching(self, body_a: str, body_b: str) -> bool: ...
    def finger_bodies(self, arm: str) -> tuple[str, str]: ...
    def arm_joint_error(self, arm: str) -> float: ...
    def arm_root_pos(self, arm: str) -> Floats: ...
