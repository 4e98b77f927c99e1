"""A recorded episode's joint actions as end-effector actions (x2/envspec/ee_action.py), for the exporters'
`--action ee_pose|ee_delta` and for replaying an expert through the action adapter.

What "the action" is: frame t's `ee_pose` is the pose the tool centre point would have at frame t's commanded joint
targets (`/action[t]`'s arm joints through the forward kinematics of the episode's own world, in the robot's base
frame), its gripper opening and a mobile base's targets as recorded. Frame t's `ee_delta` is that pose relative to
frame t - 1's (position difference, rotation vector of R_t R_{t-1}^T); frame 0's is relative to the tool centre
point's measured pose at frame 0, the pose the adapter starts its deltas from after a reset. Converted back through
the adapter (x2/sim/mujoco/ee_adapter.py), either kind commands the same poses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from x2 import format as fmt
from x2.base.arrays import Floats
from x2.datasets import Episode
from x2.envspec.ee_action import EE_POSE, EELayout, world_to_base
from x2.recorded.world import open_world, recorded_env
from x2.sim.mujoco.ee_adapter import EEAdapter

# what an exported end-effector action is, in the provenance an export carries
MEANING = ("per frame, the tool centre point pose of the commanded joint targets (forward kinematics of /action) in "
           "the robot's base frame, the gripper opening as recorded (x2/envspec/ee_action.py, "
           "x2/recorded/ee_actions.py)")


@dataclass(frozen=True)
class EEActions:
    values: Floats  # (T, W) float32
    names: tuple[str, ...]
    pos: Floats  # (T, arms, 3) the commanded poses, base frame
    rot: Floats  # (T, arms, 3, 3)


def table_height(ep: Episode) -> float:
    """The table height the episode's reset drew (its mount lowered by it), 0 when none was drawn."""
    drawn = ep.json_attr(fmt.RESET_EMBODIMENT_ATTR)
    return float(drawn.get("table_height", 0.0)) if isinstance(drawn, dict) else 0.0


def episode_ee_actions(ep: Episode, kind: str) -> EEActions:
    """The episode's `/action` rows as end-effector actions of `kind` (see the module docstring)."""
    actions = np.asarray(ep.dataset(fmt.ACTION)[()], dtype=np.float64)
    with open_world(ep) as world:
        backend = world.backend
        names = backend.action_layout
        layout = EELayout(kind, tuple(a.name for a in names.arms), names.base is not None)
        adapter = EEAdapter(backend, layout)
        backend.set_state(np.asarray(ep.dataset(fmt.STATES)[0], dtype=np.float64))
        adapter.reset(table_height(ep))
        ref_pos, ref_rot = adapter.measured()
        rows = []
        all_pos, all_rot = np.empty((len(actions), len(names.arms), 3)), np.empty((len(actions), len(names.arms), 3, 3))
        base = slice(0, 0) if names.base is None else names.base
        for t, action in enumerate(actions):
            pos, rot = adapter.joint_poses(action)
            grippers = action[names.gripper_slots]
            if kind == EE_POSE:
                rows.append(layout.encode(pos, rot, grippers, action[base]))
            else:
                rows.append(layout.encode(pos, rot, grippers, action[base], ref_pos, ref_rot))
            ref_pos, ref_rot = pos, rot
            all_pos[t], all_rot[t] = pos, rot
    return EEActions(np.asarray(rows, dtype=np.float32).reshape(len(actions), layout.dim), layout.names,
                     all_pos, all_rot)


def base_frame_poses(ep: Episode) -> Floats:
    """(T, arms, 7) the tool centre points' measured poses (`/observations/ee_pose`, world frame) in the robot's base
    frame, the frame end-effector actions are in (x2/envspec/ee_action.py, `world_to_base`): the mount is lowered by
    the drawn table height; a mobile robot's base is its measured x, y, yaw (the last three of `/observations/qpos`),
    as teleop's Cartesian mappers bring measured poses to it. No simulator: the world record says where the mount is."""
    env = recorded_env(ep)
    x, y, z = env.robot.base_pos
    base = np.asarray(ep.dataset(fmt.QPOS)[()], dtype=np.float64)[:, -3:] if env.robot.base is not None else None
    return world_to_base(np.asarray(ep.dataset(fmt.EE_POSE)[()], dtype=np.float64),
                         np.array([x, y, z - table_height(ep)]), base)
