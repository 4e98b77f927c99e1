"""`navigate`: drive a mobile robot's base until the next skill's target is within its arm's reach.

The goal is chosen for the arm that will work at the target (`reach_with`, default the arm nearest it): the
base keeps its heading and moves so that the target lies `distance` ahead of that arm's first joint axis,
clamped to the base's range. A goal is taken only when the robot stands there free of collisions and the arm
reaches a point above the target (x2's IK, with the base at the goal); otherwise nearer and farther standoffs
are tried. The drive is a straight line in (x, y, yaw), checked every `CHECK_STEP` against the world with the
arms (and what they hold) where they are; when it is blocked, the base backs away from the table first, drives
along it, and comes in again. The arms hold their targets while the base moves.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import IKError, PlanningError
from x2.envspec.env import MobileBaseSpec, SkillBinding
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.context import SynthContext
from x2.synth.motion.timing import Limits, time_polyline
from x2.synth.segments import BaseTrack, Segment, SkillFailure, Wait

STANDOFF = 0.36  # m from the arm's first joint axis to the target, horizontally: where 6-DoF arms pick best
STANDOFFS = (0.0, -0.06, 0.06, -0.12, 0.12)  # tried in turn around `distance` when the goal fails
ABOVE = 0.10  # m above the target: the point the arm must reach from the goal
CHECK_STEP = 0.02  # m (and rad) between collision checks along the drive
BACK_OFF = 0.2  # m the base backs away from the table when the straight drive is blocked
ACCELERATION, JERK = 0.4, 2.0  # m/s^2, m/s^3 (rad for the heading): a smooth start and stop, loads stay put
SETTLE_S, SETTLED = 1.0, 0.005  # the base is there when every joint is within 5 mm (rad) of its goal


def navigate(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    base = ctx.env.robot.base
    if base is None:
        raise SkillFailure("target unreachable", f"robot {ctx.env.robot.name} has no mobile base")
    target = _target_pos(ctx, binding)
    reach_with = str(binding.params.get("reach_with") or ctx.arm_for(target))
    distance = binding.number("distance", STANDOFF)
    start = ctx.executor.base_target()
    world = ctx.world()
    goal = _choose_goal(ctx, world, base, start, target, reach_with, distance)
    path = _drive(world, base, start, goal)
    ctx.world()  # (the checks moved the world's base: back to the live one)
    speed = base.speed
    limits = Limits(np.full(1, speed), np.full(1, ACCELERATION), np.full(1, JERK))
    try:
        traj = time_polyline("base", path, limits, ctx.env.control_dt)
    except PlanningError as exc:
        raise SkillFailure("no plan", f"navigate: {exc}") from None
    if len(traj.q) > 1:
        yield BaseTrack(traj.q[1:])

    def arrived() -> bool:
        return bool(np.max(np.abs(ctx.backend.joint_values(base.joints) - goal)) <= SETTLED)

    yield Wait(round(SETTLE_S * ctx.env.fps), until=arrived, required=True, name="the base at its goal")


def _target_pos(ctx: SynthContext, binding: SkillBinding) -> Floats:
    target = binding.target or binding.target_object
    if target is None:
        raise SkillFailure("target unreachable", "navigate needs a target (@tag, OBJECT or OBJECT/PART)")
    if target in ctx.backend.object_names:
        return np.asarray(ctx.backend.object_pos(target), dtype=np.float64)
    return np.asarray(ctx.backend.site_box(target)[0], dtype=np.float64)


def _rot(yaw: float) -> Floats:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s], [s, c]])


def _choose_goal(ctx: SynthContext, world: CollisionWorld, base: MobileBaseSpec, start: Floats,
                 target: Floats, arm: str, distance: float) -> Floats:
    """The first base pose (x, y, yaw) from which `arm`'s first joint axis stands `distance` (then the other
    standoffs) behind the target along the heading, the robot collides with nothing and the arm reaches above
    the target."""
    live = ctx.backend.joint_values(base.joints)
    mount = np.asarray(ctx.env.robot.base_pos[:2], dtype=np.float64)
    # the arm's first joint axis in the base's frame (it turns with the heading about the base's origin)
    root = _rot(-live[2]) @ (ctx.backend.arm_root_pos(arm)[:2] - mount - live[:2])
    yaw = float(start[2])
    ahead = np.array([np.cos(yaw), np.sin(yaw)])
    ik = ctx.ik(arm)  # (syncs the world to the live one: before the base is moved in it)
    tried = []
    for extra in STANDOFFS:
        standoff = distance + extra
        xy = target[:2] - standoff * ahead - mount - _rot(yaw) @ root
        goal = np.clip(np.array([xy[0], xy[1], yaw]), base.low, base.high)
        tried.append(f"({goal[0]:.2f}, {goal[1]:.2f})")
        world.set_base(goal)
        if world.in_collision({}):
            continue
        ctx.stats.ik_calls += 1
        try:
            ik.solve(target + np.array([0.0, 0.0, ABOVE]), rng=ctx.rng["grasp"], q_ref=ctx.executor.arm_target(arm),
                     axis_down=True)
        except IKError:
            continue
        return goal
    raise SkillFailure("target unreachable", f"no base pose puts the target within the {arm} arm's reach "
                                             f"(tried {', '.join(tried)})")


def _line(a: Floats, b: Floats) -> Floats:
    """Points from a to b at most CHECK_STEP apart (a included)."""
    n = max(1, int(np.ceil(np.max(np.abs(b - a)) / CHECK_STEP)))
    return a + (b - a) * (np.arange(n + 1)[:, None] / n)


def _free(world: CollisionWorld, points: Floats) -> bool:
    for q in points[1:]:
        world.set_base(q)
        if world.in_collision({}):
            return False
    return True


def _drive(world: CollisionWorld, base: MobileBaseSpec, start: Floats, goal: Floats) -> Floats:
    """A collision-free polyline of base poses from start to goal, finely stepped: straight, or backing away
    from the table (-x), along it and in again."""
    straight = _line(start, goal)
    if _free(world, straight):
        return straight
    back = min(start[0], goal[0]) - BACK_OFF
    if back >= base.low[0]:
        corners = [start, np.array([back, start[1], start[2]]), np.array([back, goal[1], goal[2]]), goal]
        legs = [_line(a, b) for a, b in zip(corners[:-1], corners[1:], strict=True)]
        if all(_free(world, leg) for leg in legs):
            return np.concatenate([legs[0], *(leg[1:] for leg in legs[1:])])
    raise SkillFailure("no plan", f"the base cannot drive from ({start[0]:.2f}, {start[1]:.2f}) to "
                                  f"({goal[0]:.2f}, {goal[1]:.2f}) without touching anything")
