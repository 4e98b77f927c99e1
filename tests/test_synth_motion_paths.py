"""Tcp paths (x2/synth/motion/paths.py): straight moves keep the tcp on the line with its orientation and
the joints continuous, screws turn it about their axis, a path ends where the caller's predicate or a
joint jump says, and fine polylines are timed within limits."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from x2.base.errors import PathBreak, PlanningError
from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK
from x2.synth.attempt import SynthSession
from x2.synth.motion.paths import follow, line, rotations, screw, steps, straight, turn
from x2.synth.motion.seeded import SeededIK
from x2.synth.motion.timing import BEFORE_SCHEDULER, GRASP_VARIETY, Limits, MotionSettings, postcheck, time_polyline
from x2.synth.options import SessionOptions


@pytest.fixture(scope="module")
def world() -> CollisionWorld:
    b = MujocoBackend(load_env("fruit_in_microwave"))
    b.reset(1)
    return CollisionWorld(b)


def _in_world(world: CollisionWorld, arm: str):
    return lambda q, s: world.in_collision({arm: q})


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1) / 2, -1, 1)))


def _above_fruit(world: CollisionWorld, height: float) -> np.ndarray:
    """The right arm `height` m above the fruit, tool down."""
    fruit = world.data.xpos[world.model.body("fruit/object").id].copy()
    return ArmIK(world, "right").solve(fruit + np.array([0.0, 0.0, height]), rng=np.random.default_rng(0),
                                       axis_down=True)


@pytest.fixture(scope="module")
def above_fruit(world) -> np.ndarray:
    return _above_fruit(world, 0.05)


@pytest.fixture(scope="module")
def in_the_open(world) -> np.ndarray:
    """15 cm above the fruit: room to turn the hand about a nearby axis."""
    return _above_fruit(world, 0.15)


def test_lift_is_straight_and_timed_within_limits(world, above_fruit):
    ik = ArmIK(world, "right")
    q0 = above_fruit
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


# ----- generators ----------------------------------------------------------------------------------
def test_steps_are_even_and_end_exactly():
    s = steps(0.2, -0.1, 0.04)
    assert s[0] == 0.2 and s[-1] == -0.1 and len(s) == 9  # 0.3 / 0.04 = 7.5 -> 8 steps
    assert np.allclose(np.diff(s), -0.3 / 8)
    assert len(steps(0.0, 0.1, 0.01)) == 11  # an exact multiple is not split once more
    assert len(steps(1.0, 1.0, 0.1)) == 2  # a null move is one (trivial) step


def test_line_and_screw_poses_hold_at_their_origin():
    pos, rot = np.array([0.4, -0.2, 0.9]), rotations(np.array([1.0, 2.0, 0.5]), np.array([0.7]))[0]
    poses = line(pos, rot, np.array([0.0, 3.0, 4.0]), np.array([0.5, 0.6, 0.75]), origin=0.5)
    np.testing.assert_allclose(poses.pos[0], pos)
    np.testing.assert_allclose(poses.pos[-1], pos + np.array([0.0, 0.6, 0.8]) * 0.25)  # s in metres
    assert np.allclose(poses.rot, rot)
    axis, anchor = np.array([0.0, 0.0, 1.0]), np.array([0.5, -0.2, 0.0])
    turned = screw(pos, rot, axis, anchor, np.array([1.0, 1.0 + np.pi / 2]), origin=1.0)
    np.testing.assert_allclose(turned.pos[0], pos)
    np.testing.assert_allclose(turned.pos[1], [0.5, -0.3, 0.9], atol=1e-12)  # a quarter turn, right-handed
    np.testing.assert_allclose(turned.rot[1], rotations(axis, np.array([np.pi / 2]))[0] @ rot, atol=1e-12)


# ----- following -----------------------------------------------------------------------------------
def test_a_diagonal_line_stays_on_the_line(world, above_fruit):
    ik = SeededIK(world, "right")
    start, rot0 = ik.fk(above_fruit)
    disp = np.array([-0.06, 0.05, 0.08])
    path = straight(ik, above_fruit, disp, _in_world(world, "right"), step=0.01, max_jump=0.15)
    assert path.complete and path.reached == pytest.approx(np.linalg.norm(disp))
    u = disp / np.linalg.norm(disp)
    along = []
    for q, s in zip(path.waypoints, path.s, strict=True):
        pos, rot = ik.fk(q)
        rel = pos - start
        assert np.linalg.norm(rel - (rel @ u) * u) < 1e-3  # off the line by under the IK's 1 mm
        assert rel @ u == pytest.approx(s, abs=1e-3)  # where the path parameter says
        assert _angle(rot0, rot) < np.deg2rad(1.0)
        along.append(rel @ u)
    assert np.all(np.diff(along) > 0)
    assert np.linalg.norm(ik.fk(path.waypoints[-1])[0] - (start + disp)) < 1e-3


def test_a_screw_turns_the_tcp_about_its_axis(world, in_the_open):
    ik = SeededIK(world, "right")
    p0, r0 = ik.fk(in_the_open)
    axis = np.array([0.0, 0.0, 1.0])
    anchor = p0 + np.array([0.03, 0.0, -0.2])  # a vertical axis 3 cm from the tcp (a knob's radius)
    path = turn(ik, in_the_open, axis, anchor, 0.8, _in_world(world, "right"), step=0.04, max_jump=0.15)
    assert path.complete and path.reached == pytest.approx(0.8)
    radius = np.linalg.norm((p0 - anchor)[:2])
    for q, s in zip(path.waypoints, path.s, strict=True):
        pos, rot = ik.fk(q)
        rel = pos - anchor
        assert np.linalg.norm(rel[:2]) == pytest.approx(radius, abs=1e-3)  # on the circle about the axis
        assert pos[2] == pytest.approx(p0[2], abs=1e-3)  # no travel along a pure rotation's axis
        turned = np.arctan2(np.cross(p0 - anchor, rel)[2], (p0 - anchor)[:2] @ rel[:2])
        assert turned == pytest.approx(s, abs=1e-3 / radius)  # turned by the path parameter
        assert _angle(rotations(axis, np.array([s]))[0] @ r0, rot) < np.deg2rad(1.0)  # the tool turns with it


def test_a_blocked_path_raises_or_is_cut_where_the_predicate_says(world, above_fruit):
    ik = SeededIK(world, "right")
    p0, _ = ik.fk(above_fruit)
    blocked_above = p0[2] + 0.043  # a ceiling 43 mm up, seen through the configuration's tcp

    def ceiling(q: np.ndarray, s: float) -> bool:
        return bool(ik.fk(q)[0][2] > blocked_above)

    up = np.array([0.0, 0.0, 0.10])
    with pytest.raises(PathBreak) as raised:
        straight(ik, above_fruit, up, ceiling, step=0.01, max_jump=0.15, midpoints=False)
    assert raised.value.cause == "collision" and raised.value.reached == pytest.approx(0.04)
    assert "arm 'right': straight move collides at 50 mm of 100 mm" in str(raised.value)
    cut = straight(ik, above_fruit, up, ceiling, step=0.01, max_jump=0.15, midpoints=False, partial=True)
    assert not cut.complete and cut.broke is not None and cut.broke.cause == "collision"
    np.testing.assert_allclose(cut.s, np.arange(5) * 0.01, atol=1e-12)  # 0 .. 40 mm kept
    assert ik.fk(cut.waypoints[-1])[0][2] <= blocked_above
    # a predicate of the path parameter alone (a door at s): only the midpoint between 20 and 30 mm is hit
    at_25 = lambda q, s: abs(s - 0.025) < 1e-9  # noqa: E731
    assert straight(ik, above_fruit, up, at_25, step=0.01, max_jump=0.15, midpoints=False).complete
    mid = straight(ik, above_fruit, up, at_25, step=0.01, max_jump=0.15, midpoints=True, partial=True)
    assert mid.reached == pytest.approx(0.02) and "collides at 25 mm" in str(mid.broke)


def test_a_joint_jump_is_refused(world, above_fruit):
    """A step the arm can only make by turning a joint far (the tool rolled by 1 rad between two
    waypoints) is an IK branch switch for the follower: refused at `max_jump`, kept above it."""
    ik = SeededIK(world, "right")
    p0, r0 = ik.fk(above_fruit)
    roll = rotations(r0[:, 2], np.array([0.0, 0.0, 1.0]))
    poses = screw(p0, r0, r0[:, 2], p0, np.array([0.0, 0.0, 1.0]))  # twist about the tool axis in place
    np.testing.assert_allclose(poses.rot, roll @ r0)
    free = _in_world(world, "right")
    with pytest.raises(PathBreak, match="switches IK branch") as raised:
        follow(ik, above_fruit, poses, free, max_jump=0.15)
    assert raised.value.cause == "jump" and raised.value.reached == 0.0
    cut = follow(ik, above_fruit, poses, free, max_jump=0.15, partial=True)
    assert len(cut.waypoints) == 2 and cut.broke is not None and cut.broke.cause == "jump"
    whole = follow(ik, above_fruit, poses, free, max_jump=1.5)
    assert whole.complete and np.max(np.abs(whole.waypoints[-1] - whole.waypoints[-2])) > 0.15


def test_an_unreachable_pose_ends_the_path(world, above_fruit):
    ik = SeededIK(world, "right")
    with pytest.raises(PathBreak, match="has no IK solution") as raised:
        straight(ik, above_fruit, np.array([1.5, 0.0, 0.0]), _in_world(world, "right"), step=0.01, max_jump=0.5)
    assert raised.value.cause == "ik" and 0.0 < raised.value.reached < 1.5


def test_a_fast_but_continuous_step_is_followed_in_finer_steps(world, above_fruit):
    """A straight step whose joints move more than `max_jump` is tried again in four parts: followed when no
    part moves more than half of it (a joint turning fast, near a singularity, but continuously), refused
    when a part still does."""
    ik = SeededIK(world, "right")
    free = _in_world(world, "right")
    up = np.array([0.0, 0.0, 0.04])
    one_step = straight(ik, above_fruit, up, free, step=0.04, max_jump=1.5)  # the whole lift as one step
    jump = float(np.max(np.abs(one_step.waypoints[1] - one_step.waypoints[0])))
    refined = straight(ik, above_fruit, up, free, step=0.04, max_jump=0.8 * jump)
    assert refined.complete and len(refined.waypoints) == 1 + 4  # the step in its four parts
    np.testing.assert_allclose(refined.s, [0.0, 0.01, 0.02, 0.03, 0.04])
    assert np.max(np.abs(np.diff(refined.waypoints, axis=0))) <= 0.4 * jump
    with pytest.raises(PathBreak, match="switches IK branch"):
        straight(ik, above_fruit, up, free, step=0.04, max_jump=0.3 * jump)
    # without refine (the motion layer `x2 synth --sequential` keeps), the same step breaks at once
    with pytest.raises(PathBreak, match="switches IK branch"):
        straight(ik, above_fruit, up, free, step=0.04, max_jump=0.8 * jump, refine=False)


def test_sequential_synthesis_keeps_the_motion_layer_before_the_scheduler():
    """`--sequential` stays byte-comparable with the synthesis before the arm scheduler: every motion-layer
    change since is a setting that BEFORE_SCHEDULER turns off (the finer steps of a jumping straight move among
    them), sequential synthesis runs on exactly those settings, and its episodes say so."""
    sequential = SynthSession(SessionOptions("fruit_in_microwave", sequential=True))
    assert sequential.motion == replace(BEFORE_SCHEDULER, grasp_variety=GRASP_VARIETY)
    assert sequential.motion.describe()["refine_jumps"] is False
    assert "refine_jumps" not in MotionSettings().describe()  # (the default's records stay as they were)
