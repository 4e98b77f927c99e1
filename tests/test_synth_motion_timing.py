"""Timing, post-check and plan_motion: limits hold, nothing the post-check rejects comes out, and the
real simulator tracks the result without touching the table or the microwave."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from conftest import cavity_reach_problem

from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.motion.planner import Plan
from x2.synth.motion.timing import Limits, MotionPlan, plan_motion, postcheck, time_parametrize

DT = 1.0 / 30.0


@pytest.fixture(scope="module")
def setup() -> tuple[MujocoBackend, CollisionWorld, np.ndarray, np.ndarray]:
    return cavity_reach_problem()


@pytest.fixture(scope="module")
def motion(setup) -> MotionPlan:
    _, world, start, goal = setup
    return plan_motion(world, "left", start, goal, np.random.default_rng(0), Limits())


def test_trajectory_respects_limits_and_endpoints(motion, setup):
    _, _, start, goal = setup
    q, lim = motion.trajectory.q, Limits()
    np.testing.assert_array_equal(q[0], start)
    np.testing.assert_array_equal(q[-1], goal)
    # finite differences of the samples are averages of the continuous profile, so the bounds carry over
    assert np.all(np.abs(np.diff(q, axis=0)) / DT <= lim.velocity * (1 + 1e-6))
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / DT**2 <= lim.acceleration * (1 + 1e-6))
    assert np.all(np.abs(motion.trajectory.qd) <= lim.velocity * (1 + 1e-6))
    np.testing.assert_allclose(motion.trajectory.qd[[0, -1]], 0.0, atol=1e-9)  # rest to rest


def test_returned_trajectory_passes_postcheck(motion, setup):
    _, world, _, _ = setup
    assert postcheck(motion.trajectory, world, substeps=4) is None
    assert postcheck(motion.trajectory, world, substeps=8) is None


def test_timing_is_deterministic(motion, setup):
    again = time_parametrize("left", motion.plan.waypoints, Limits(), DT)
    assert again.q.tobytes() == motion.trajectory.q.tobytes()


def test_postcheck_catches_a_cut_corner(setup):
    _, world, start, goal = setup
    straight = time_parametrize("left", np.stack([start, goal]), Limits(), DT)  # through the door/shell
    assert postcheck(straight, world) is not None


def test_postcheck_spacing_thins_the_points_near_rest_only(setup):
    """Every substep point of a timed move, checked one by one, gives the dense post-check's verdict; with a
    spacing, each point skipped lies closer than it to a checked one, the end is checked, and the blocked
    straight line is still caught."""
    _, world, start, goal = setup
    straight = time_parametrize("left", np.stack([start, goal]), Limits(), DT)
    q = straight.q
    points = [q[k] + (q[k + 1] - q[k]) * (s / 4) for k in range(len(q) - 1) for s in range(1, 5)]
    first_bad = next(i // 4 for i, p in enumerate(points) if world.in_collision({"left": p}))
    assert postcheck(straight, world, spacing=0.0) == first_bad
    assert postcheck(straight, world, spacing=0.01) is not None

    checked: list[np.ndarray] = []
    real = world.in_collision

    def spy(q_by_arm):
        checked.append(q_by_arm["left"].copy())
        return False  # a free world: every point the spacing keeps is asked about

    world.in_collision = spy
    try:
        assert postcheck(straight, world, spacing=0.01) is None
    finally:
        world.in_collision = real
    assert len(checked) < 0.6 * len(points)  # (174 of 396 on this move)
    np.testing.assert_allclose(checked[-1], goal, rtol=0, atol=1e-12)
    for p in points:
        assert min(np.max(np.abs(p - c)) for c in checked) < 0.01 + 1e-12


@dataclass
class _CornerCutter:
    """A fake planner whose first answer is the blocked straight line, then a real plan."""

    good: Plan
    calls: int = 0

    def plan(self, world, arm, q_start, q_goal, rng, hints=()) -> Plan:
        self.calls += 1
        if self.calls == 1:
            return Plan(arm, np.stack([q_start, q_goal]), 0, 0, world.margin)
        return self.good


def test_plan_motion_replans_on_postcheck_violation(motion, setup):
    _, world, start, goal = setup
    fake = _CornerCutter(motion.plan)
    out = plan_motion(world, "left", start, goal, np.random.default_rng(0), planner=fake)
    assert out.attempts == 2 and fake.calls == 2
    assert postcheck(out.trajectory, world) is None
    assert world.margin == 0.0  # clearance is restored after planning


def test_executes_in_simulator(motion, setup):
    backend, _, start, goal = setup
    traj = motion.trajectory
    action = backend.home_action()  # right arm home, both grippers open
    joints = backend.env.robot.arm("left").joints
    worst = 0.0
    for k in range(len(traj.q)):
        action[:6] = traj.q[k]
        backend.step(action)
        worst = max(worst, float(np.max(np.abs(backend.joint_values(joints) - traj.q[k]))))
        robot_hits = [(c.geom1, c.geom2) for c in backend.contacts()
                      if any(g.startswith(("left_", "right_")) for g in (c.geom1, c.geom2))]
        assert not robot_hits, f"tick {k}: {robot_hits}"
    assert worst < 0.03
    for _ in range(15):
        backend.step(action)
    assert np.max(np.abs(backend.joint_values(joints) - goal)) < 0.01
