"""End-effector actions: the one encoding of a pose a policy may answer instead of joint targets.

Two kinds, each a flat vector, per arm in the robot's arm order, then a mobile base's values last (as the joint
layout of x2/envspec/action.py orders them):

- `ee_pose`: per arm `x y z` (m), `qw qx qy qz` (the tool centre point's orientation as a unit quaternion, w first),
  then `gripper` (opening 0..1, 1 = open): 8 values an arm.
- `ee_delta`: per arm `dx dy dz` (m), `rx ry rz` (a rotation vector: axis times angle, rad), then `gripper` (the
  opening itself, 0..1, not a change): 7 values an arm. The pose commanded is the previous *commanded* pose moved by
  it: position p + d, rotation exp([r]) R (the rotation applied in the base frame, on the left). The first delta of
  an episode moves the tool centre point's measured pose at the reset. Deltas relative to the command, not to the
  measured pose, so a sequence of them integrates to the same poses as the absolute ones whatever the servos lag.
- a mobile base's `base_x base_y base_yaw` last in both kinds, absolute targets as in the joint layout.

Frame: the robot's base frame, the frame of its mount point (the robot YAML's `base_pos`, lowered by a drawn table
height), axes parallel to the world's (x2 mounts every robot unrotated); a mobile robot's arms in the frame that
moves with its base. Values as x2's own `/observations/ee_pose` (tool centre point position and quaternion w x y z)
moved to that frame.

Why a quaternion for absolute poses: it is the representation every x2 pose is stored in (`/observations/ee_pose`,
object poses, MuJoCo's), so an exported state and an absolute action are the same numbers; the one invalid case, a
quaternion that is not of unit length, is refused rather than silently normalised (a policy regressing four numbers
gets told). q and -q are the same rotation and both accepted. Why a rotation vector for deltas: a small rotation's
three numbers are near-linear, zero is "no change", and there is no unit constraint to break.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import X2Error

EE_POSE, EE_DELTA = "ee_pose", "ee_delta"
KINDS = (EE_POSE, EE_DELTA)
JOINT = "joint"  # the robot's own action layout (x2/envspec/action.py)
ACTION_KINDS = (JOINT, *KINDS)  # what a policy may answer, and an export's action may be
TCP_FIELDS = ("x", "y", "z", "qw", "qx", "qy", "qz")  # a tool centre point's pose, as /observations/ee_pose
POSE_FIELDS = (*TCP_FIELDS, "gripper")
DELTA_FIELDS = ("dx", "dy", "dz", "rx", "ry", "rz", "gripper")
BASE_FIELDS = ("base_x", "base_y", "base_yaw")
UNIT_TOLERANCE = 1e-3  # |1 - |q||: float32 rounding is 1e-7; anything more is not a normalised quaternion
# Values only another unit gives: a pose 10 m from the mount (a reach of <= 1 m given in mm reads 100s), a tool
# moved a metre in one tick (30 m/s at 30 fps), a gripper outside [-1, 2] (0..255 or 0..100 % given).
POSE_LIMIT_M, DELTA_LIMIT_M, GRIPPER_SLACK = 10.0, 1.0, 1.0


class EEActionError(X2Error):
    """An end-effector action of the wrong width, units or encoding."""


@dataclass(frozen=True)
class EECommand:
    """One end-effector action decoded: per arm the pose commanded in the base frame (absolute, deltas applied)."""

    pos: Floats  # (arms, 3) m
    rot: Floats  # (arms, 3, 3)
    gripper: Floats  # (arms,) 0..1
    base: Floats  # (3,) or (0,)


@dataclass(frozen=True)
class EELayout:
    kind: str
    arms: tuple[str, ...]
    mobile: bool = False

    @property
    def per_arm(self) -> int:
        return len(POSE_FIELDS if self.kind == EE_POSE else DELTA_FIELDS)

    @property
    def names(self) -> tuple[str, ...]:
        fields = POSE_FIELDS if self.kind == EE_POSE else DELTA_FIELDS
        return (*(f"{arm}_{f}" for arm in self.arms for f in fields), *(BASE_FIELDS if self.mobile else ()))

    @property
    def dim(self) -> int:
        return len(self.names)

    def bounds(self, base_low: Sequence[float] = (), base_high: Sequence[float] = ()) -> tuple[Floats, Floats]:
        """The action space's box: positions within the limits `decode` holds them to, quaternion parts in [-1, 1], a
        delta's rotation vector within +-pi/sqrt(3) per axis (so any sample is at most pi), grippers 0..1, the base's
        targets within their joints' ranges. (A sample of an `ee_pose` box is rarely a unit quaternion: normalise
        it.)"""
        low, high = np.full(self.dim, -np.inf), np.full(self.dim, np.inf)
        for a in range(len(self.arms)):
            start = a * self.per_arm
            if self.kind == EE_POSE:
                low[start:start + 3], high[start:start + 3] = -POSE_LIMIT_M, POSE_LIMIT_M
                low[start + 3:start + 7], high[start + 3:start + 7] = -1.0, 1.0
            else:
                low[start:start + 3], high[start:start + 3] = -DELTA_LIMIT_M, DELTA_LIMIT_M
                turn = np.pi / np.sqrt(3.0) - 1e-6
                low[start + 3:start + 6], high[start + 3:start + 6] = -turn, turn
            low[start + self.per_arm - 1], high[start + self.per_arm - 1] = 0.0, 1.0
        if self.mobile:
            low[-3:], high[-3:] = base_low, base_high
        return low, high

    def decode(self, action: Floats, ref_pos: Floats, ref_rot: Floats, where: str) -> EECommand:
        """The poses `action` commands; `ref_pos`/`ref_rot` (arms, 3) / (arms, 3, 3) the previous commanded poses
        (deltas move them). One line naming the value when the action has the wrong width, units or encoding."""
        values = np.asarray(action, dtype=np.float64)
        if values.shape != (self.dim,):
            raise EEActionError(f"{where}: action: found shape {values.shape}; allowed: ({self.dim},), the "
                                f"{self.kind} layout ({', '.join(self.names)})")
        if not np.isfinite(values).all():
            col = int(np.argmin(np.isfinite(values)))
            raise EEActionError(f"{where}: action: found {self.names[col]} = {values[col]}; allowed: finite values")
        n = len(self.arms)
        per = values[:n * self.per_arm].reshape(n, self.per_arm)
        pos, rot = np.empty((n, 3)), np.empty((n, 3, 3))
        limit = POSE_LIMIT_M if self.kind == EE_POSE else DELTA_LIMIT_M
        for a in range(n):
            far = np.abs(per[a, :3]) > limit
            if far.any():
                self._refuse(where, a, int(np.argmax(far)), per[a], f"within +-{limit:g} m (positions are metres)")
            if self.kind == EE_POSE:
                quat = per[a, 3:7]
                size = float(np.linalg.norm(quat))
                if abs(size - 1.0) > UNIT_TOLERANCE:
                    name = f"{self.arms[a]}_qw..qz"
                    raise EEActionError(f"{where}: action: found {name} of length {size:.4g}; allowed: a unit "
                                        "quaternion (w, x, y, z), length 1 within 0.001")
                pos[a], rot[a] = per[a, :3], quat_to_matrix(quat / size)
            else:
                turn = per[a, 3:6]
                if float(np.linalg.norm(turn)) > np.pi + 1e-6:
                    raise EEActionError(f"{where}: action: found {self.arms[a]}_rx..rz of angle "
                                        f"{np.linalg.norm(turn):.4g} rad; allowed: at most pi (a rotation vector in "
                                        "rad)")
                pos[a], rot[a] = ref_pos[a] + per[a, :3], rotvec_to_matrix(turn) @ ref_rot[a]
            g = per[a, -1]
            if not -GRIPPER_SLACK <= g <= 1.0 + GRIPPER_SLACK:
                self._refuse(where, a, self.per_arm - 1, per[a], "0..1, the gripper's opening (1 = open)")
        return EECommand(pos, rot, np.clip(per[:, -1], 0.0, 1.0), values[n * self.per_arm:])

    def encode(self, pos: Floats, rot: Floats, gripper: Floats, base: Floats, ref_pos: Floats | None = None,
               ref_rot: Floats | None = None) -> Floats:
        """The action of this kind commanding poses `pos`/`rot` (deltas from `ref_pos`/`ref_rot`): decode's
        inverse, as the exporters and the bench turn recorded joint targets into end-effector actions."""
        parts: list[Floats] = []
        for a in range(len(self.arms)):
            if self.kind == EE_POSE:
                parts.append(np.concatenate([pos[a], rotation_quat(rot[a]), [gripper[a]]]))
            else:
                assert ref_pos is not None and ref_rot is not None
                turn = matrix_to_rotvec(rot[a] @ ref_rot[a].T)
                parts.append(np.concatenate([pos[a] - ref_pos[a], turn, [gripper[a]]]))
        parts.append(np.asarray(base, dtype=np.float64).reshape(-1))
        return np.concatenate(parts)

    def _refuse(self, where: str, arm: int, col: int, values: Floats, allowed: str) -> None:
        name = self.names[arm * self.per_arm + col]
        raise EEActionError(f"{where}: action: found {name} = {values[col]:.4g}; allowed: {allowed}")


# ----- rotations (plain numpy: this layer imports no simulator) --------------------------------------------------
def world_to_base(poses: Floats, origin: Floats, base: Floats | None) -> Floats:
    """(T, arms, 7) tool centre point poses in the world (`/observations/ee_pose`'s values) in the robot's base frame:
    less the mount `origin` (its `base_pos` lowered by the drawn table height); a mobile robot's (`base`: its
    measured x, y, yaw per frame, (T, 3), the last three of its qpos) turned and moved with its base, the frame its
    arms' end-effector actions are in. One function for the recorded poses an export states and the live ones
    `x2 eval` sends, so a policy is given at evaluation the numbers it trained on."""
    out: Floats = np.array(poses, dtype=np.float64)
    out[..., :3] -= origin
    if base is not None:
        for t, (bx, by, yaw) in enumerate(np.asarray(base, dtype=np.float64)):
            turn = np.array([[np.cos(yaw), np.sin(yaw), 0.0], [-np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
            for a in range(out.shape[1]):
                out[t, a, :3] = turn @ (out[t, a, :3] - np.array([bx, by, 0.0]))
                out[t, a, 3:] = rotation_quat(turn @ quat_to_matrix(out[t, a, 3:]))
    return out


def quat_to_matrix(q: Floats) -> Floats:
    """The rotation matrix of the unit quaternion (w, x, y, z)."""
    w, x, y, z = (float(v) for v in q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rotation_quat(r: Floats) -> Floats:
    """The unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method: stable at every angle)."""
    m = np.asarray(r, dtype=np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = np.array([0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(max(1.0 + m[i, i] - m[j, j] - m[k, k], 0.0))
        q = np.empty(4)
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i], q[1 + j], q[1 + k] = 0.25 * s, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
    q /= np.linalg.norm(q)
    out: Floats = -q if q[0] < 0 else q
    return out


def rotvec_to_matrix(w: Floats) -> Floats:
    """The rotation matrix of the rotation vector `w` (axis times angle, rad): Rodrigues' formula."""
    angle = float(np.linalg.norm(w))
    if angle < 1e-12:
        return np.eye(3)
    k = np.asarray(w, dtype=np.float64) / angle
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    out: Floats = np.eye(3) + np.sin(angle) * cross + (1.0 - np.cos(angle)) * (cross @ cross)
    return out


def matrix_to_rotvec(r: Floats) -> Floats:
    """The rotation vector (angle <= pi) of a rotation matrix, through its quaternion (exact near 0 and pi)."""
    q = rotation_quat(r)
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return np.zeros(3)
    return np.asarray(q[1:] * (2.0 * np.arctan2(s, q[0]) / s), dtype=np.float64)


def angle_between(a: Floats, b: Floats) -> float:
    """The angle (rad) between two rotation matrices."""
    return float(np.linalg.norm(matrix_to_rotvec(np.asarray(a) @ np.asarray(b).T)))


def ee_layout(kind: str, arms: Sequence[str], mobile: bool) -> EELayout:
    return EELayout(kind, tuple(arms), mobile)
