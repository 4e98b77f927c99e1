"""The simulator interface every loop and tool talks to. MuJoCo implements it; Isaac Lab may later.

A backend owns one world built from an `EnvSpec`. It knows nothing of loops, labels or datasets
(`sim` knows no loop): it resets, steps one control tick, saves and restores state, reports what
the robot and objects are doing, and renders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from x2.sim.layout import Placement
from x2.spec.env import EnvSpec


@dataclass(frozen=True)
class ResetInfo:
    seed: int
    variant: str
    assets: dict[str, str]  # object instance -> chosen asset name
    layout: dict[str, Placement]
    instruction: str


@dataclass(frozen=True)
class RobotState:
    qpos: np.ndarray  # (J,) arm joints then finger joints, per arm, in `Backend.robot_joint_names` order
    qvel: np.ndarray  # (J,)
    ee_pose: np.ndarray  # (arms, 7) tcp position + quaternion (w, x, y, z)


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
    intrinsics: np.ndarray  # 3x3
    extrinsics: np.ndarray  # 4x4 camera-to-world (OpenGL camera axes: -z forward)
    extra: dict[str, object] = field(default_factory=dict)


class Backend(Protocol):
    env: EnvSpec

    @property
    def time(self) -> float: ...
    @property
    def state_size(self) -> int: ...
    @property
    def robot_joint_names(self) -> tuple[str, ...]: ...
    @property
    def object_names(self) -> tuple[str, ...]: ...

    def reset(self, seed: int, variant: str | None = None) -> ResetInfo: ...
    def step(self, action: np.ndarray) -> None: ...
    def get_state(self) -> np.ndarray: ...
    def set_state(self, state: np.ndarray) -> None: ...
    def apply_layout(self, layout: dict[str, Placement]) -> None: ...
    def robot_state(self) -> RobotState: ...
    def object_poses(self) -> np.ndarray: ...  # (K, 7) position + quaternion (w, x, y, z)
    def joint_values(self, names: tuple[str, ...]) -> np.ndarray: ...
    def set_joint_values(self, values: dict[str, float]) -> None: ...
    def set_object_pose(self, obj: str, pos: np.ndarray, quat: np.ndarray | None = None) -> None: ...
    def contacts(self) -> list[Contact]: ...
    def geom_distance(self, geom1: str, geom2: str, cutoff: float = 1.0) -> float: ...
    def render(self, camera: str, width: int = 640, height: int = 480) -> np.ndarray: ...
    def camera_info(self, camera: str, width: int = 640, height: int = 480) -> CameraInfo: ...
    def model_xml(self) -> str: ...
    def close(self) -> None: ...
