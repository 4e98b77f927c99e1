"""`pick` and `place`: grasp a free object and put it on a surface or into a container.

pick: open the jaw, a free-space motion to the pre-grasp pose of the chosen grasp (grasp_poses.py), a
straight approach, close until both fingers touch, attach the object in the collision world, a straight
lift, and a check that it is still held.

place: the object the arm holds (both fingers touch it) goes onto a surface or into a container
(place_poses.py): a free-space motion to the pre-place pose, a straight move in (guarded down to contact
on a surface), the jaw opens just enough to let go (a full opening inside a container would swing the
fingers into its walls), the object is detached, and the arm backs out along the line it came in on.

Straight lines are solved once and reused: the approach to a grasp is its retreat line reversed, and
backing out of a place replays the line in. IK is damped least squares from a few seeds
(grasp_poses.py), so a pick or place spends its planning time in the free-space planner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import PlanningError
from x2.envspec.env import SkillBinding
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.context import SynthContext
from x2.synth.segments import ArmTrack, Gripper, Guarded, Segment, SkillFailure, Wait
from x2.synth.skills.grasp_poses import choose_grasp, solve_pose, straight_line
from x2.synth.skills.place_poses import (
    RELEASE_MARGIN,
    PlaceGoal,
    container_goals,
    held_by,
    surface_goals,
    surface_spot,
)
from x2.synth.skills.shapes import UP, arm_reach, gripper_geometry, object_geoms
from x2.tasks.predicates import holds

# Defaults of the skills' parameters (binding.params).
APPROACH = 0.08  # m, pre-grasp / pre-place distance from the goal along the approach line
LIFT = 0.10  # m, straight lift after the grasp

# Speeds as fractions of the context's joint limits: slow near contact, where the servos' lag shows.
NEAR_CONTACT = 0.5
LIFT_SPEED = 0.7

# Gripper timing at 30 Hz; the jaw's full stroke takes < 0.5 s (gripper test, tests/test_sim_mujoco_models.py).
OPEN_TICKS = 12
CLOSE_TICKS = 18  # at most, closing until both fingers touch
SQUEEZE_TICKS = 4  # the squeeze builds (stiff pads, ~0.1 s) before the lift
RELEASE_TICKS = 15  # at most, opening until the jaw is open as commanded (0.5 s: a full stroke)
OPEN_TOL = 0.002  # m, a finger this near its open end counts as open

MIN_SLACK = 0.015  # m of reach slack (ArmReach) a place pose needs: at the very edge joint limits bite first
MAX_PLACE_TRIES = 12  # place poses tried (IK a few ms; a straight line and a plan only for feasible ones)
MAX_UNPLANNED = 2  # free-space plans that may fail before the place gives up ("no plan")


def holding(ctx: SynthContext, arm: str, obj: str) -> bool:
    return holds(ctx.backend, "gripper_holding", {"arm": arm, "obj": obj})


def released(ctx: SynthContext, arm: str, obj: str) -> bool:
    return holds(ctx.backend, "gripper_released", {"arm": arm, "obj": obj})


def jaw_open(ctx: SynthContext, arm: str) -> bool:
    """The fingers stand within OPEN_TOL (per finger) of fully open."""
    finger = ctx.backend.joint_value(ctx.env.robot.arm(arm).gripper_joints[0])
    jaw = ctx.backend.jaw()
    if jaw is not None:
        return jaw.command_at(finger) >= 1.0 - jaw.command_tolerance(OPEN_TOL)
    return finger >= ctx.env.robot.gripper.open_ctrl - OPEN_TOL


def _opened_to(ctx: SynthContext, arm: str, command: float) -> bool:
    """The fingers stand at least as open as gripper action `command` leaves them, within OPEN_TOL per finger."""
    finger = ctx.backend.joint_value(ctx.env.robot.arm(arm).gripper_joints[0])
    jaw = ctx.backend.jaw()
    if jaw is not None:
        return jaw.command_at(finger) >= command - jaw.command_tolerance(OPEN_TOL)
    g = ctx.env.robot.gripper
    return finger >= g.closed_ctrl + command * (g.open_ctrl - g.closed_ctrl) - OPEN_TOL


def supports(ctx: SynthContext, obj: str) -> list[tuple[str, str]]:
    """(object, geom) for every geom outside the object and the robot that touches it now."""
    m, d = ctx.backend.model, ctx.backend.data
    own = set(object_geoms(m, obj).tolist())
    robot = ctx.world().robot_body
    pairs = set()
    for g1, g2 in zip(d.contact.geom1[:d.ncon], d.contact.geom2[:d.ncon], strict=True):
        if (int(g1) in own) != (int(g2) in own):
            other = int(g2) if int(g1) in own else int(g1)
            if m.geom(other).name and not robot[m.geom_bodyid[other]]:
                pairs.add((obj, m.geom(other).name))
    return sorted(pairs)


# ----- pick -------------------------------------------------------------------------------------------
def straight_move(ctx: SynthContext, world: CollisionWorld, arm: str, displacement: Floats, speed: float,
                  what: str) -> ArmTrack:
    """The tcp's straight line by `displacement` from the commanded pose, checked in `world` as its allowances
    stand, timed at `speed`; SkillFailure("no plan") naming `what` where it breaks off."""
    try:
        path = straight_line(world, arm, ctx.executor.arm_target(arm), displacement)
    except PlanningError as exc:
        raise SkillFailure("no plan", f"{what}: {exc}") from None
    return ctx.timed(arm, path, speed)


def close_on(ctx: SynthContext, arm: str, obj: str, approach: float, site: str | None) -> Iterator[Segment]:
    """The grasp of a pick (also a hand-over's): open the jaw, move to the chosen grasp's pre-grasp pose, straight
    in, close until both fingers touch, let the squeeze build. Leaves fingers-object contact allowed in the
    collision world (the caller clears it)."""
    if not jaw_open(ctx, arm):
        yield Gripper(arm, 1.0, OPEN_TICKS)  # grasp fit and collision checks see the jaw as it is
    plan = choose_grasp(ctx, obj, arm, approach, site)  # allows fingers-object contact in the world
    yield from ctx.move_to(arm, plan.retreat[-1])
    yield ctx.timed(arm, plan.retreat[::-1], NEAR_CONTACT)
    yield Gripper(arm, 0.0, ticks=2)
    yield Wait(CLOSE_TICKS, until=lambda: holding(ctx, arm, obj), name="fingers on the object")
    if not holding(ctx, arm, obj):
        raise SkillFailure("grasp lost", f"the {arm} fingers closed without holding {obj}")
    yield Wait(SQUEEZE_TICKS)


def pick(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    if obj is None or obj not in ctx.backend.object_names:
        raise SkillFailure("no grasp", f"pick needs an object target, got {binding.target!r}")
    site = binding.target if binding.target != obj else None  # OBJECT/PART: grasp that part's site
    approach, lift = binding.number("approach", APPROACH), binding.number("lift", LIFT)
    try:
        yield from close_on(ctx, arm, obj, approach, site)
        world = ctx.world()
        world.clear_allowed()
        world.attach(obj, arm)
        world.allow(supports(ctx, obj))  # it leaves what it rests on
        yield straight_move(ctx, world, arm, UP * lift, LIFT_SPEED, "lift")
    finally:
        ctx.world().clear_allowed()
    if not holding(ctx, arm, obj):
        raise SkillFailure("grasp lost", f"{obj} slipped out of the {arm} gripper during the lift")


# ----- place ------------------------------------------------------------------------------------------
def _held_object(ctx: SynthContext, arm: str) -> str:
    m = ctx.backend.model
    for obj in ctx.backend.object_names:
        free = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, f"{obj}/free") >= 0
        if free and holding(ctx, arm, obj):
            return obj
    raise SkillFailure("grasp lost", f"the {arm} gripper holds nothing to place")


def place(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    target = binding.target
    if target is None:
        raise SkillFailure("target unreachable", "place needs a target")
    backend = ctx.backend
    m = backend.model
    obj = _held_object(ctx, arm)
    held = held_by(ctx, arm, obj)
    world = ctx.world()
    world.attach(obj, arm)  # at the grip as it is now (it may have shifted since the pick)
    arm_model = ctx.env.robot.arm(arm)
    reach = arm_reach(m, backend.data, arm_model)
    tcp_rot = world.tcp_pose(arm)[1]
    into = target not in backend.object_names and m.site_type[m.site(target).id] == mujoco.mjtGeom.mjGEOM_BOX
    if into:
        goals = container_goals(ctx, held, target, tcp_rot, reach.shoulder, reach.slack)
    else:
        goals = surface_goals(ctx, held, surface_spot(ctx, target), tcp_rot, reach.shoulder, reach.slack,
                              binding.number("approach", APPROACH))
    goals = sorted((g for g in goals if g.slack > MIN_SLACK), key=lambda g: g.cost)
    if not goals:
        raise SkillFailure("target unreachable", f"no place pose at {target} within the {arm} arm's reach")
    touch = target.split("/", 1)[0]
    try:
        if not into:
            world.allow([(obj, touch), (obj, "table_top")])  # the guarded move down ends in contact
        way = _first_feasible(ctx, arm, target, goals[:MAX_PLACE_TRIES])
        goal, path_in = way.goal, way.line
        yield from way.motion
        if goal.press > 0:
            yield Guarded(ctx.timed(arm, path_in, NEAR_CONTACT), until=lambda: backend.touching(obj, touch),
                          required=False, name=f"{obj} down onto {touch}")
        else:
            yield ctx.timed(arm, path_in, NEAR_CONTACT)
        g = ctx.env.robot.gripper
        jaw = gripper_geometry(m, backend.data, arm_model, backend.finger_bodies(arm), g.closed_ctrl, g.open_ctrl,
                               backend.jaw())
        command = jaw.command_for_gap(held.width + 2 * RELEASE_MARGIN)
        yield Gripper(arm, command, ticks=2)
        # until the jaw is as open as commanded, not just off the object: hook tips (the H jaw's) still
        # curl round it until then and would drag it out on the way back
        yield Wait(RELEASE_TICKS, until=lambda: released(ctx, arm, obj) and _opened_to(ctx, arm, command),
                   name="let go")
        if not released(ctx, arm, obj):  # caught on a finger: open all the way
            yield Gripper(arm, 1.0, ticks=2)
            yield Wait(RELEASE_TICKS, until=lambda: released(ctx, arm, obj), name="let go")
        yield _back_out(ctx, arm, obj, goal, path_in, target)
    finally:
        ctx.world().clear_allowed()
    if not released(ctx, arm, obj):
        raise SkillFailure("predicate false", f"{obj} still touches the {arm} fingers after the release")


@dataclass(frozen=True)
class _LineIn:
    """A place goal's pre-place pose and the straight line in from there."""

    q_pre: Floats
    line: Floats  # (n, dof) joint waypoints from q_pre to the goal and its `press` beyond


@dataclass(frozen=True)
class _WayIn:
    """The place goal taken, the straight line in, and the free-space motion to the line's start."""

    goal: PlaceGoal
    line: Floats
    motion: list[Segment]


def _first_feasible(ctx: SynthContext, arm: str, target: str, goals: list[PlaceGoal]) -> _WayIn:
    """The first goal with an IK solution at its pre-place pose (further from the workspace's edge than the
    goal, so the solver converges more often), a straight line in, and a free-space plan there.

    With `MotionSettings.quick_place_goals` the best few goals are first tried with the planner's cheap ways
    only (the straight edge, its hints, the fixed detours; no trees): a goal whose way in needs trees grown
    round the container's frame (~4,000 checks) is passed over for the next one whose way is simple."""
    world = ctx.world()
    seeds = [np.array(ctx.env.robot.arm(arm).home), ctx.executor.arm_target(arm)]
    lines: dict[int, _LineIn | str] = {}

    def line_in(i: int) -> _LineIn | str:
        """Goal i's pre-place pose and straight line in, or why there is none (solved once)."""
        if i not in lines:
            goal = goals[i]
            try:
                q_pre = solve_pose(ctx, arm, goal.pos - goal.direction * goal.distance, goal.rot, seeds)
                lines[i] = _LineIn(q_pre, straight_line(world, arm, q_pre,
                                                        goal.direction * (goal.distance + goal.press)))
            except (SkillFailure, PlanningError) as exc:
                lines[i] = str(exc)[:160]
        return lines[i]

    for i in range(min(ctx.motion.quick_place_goals, len(goals))):
        found = line_in(i)
        if isinstance(found, str):
            continue
        with contextlib.suppress(SkillFailure):
            return _WayIn(goals[i], found.line, list(ctx.move_to(arm, found.q_pre, trees=False)))
    errors: list[str] = []
    unplanned = 0
    for i, goal in enumerate(goals):
        found = line_in(i)
        if isinstance(found, str):
            errors.append(found)
            continue
        try:
            motion = list(ctx.move_to(arm, found.q_pre))  # planned now: a pose with no way there is no use
        except SkillFailure as exc:
            unplanned += 1
            if unplanned == MAX_UNPLANNED:  # a failed plan spends the planner's whole budget
                raise
            errors.append(str(exc)[:160])
            continue
        return _WayIn(goal, found.line, motion)
    raise SkillFailure("target unreachable", f"{target}: " + "; ".join(errors[:3]))


def _back_out(ctx: SynthContext, arm: str, obj: str, goal: PlaceGoal, path_in: Floats, target: str) -> ArmTrack:
    """Back along the line in (from where the move in stopped), re-checked with the jaw open and the object
    left behind; a fresh straight line if that collides."""
    world = ctx.world()
    world.detach(obj)
    world.allow((obj, f) for f in ctx.backend.finger_bodies(arm))
    q_now = ctx.executor.arm_target(arm)
    # what the opened fingers rest on (a container's floor) they move away from
    world.allow((a, b) for a, b in world.colliding_pairs({arm: q_now}) if a and b)
    k = int(np.argmin(np.linalg.norm(path_in - q_now, axis=1)))
    out = np.concatenate([q_now[None], path_in[k::-1]])
    if any(world.in_collision({arm: q}) for q in out):
        # a fresh line, as far as it goes: the free-space motion after it starts from anywhere clear
        out = straight_line(world, arm, q_now, -goal.direction * goal.distance, partial=True)
        if len(out) < 2:
            raise SkillFailure("no plan", f"backing out of {target}: the opened jaw is stuck")
    return ctx.timed(arm, out, NEAR_CONTACT)
