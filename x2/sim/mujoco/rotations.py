"""Rotation conversions through MuJoCo's own math (mju_*), for callers above the simulator that must not import it
(teleop's Cartesian mappers): the same calls, so the same bits, as when they were made in place."""

from __future__ import annotations

import mujoco
import numpy as np

from x2.base.arrays import Floats


def rotation_vector(rot: Floats) -> Floats:
    """(3,) the rotation vector (axis times angle, rad) of the 3x3 rotation matrix `rot`."""
    quat, vel = np.zeros(4), np.zeros(3)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rot).ravel())
    mujoco.mju_quat2Vel(vel, quat, 1.0)
    return vel


def rotation_angle(a: Floats, b: Floats) -> float:
    """The angle (rad) of the rotation that takes `b` to `a` (both 3x3)."""
    return float(np.linalg.norm(rotation_vector(a @ b.T)))


def vector_matrix(w: Floats) -> Floats:
    """The 3x3 rotation matrix of the rotation vector `w` (axis times angle, rad)."""
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(quat, w / (np.linalg.norm(w) or 1.0), float(np.linalg.norm(w)))
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)


def quaternion_matrix(q: Floats) -> Floats:
    """The 3x3 rotation matrix of the quaternion `q` (w, x, y, z), normalised first."""
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(q, dtype=np.float64) / (np.linalg.norm(q) or 1.0))
    return mat.reshape(3, 3)
