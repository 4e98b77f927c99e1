"""What a policy sees each time it is asked: the observation message, built from the live simulator.

Only what the service asked for in its metadata (or the evaluator's options, for a service that says
nothing) is rendered or sent: rendering is the evaluator's dearest work, and privileged state (object poses,
the physics state) goes only to a service that declared it needs it. A camera whose picture and depth map are both
asked for at one size is drawn once for the two (`Backend.shot`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from x2.base.arrays import Floats
from x2.envspec.ee_action import world_to_base
from x2.policy.protocol import (
    OBS_DEPTH_SUFFIX,
    OBS_ENV_STATE,
    OBS_EXTRINSICS_PREFIX,
    OBS_IMAGE_PREFIX,
    OBS_PROMPT,
    OBS_SIM_STATE,
    OBS_STATE,
    OBS_TASK,
    OBS_TICK,
    ObservationMessage,
    ServiceInfo,
)
from x2.rollout.teacher import Observation
from x2.sim.backend import Backend, RobotState
from x2.sim.camera import optical_to_world
from x2.sim.streams import DEPTH, RGB


@dataclass(frozen=True)
class ObservationPlan:
    cameras: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # camera -> (height, width)
    depth: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # camera -> (height, width) of its depth map
    extrinsics: tuple[str, ...] = ()  # cameras whose pose is sent
    state: bool = True
    ee_state: bool = False  # the state ends with each arm's tool centre point pose, base frame
    velocity_state: bool = False  # the joints' velocities follow their positions in the state (before tool poses)
    environment_state: bool = False
    sim_state: bool = False

    @classmethod
    def for_service(cls, info: ServiceInfo, cameras: Mapping[str, tuple[int, int]] | None = None,
                    depth: Mapping[str, tuple[int, int]] | None = None) -> ObservationPlan:
        """The service's own wishes; `cameras` and `depth` (the evaluator's --cameras, --size and --streams) for one
        that names neither pictures nor depth maps."""
        own = bool(info.cameras or info.depth)
        return cls(cameras=dict(info.cameras if own else cameras or {}),
                   depth=dict(info.depth if own else depth or {}),
                   extrinsics=tuple(info.extrinsics), state=info.state, ee_state=info.ee_state,
                   velocity_state=info.velocity_state,
                   environment_state=info.environment_state, sim_state=info.sim_state)

    def check(self, backend: Backend) -> None:
        """Every camera asked for exists in this world (else one line, before the first episode)."""
        for camera in (*self.cameras, *self.depth, *self.extrinsics):
            backend.camera_info(camera, 16, 16)

    def observe(self, backend: Backend, obs: Observation,
                table_height: float = 0.0) -> tuple[ObservationMessage, float]:
        """The message for tick `obs.tick`, and the milliseconds spent rendering it (`table_height`: the one the
        episode's reset drew, which lowers the robot's mount)."""
        out: ObservationMessage = {OBS_TICK: obs.tick, OBS_PROMPT: obs.instruction, OBS_TASK: obs.instruction}
        assert obs.robot is not None and obs.object_poses is not None  # (an evaluation's loop observes every tick)
        if self.state:
            out[OBS_STATE] = robot_state(backend, obs.robot, table_height, self.velocity_state, self.ee_state)
        if self.environment_state:
            out[OBS_ENV_STATE] = np.asarray(obs.object_poses, dtype=np.float32).reshape(-1)
        if self.sim_state:
            out[OBS_SIM_STATE] = np.asarray(backend.get_state(), dtype=np.float64)
        t0 = time.perf_counter()
        for camera, (height, width) in self.cameras.items():
            if self.depth.get(camera) == (height, width):
                continue  # drawn below with its depth
            out[OBS_IMAGE_PREFIX + camera] = np.ascontiguousarray(backend.render(camera, width, height))
        for camera, (height, width) in self.depth.items():
            both = self.cameras.get(camera) == (height, width)
            shot = backend.shot(camera, (RGB, DEPTH) if both else (DEPTH,), width, height)
            assert shot.depth is not None and (shot.rgb is not None or not both)
            if both:
                out[OBS_IMAGE_PREFIX + camera] = np.ascontiguousarray(shot.rgb)
            out[OBS_IMAGE_PREFIX + camera + OBS_DEPTH_SUFFIX] = np.asarray(shot.depth, np.float32)[..., None]
        for camera in self.extrinsics:  # (the pose is the same at every picture size)
            pose = backend.camera_info(camera, 16, 16).extrinsics  # renderer axes in its columns
            out[OBS_EXTRINSICS_PREFIX + camera] = optical_to_world(pose[:3, 3], pose[:3, :3]).astype(np.float32).ravel()
        return out, (time.perf_counter() - t0) * 1e3


def robot_state(backend: Backend, robot: RobotState, table_height: float, velocities: bool = False,
                tool: bool = False) -> Floats:
    """observation.state as `x2 export lerobot` writes it from the episode file, float32: the joints' positions, then
    with `velocities` their velocities (`--velocity-state`), then with `tool` each arm's tool pose (`--ee-state`)."""
    parts = [np.asarray(robot.qpos, dtype=np.float32)]
    if velocities:
        parts.append(np.asarray(robot.qvel, dtype=np.float32))
    if tool:
        parts.append(tool_poses(backend, robot, table_height))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def tool_poses(backend: Backend, robot: RobotState, table_height: float) -> Floats:
    """Each arm's tool centre point pose in the base frame, float32 (arms * 7,), what `x2 export lerobot --ee-state`
    appends to a frame's state: computed as the export computes it from the episode file (x2/recorded/ee_actions.py),
    from the values the file would hold (float32). `table_height`: the one the episode's reset drew."""
    x, y, z = backend.env.robot.base_pos
    recorded = np.asarray(robot.ee_pose, np.float32).astype(np.float64)[None]
    base = np.asarray(robot.qpos, np.float32).astype(np.float64)[None, -3:] if backend.env.robot.base is not None \
        else None
    return world_to_base(recorded, np.array([x, y, z - table_height]), base).astype(np.float32).ravel()
