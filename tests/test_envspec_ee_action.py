"""The end-effector action encoding (x2/envspec/ee_action.py): poses and deltas encode and decode to the same poses,
its rotations agree with each other at every angle, and a malformed action is one line naming the value."""

from __future__ import annotations

import numpy as np
import pytest

from x2.envspec.ee_action import (
    EE_DELTA,
    EE_POSE,
    EEActionError,
    EELayout,
    matrix_to_rotvec,
    quat_to_matrix,
    rotation_quat,
    rotvec_to_matrix,
)


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return quat_to_matrix(q / np.linalg.norm(q))


def test_rotations_round_trip_at_every_angle_including_pi() -> None:
    rng = np.random.default_rng(0)
    for angle in (0.0, 1e-9, 0.3, np.pi / 2, np.pi - 1e-7, np.pi):
        axis = rng.normal(size=3)
        w = axis / np.linalg.norm(axis) * angle
        r = rotvec_to_matrix(w)
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-12)
        assert np.allclose(rotvec_to_matrix(matrix_to_rotvec(r)), r, atol=1e-9)
        assert np.allclose(quat_to_matrix(rotation_quat(r)), r, atol=1e-12)
        assert rotation_quat(r)[0] >= 0


def test_poses_and_deltas_decode_to_the_poses_encoded() -> None:
    rng = np.random.default_rng(1)
    ref_pos, ref_rot = rng.normal(size=(2, 3)) * 0.3, np.stack([random_rotation(rng) for _ in range(2)])
    pos, rot = ref_pos + rng.normal(size=(2, 3)) * 0.01, np.stack([random_rotation(rng) for _ in range(2)])
    grippers, base = np.array([0.2, 1.0]), np.array([0.1, -0.2, 0.5])
    for kind in (EE_POSE, EE_DELTA):
        layout = EELayout(kind, ("left", "right"), mobile=True)
        action = layout.encode(pos, rot, grippers, base, ref_pos, ref_rot)
        assert action.shape == (layout.dim,) == (len(layout.names),) == (2 * layout.per_arm + 3,)
        cmd = layout.decode(action, ref_pos, ref_rot, "here")
        assert np.allclose(cmd.pos, pos, atol=1e-12) and np.allclose(cmd.rot, rot, atol=1e-9)
        assert np.array_equal(cmd.gripper, grippers) and np.array_equal(cmd.base, base)
    assert EELayout(EE_POSE, ("right",)).names == ("right_x", "right_y", "right_z", "right_qw", "right_qx",
                                                    "right_qy", "right_qz", "right_gripper")
    assert EELayout(EE_DELTA, ("right",)).names[3:] == ("right_rx", "right_ry", "right_rz", "right_gripper")


@pytest.mark.parametrize(("kind", "change", "says"), [
    (EE_POSE, lambda a: a[:-1], "action: found shape (15,); allowed: (16,), the ee_pose layout (left_x, "),
    (EE_POSE, lambda a: a * np.r_[1, 1, 1, 2, 2, 2, 2, np.ones(9)], "found left_qw..qz of length 2; allowed: a unit "
                                                                     "quaternion (w, x, y, z)"),
    (EE_POSE, lambda a: np.r_[np.nan, a[1:]], "found left_x = nan; allowed: finite values"),
    (EE_POSE, lambda a: a * np.r_[1000, 1000, 1000, np.ones(13)], "found left_x = 300; allowed: within +-10 m "
                                                                   "(positions are metres)"),
    (EE_POSE, lambda a: np.r_[a[:-1], 255], "found right_gripper = 255; allowed: 0..1"),
    (EE_DELTA, lambda a: np.r_[a[:3], 4.0, 0.0, 0.0, a[6:]], "found left_rx..rz of angle 4 rad; allowed: at most pi"),
])
def test_a_malformed_action_is_one_line_naming_the_value(kind: str, change: object, says: str) -> None:
    layout = EELayout(kind, ("left", "right"))
    pos, rot = np.array([[0.3, 0.2, 0.4], [0.3, -0.2, 0.4]]), np.stack([np.eye(3)] * 2)
    action = layout.encode(pos, rot, np.ones(2), np.zeros(0), pos, rot)
    assert callable(change)
    with pytest.raises(EEActionError) as error:
        layout.decode(change(action), pos, rot, "x2/pick_place-v0")
    assert says in str(error.value) and "\n" not in str(error.value)
