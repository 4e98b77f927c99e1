"""ArmIK: accuracy and joint limits at the booth's working poses, clean failure, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from x2.base.errors import IKError
from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK

POS_TOL, ROT_TOL = 2e-3, np.deg2rad(2.0)


@pytest.fixture(scope="module")
def world() -> CollisionWorld:
    b = MujocoBackend(load_env("fruit_in_microwave"))
    b.reset(1)
    return CollisionWorld(b)


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1) / 2, -1.0, 1.0)))


def _within_limits(world: CollisionWorld, arm: str, q: np.ndarray) -> bool:
    lo, hi = world.joint_range[arm].T
    return bool(np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9))


@pytest.mark.parametrize("height", [0.02, 0.08, 0.15])
def test_top_grasp_over_fruit_area(world, height):
    ik = ArmIK(world, "right")
    fruit = world.data.xpos[world.model.body("fruit/object").id].copy()
    target = fruit + np.array([0.0, 0.0, height])
    q = ik.solve(target, rng=np.random.default_rng(0), axis_down=True)
    pos, rot = ik.fk(q)
    assert np.linalg.norm(pos - target) < POS_TOL
    assert np.arccos(np.clip(-rot[2, 2], -1, 1)) < ROT_TOL  # tool axis straight down
    assert _within_limits(world, "right", q)
    assert not world.in_collision({"right": q})


def test_full_pose_at_microwave_handle(world):
    ik = ArmIK(world, "left")
    sid = world.model.site("microwave/door_grasp").id
    target, rot = world.data.site_xpos[sid].copy(), world.data.site_xmat[sid].reshape(3, 3).copy()
    pre = target - 0.04 * rot[:, 2]  # 4 cm back along the approach axis
    for goal in (target, pre):
        q = ik.solve(goal, rot, rng=np.random.default_rng(0))
        pos, r = ik.fk(q)
        assert np.linalg.norm(pos - goal) < POS_TOL
        assert _angle(r, rot) < ROT_TOL
        assert _within_limits(world, "left", q)


def test_unreachable_raises_cleanly(world):
    ik = ArmIK(world, "right")
    with pytest.raises(IKError, match="no IK solution"):
        ik.solve(np.array([1.4, -0.3, 1.0]), rng=np.random.default_rng(0))


def test_deterministic_and_leaves_world_alone(world):
    before = world.qpos
    ik = ArmIK(world, "right")
    target = np.array([0.45, -0.3, 0.9])
    a = ik.solve(target, rng=np.random.default_rng(7), axis_down=True)
    b = ArmIK(world, "right").solve(target, rng=np.random.default_rng(7), axis_down=True)
    assert a.tobytes() == b.tobytes()
    np.testing.assert_array_equal(world.qpos, before)
