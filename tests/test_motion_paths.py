"""Straight tcp moves: the tcp stays on the line with its orientation, joints move continuously."""

from __future__ import annotations

import numpy as np
import pytest

from x2.sim.mujoco.backend import MujocoBackend
from x2.spec import load_env
from x2.synth.motion.collision import CollisionWorld
from x2.synth.motion.errors import PlanningError
from x2.synth.motion.ik import ArmIK
from x2.synth.motion.paths import straight
from x2.synth.motion.seeded import SeededIK
from x2.synth.motion.timing import Limits, postcheck, time_polyline


@pytest.fixture(scope="module")
def world() -> CollisionWorld:
    b = MujocoBackend(load_env("fruit_in_microwave"))
    b.reset(1)
    return CollisionWorld(b)


def _in_world(world: CollisionWorld, arm: str):
    return lambda q, s: world.in_collision({arm: q})


def test_lift_is_straight_and_timed_within_limits(world):
    ik = ArmIK(world, "right")
    fruit = world.data.xpos[world.model.body("fruit/object").id].copy()
    q0 = ik.solve(fruit + np.array([0.0, 0.0, 0.05]), rng=np.random.default_rng(0), axis_down=True)
    _, rot0 = ik.fk(q0)
    path = straight(SeededIK(world, "right"), q0, np.array([0.0, 0.0, 0.10]), _in_world(world, "right"),
                    step=0.005, max_jump=0.15)
    start = ik.fk(q0)[0]
    for q in path.waypoints:
        pos, rot = ik.fk(q)
        off_line = pos - start
        assert np.linalg.norm(off_line[:2]) < 2e-3  # on the vertical line
        assert np.arccos(np.clip((np.trace(rot0.T @ rot) - 1) / 2, -1, 1)) < np.deg2rad(2.0)
    assert np.max(np.abs(np.diff(path.waypoints, axis=0))) < 0.15
    lim = Limits()
    traj = time_polyline("right", path.waypoints, lim, 1 / 30)
    assert np.all(np.abs(np.diff(traj.q, axis=0)) * 30 <= lim.velocity * (1 + 1e-6))
    np.testing.assert_array_equal(traj.q[-1], path.waypoints[-1])
    assert postcheck(traj, world) is None


def test_move_into_table_is_refused(world):
    ik = ArmIK(world, "right")
    fruit = world.data.xpos[world.model.body("fruit/object").id].copy()
    q0 = ik.solve(fruit + np.array([0.12, 0.0, 0.06]), rng=np.random.default_rng(0), axis_down=True)
    with pytest.raises(PlanningError, match="collides"):
        straight(SeededIK(world, "right"), q0, np.array([0.0, 0.0, -0.10]), _in_world(world, "right"),
                 step=0.005, max_jump=0.15)
