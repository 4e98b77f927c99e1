"""Action adaptation: end-effector actions (x2/envspec/ee_action.py) turned into the robot's joint targets, one
control tick at a time.

Each tick, per arm, damped least-squares IK (x2/sim/mujoco/kinematics.py, the solver teleop follows its operators'
hands with: a continuous target, seeded from the last answer, a few 25 us iterations a tick) solves for joint
targets putting the tool centre point at the commanded pose, seeded from the arm's previous joint targets. A pose
it cannot reach within TOLERANCE (outside the workspace, beyond a joint limit) is *unreachable*: the arm keeps its
previous joint targets, the tick is flagged, nothing raises. Grippers and a mobile base's targets pass through.

What is recorded per tick (`EEStep`): the pose commanded (absolute, deltas applied), the pose the joint targets put
the tool centre point at (their forward kinematics: what the IK reached) and the unreachable flags; the joint
targets themselves are the action the world is stepped with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from x2.base.arrays import Bools, Floats
from x2.envspec.ee_action import EELayout, angle_between, rotation_quat
from x2.sim.backend import Backend
from x2.sim.mujoco.kinematics import ArmDLS

POS_TOL, ROT_TOL = 1e-4, 1e-3  # m, rad: the IK's convergence, well inside the 2 mm x2 promises to track within
ITERS, MAX_STEP = 100, 0.25  # per tick; tracking converges in a few, a jump across the workspace in tens


@dataclass(frozen=True)
class EEStep:
    commanded: Floats  # (arms, 7) position + quaternion (w, x, y, z), base frame
    reached: Floats  # (arms, 7) the joint targets' forward kinematics, base frame
    unreachable: Bools  # (arms,)
    joint_action: Floats  # (A,) the joint-layout action applied


class EEAdapter:
    """`reset` after every world reset, then `command(action)` each tick gives the joint action to step with."""

    def __init__(self, backend: Backend, layout: EELayout):
        self.backend, self.layout = backend, layout
        robot = backend.env.robot
        self.arms = robot.arms
        self.slots = backend.action_layout.arms
        self.qpos_slices: list[slice] = []  # RobotState.qpos: per arm its joints, then its finger joints
        start = 0
        for arm in self.arms:
            self.qpos_slices.append(slice(start, start + len(arm.joints)))
            start += len(arm.joints) + len(arm.gripper_joints)
        self.ik: list[ArmDLS] = []
        self.origin: Floats = np.zeros(3)
        n = len(self.arms)
        self.ref_pos: Floats = np.zeros((n, 3))
        self.ref_rot: Floats = np.tile(np.eye(3), (n, 1, 1))
        self.joints: Floats = np.zeros(backend.action_layout.dim)

    def reset(self, table_height: float = 0.0) -> None:
        """Start from the world as reset: the IK on its model (a reset may have rebuilt it), the commanded poses at
        the tool centre points' measured ones, the joint targets the world's own (its home command)."""
        backend = self.backend
        self.ik = [ArmDLS.of_backend(backend, arm) for arm in self.arms]
        x, y, z = backend.env.robot.base_pos
        self.origin = np.array([x, y, z - table_height])
        self.joints = np.asarray(backend.home_action(), dtype=np.float64).copy()
        self.ref_pos, self.ref_rot = self.measured()

    def measured(self) -> tuple[Floats, Floats]:
        """The tool centre points' measured poses in the base frame: the forward kinematics of the measured arm
        joints with a mobile base at its mount (the frame that moves with the base)."""
        qpos = self.backend.robot_state().qpos
        n = len(self.arms)
        pos, rot = np.empty((n, 3)), np.empty((n, 3, 3))
        for a, sl in enumerate(self.qpos_slices):
            p, r = self.ik[a].fk(np.asarray(qpos[sl], dtype=np.float64))
            pos[a], rot[a] = p - self.origin, r
        return pos, rot

    def joint_poses(self, joint_action: Floats) -> tuple[Floats, Floats]:
        """The poses (base frame) a joint-layout action's arm targets put the tool centre points at: their forward
        kinematics, what an end-effector action converted from it commands."""
        n = len(self.arms)
        pos, rot = np.empty((n, 3)), np.empty((n, 3, 3))
        for a, slots in enumerate(self.slots):
            p, r = self.ik[a].fk(np.asarray(joint_action[slots.joints], dtype=np.float64))
            pos[a], rot[a] = p - self.origin, r
        return pos, rot

    def command(self, action: Floats, where: str) -> EEStep:
        """The joint action for one end-effector action (one line raised when it is malformed: nothing changes)."""
        cmd = self.layout.decode(action, self.ref_pos, self.ref_rot, where)
        n = len(self.arms)
        joints = self.joints.copy()
        commanded, reached = np.empty((n, 7)), np.empty((n, 7))
        unreachable = np.zeros(n, dtype=bool)
        for a, (ik, slots) in enumerate(zip(self.ik, self.slots, strict=True)):
            target = cmd.pos[a] + self.origin
            q = ik.solve(target, cmd.rot[a], joints[slots.joints], iters=ITERS, pos_tol=POS_TOL, rot_tol=ROT_TOL,
                         max_step=MAX_STEP)
            if q is None:
                unreachable[a] = True
            else:
                joints[slots.joints] = q
            joints[slots.gripper] = cmd.gripper[a]
            p, r = ik.fk(joints[slots.joints])
            commanded[a, :3], commanded[a, 3:] = cmd.pos[a], rotation_quat(cmd.rot[a])
            reached[a, :3], reached[a, 3:] = p - self.origin, rotation_quat(r)
        if self.backend.action_layout.base is not None:
            joints[self.backend.action_layout.base] = cmd.base
        self.joints = joints
        self.ref_pos, self.ref_rot = cmd.pos, cmd.rot
        return EEStep(commanded, reached, unreachable, joints.copy())


def pose_error(a: Floats, b: Floats) -> tuple[float, float]:
    """(m, rad) between two poses given as position + quaternion (w, x, y, z)."""
    from x2.envspec.ee_action import quat_to_matrix

    return (float(np.linalg.norm(np.asarray(a[:3]) - np.asarray(b[:3]))),
            angle_between(quat_to_matrix(a[3:]), quat_to_matrix(b[3:])))
