"""`open` and `close`: drive an articulated part (a hinged door, a sliding drawer) to a joint target.

The mechanism is read from the live model: the hinge or slide joint that moves the target part's
site, its world axis and anchor (`data.xaxis` / `xanchor`), and the part's largest box (the door
panel, the drawer front), whose faces a push acts on. Two motions follow the joint:

- pull: grasp the part at one of its annotated grasp frames (sites named *grasp* on the moving part)
  and carry the grasp along the joint's motion (a screw about the hinge axis, a translation along the
  slide) as far as the arm can follow, then let go;
- push: with the gripper closed and pointing down, sweep the part's trailing face along the motion,
  from just behind it to the goal, the fingers' sides on the face and the palm above its top edge.

`open` pulls; when the arm cannot follow a door all the way (the microwave's handle passes within
~0.13 m of the left shoulder near 1.25 rad), it lets go and pushes the door's inner face the rest of
the way. `close` pushes the outer face (or the drawer front). Both are closed-loop: each sweep is a
guarded move that ends when the joint reaches its goal on the live simulator; if the part lags, the
rest is re-planned from the joint's actual value, at most ROUNDS times, then "guard timeout".

Waypoints are coarse (0.1 rad / 3 cm of joint motion), solved and checked by `mechanism.MechanismPlanner`;
`time_polyline` interpolates between them at the control rate. All randomness (the order push spots
are tried in) comes from the attempt's "grasp" stream.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.executor import Lane, SkillExecutor
from x2.synth.motion.paths import steps
from x2.synth.segments import Gripper, Guarded, Segment, SkillFailure, Wait
from x2.synth.skills.mechanism import (
    CHECK_MARGIN,
    DOWN,
    Mechanism,
    MechanismPlanner,
    Touch,
    read_mechanism,
    refresh,
)
from x2.synth.skills.shapes import rot_about

STEP = {True: 0.1, False: 0.03}  # joint motion (rad | m) between IK waypoints of a sweep
MARGIN = {True: 0.15, False: 0.03}  # default goal beyond the node's predicate threshold (rad | m)
OVERSHOOT = {True: 0.08, False: 0.01}  # a sweep is planned past the goal so that the guard, not the
# track's end, stops it: damping and the grasp's compliance leave the part up to ~0.06 rad behind the hand
TOLERANCE = {True: 0.02, False: 0.003}  # the guard holds within this of the goal
SETTLE = {True: 0.06, False: 0.01}  # a part let go may spring back this much (the grasp's and the contact's
# compliance relax) and still count as there; well inside MARGIN, so the node's predicate still holds
SLIPPED = 0.04  # m between the commanded hand and the grasp frame on the part: it slipped out
MIN_PUSH_START = 0.45  # rad: a door opened less leaves the closed hand no room behind it (the push
# planner checks the rest)
PUSH_GAP = 0.015  # m between the fingers and the face where a push starts
PALM_CLEAR = 0.012  # m kept between the palm and the top edge of a pushed face
APPROACH = 0.07  # m: pre-grasp / pre-push standoff, and how far the gripper backs out afterwards
WAIT_FOR_ARM_S = 20  # s this arm waits for the other to be free, or out of the part's way, before it gives up
GATE_EVERY = 5  # ticks between looks at whether an arm going aside has cleared the part's way
ROUNDS = 3  # guarded sweeps (each re-planned from the actual joint value) before "guard timeout"
SWEEP_SPEED = 1.0  # fraction of the context's joint limits while moving the part (they track 1 rad/s)
NEAR_SPEED = 1.0  # ... for the straight moves onto and off it
GRIPPER_TICKS = 15  # the G and H grippers close fully within 0.5 s (tests/test_sim_mujoco_models.py)
APERTURES = (1.0, 0.25)  # gripper openings tried for the way onto a handle: wide, else just around a bar
RELEASE_TICKS = GRIPPER_TICKS  # fully open before backing out: the H gripper's hooks would catch the bar
TOP_GRASP_COS = np.cos(np.deg2rad(45.0))  # an approach within 45 deg of straight down is a grasp from above
PullEnd = Literal["carried", "lagging", "lost"]  # how a pull ended (`_pull`)


# ----- goals ---------------------------------------------------------------------------------------------
def _goal(ctx: SynthContext, binding: SkillBinding, mech: Mechanism, opening: bool) -> float:
    """The `goal` parameter, else the node's joint_above/below threshold plus a margin, else the range end.
    (Not `target`: a skill block's `target` is what the skill acts on, never a parameter.)"""
    if "goal" in binding.params:
        goal = binding.number("goal", np.nan)  # (present: the default is never read)
    else:
        wanted = "joint_above" if opening else "joint_below"
        node = next((n for n in ctx.monitor.task.nodes if n.skill is binding), None)
        calls = [c for c in (node.success if node else ()) if c.name == wanted and c.args.get("joint") == mech.joint]
        if calls:
            value = calls[0].args["value"]
            assert isinstance(value, int | float)  # a "float" argument: the task compiler made it a number
            threshold = float(value)
            goal = threshold + (MARGIN[mech.hinge] if opening else -MARGIN[mech.hinge])
        else:
            goal = mech.hi - 0.1 * (mech.hi - mech.lo) if opening else mech.lo
    return float(np.clip(goal, mech.lo, mech.hi))


def _hand_at(ctx: SynthContext, arm: str, opening: float) -> bool:
    """The arm's fingers are (within 2 mm each) at `opening` (gripper action, 0 closed .. 1 open)."""
    g, jaw = ctx.env.robot.gripper, ctx.backend.jaw()
    finger = ctx.backend.joint_value(ctx.env.robot.arm(arm).gripper_joints[0])
    if jaw is not None:  # a linkage's finger joint is an angle: compared as commands, 2 mm a finger as one
        return abs(jaw.command_at(finger) - opening) < jaw.command_tolerance(0.002)
    return abs(finger - (g.closed_ctrl + opening * (g.open_ctrl - g.closed_ctrl))) < 0.002


def _reached(ctx: SynthContext, mech: Mechanism, goal: float, sign: float, settled: bool = False) -> bool:
    """The live joint is at `goal` (within the guard's tolerance, or what a released part may settle by)."""
    slack = SETTLE[mech.hinge] if settled else TOLERANCE[mech.hinge]
    return sign * (ctx.backend.joint_value(mech.joint) - goal) >= -slack


def _beyond(mech: Mechanism, goal: float, sign: float) -> float:
    """Where a sweep toward `goal` ends: OVERSHOOT past it, but not past the joint's range (a door shut
    against its stop cannot be pushed further; the hand would only press into the shell)."""
    return float(np.clip(goal + sign * OVERSHOOT[mech.hinge], mech.lo, mech.hi))


# ----- pull: grasp and carry --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Grasp:
    pos: Floats  # tcp at the grasp, part at mech.value
    rot: Floats
    opening: float  # the hand's aperture on the way in (gripper action)
    q_pre: Floats  # arm at the pre-grasp (backed off along the approach)
    descent: Floats  # pre-grasp -> grasp waypoints
    arc: Floats  # grasp -> as far as the arm follows toward the goal
    reach: float  # joint value at the end of `arc`


def _grasp_candidates(plan: MechanismPlanner, goal: float, sign: float) -> Iterator[_Grasp]:
    ctx, mech = plan.ctx, plan.mech
    m, d = ctx.backend.model, ctx.backend.data
    frames = []
    for name in mech.grasps:
        sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, name)
        frames.append((d.site_xpos[sid].copy(), d.site_xmat[sid].reshape(3, 3).copy()))
    frames.sort(key=lambda f: -float(f[1][:, 2] @ DOWN))  # from above first: the arms hang from the shoulders
    values = steps(mech.value, _beyond(mech, goal, sign), STEP[mech.hinge])
    tool_x = plan.ik.fk(ctx.executor.arm_target(plan.arm))[1][:, 0]
    for pos, rot in frames:
        # the jaws are symmetric: of the two grasps, try first the one the wrist is already nearer to
        flips = [0.0, np.pi] if rot[:, 0] @ tool_x >= 0 else [np.pi, 0.0]
        for flip in flips:
            r = rot @ rot_about(np.array([0.0, 0.0, 1.0]), flip)
            q = plan.solve_cold(pos, r)
            # wide open unless a finger would then hit the part (behind a drawer's bar, the front is near)
            opening = next((a for a in APERTURES if q is not None and plan.free(q, "handle", opening=a)), None)
            if q is None or opening is None:
                continue
            pre = pos - APPROACH * r[:, 2]
            q_pre = plan.solve(pre, r, q)
            if q_pre is None or not plan.free(q_pre, None, opening=opening):
                continue
            descent = plan.line(q_pre, r, pre, pos, "handle", opening=opening)
            if not descent.complete:
                continue
            arc = plan.sweep(descent.waypoints[-1], pos, r, values, "handle", float)
            yield _Grasp(pos, r, opening, q_pre, descent.waypoints, arc.waypoints, arc.reached)


def _furthest[C: (_Grasp, _Push)](candidates: Iterable[C], goal: float, sign: float) -> C | None:
    """The candidate that carries the part furthest toward `goal`; stops at the first that gets there."""
    best = None
    for cand in candidates:
        if best is None or sign * (cand.reach - best.reach) > 1e-9:
            best = cand
        if sign * (cand.reach - goal) >= 0:
            break
    return best


def _pull(ctx: SynthContext, plan: MechanismPlanner, goal: float, sign: float,
          allow_short: bool) -> Generator[Segment, None, PullEnd]:
    """Grasp the part and carry it toward `goal`, let go and back out. With `allow_short` the carry may
    end early where the arm cannot follow (a push takes over). Returns "carried", "lagging" (the part
    stayed behind for ROUNDS re-plans) or "lost" (it slipped out of the grasp)."""
    mech, arm = plan.mech, plan.arm
    best = _furthest(_grasp_candidates(plan, goal, sign), goal, sign)
    if best is None or len(best.arc) < 2:
        raise SkillFailure("ik infeasible", f"arm {arm!r}: no grasp of {mech.joint}'s part the arm can carry "
                                            f"(grasp frames: {', '.join(mech.grasps) or 'none'})")
    if sign * (best.reach - goal) < 0 and not allow_short:
        raise SkillFailure("ik infeasible", f"arm {arm!r} follows {mech.joint} only to {best.reach:.2f} "
                                            f"(goal {goal:.2f})")
    # the free-space plan sees the fingers as they are, so they take their aperture first
    yield Gripper(arm, best.opening, ticks=1 if _hand_at(ctx, arm, best.opening) else GRIPPER_TICKS)
    yield from ctx.move_to(arm, best.q_pre)
    yield plan.timed(best.descent, NEAR_SPEED, "cartesian")
    yield Gripper(arm, 0.0, ticks=GRIPPER_TICKS)
    kind = "screw" if mech.hinge else "cartesian"
    carry_to = min(goal, best.reach) if sign > 0 else max(goal, best.reach)
    arc = best.arc
    status: PullEnd = "lagging"
    for _ in range(ROUNDS):
        yield Guarded(plan.timed(arc, SWEEP_SPEED, kind),
                      until=lambda: _reached(ctx, mech, carry_to, sign), required=False, name=f"pull {mech.joint}")
        now = ctx.backend.joint_value(mech.joint)
        if sign * (now - carry_to) >= -TOLERANCE[mech.hinge]:
            status = "carried"
            break
        hand_now = plan.ik.fk(ctx.executor.arm_target(arm))[0]
        if np.linalg.norm(hand_now - mech.carry(best.pos, best.rot, now)[0]) > SLIPPED:
            status = "lost"
            break
        # the part lags: carry the rest of the way from where it is
        values = steps(now, best.reach, STEP[mech.hinge])
        arc = plan.sweep(ctx.executor.arm_target(arm), best.pos, best.rot, values, "handle", float).waypoints
        if len(arc) < 2:
            break
    yield Gripper(arm, best.opening, ticks=RELEASE_TICKS)
    # off a grasp from above, straight up: the bar slides out between the jaws, where backing out along a
    # leaning approach drags it sideways into the H gripper's hooks (and the door along with it)
    top = float(best.rot[:, 2] @ DOWN) > TOP_GRASP_COS
    yield from _back_out(ctx, plan, DOWN if top else best.rot[:, 2], "part", opening=None)
    return status


def _back_out(ctx: SynthContext, plan: MechanismPlanner, approach: Floats, touching: Touch, opening: float | None,
              distance: float = APPROACH) -> Iterator[Segment]:
    """Straight back by `distance` from the commanded pose (contacts with the part allowed on the way
    out), so the next free-space plan starts clear: along -approach, else straight up, else up and away
    from the robot (a hand folded in near the torso, as after carrying a door round, may only leave so)."""
    plan.world = ctx.world()
    plan.mech = refresh(ctx, plan.mech)
    q0 = ctx.executor.arm_target(plan.arm)
    pos, rot = plan.ik.fk(q0)
    away = pos - np.asarray(ctx.env.robot.base_pos)
    away[2] = 0.0
    up = -DOWN
    for direction in (-approach, up, up + away / max(float(np.linalg.norm(away)), 1e-9)):
        end = pos + distance * direction / np.linalg.norm(direction)
        path = plan.line(q0, rot, pos, end, touching, opening=opening)
        if path.complete:
            yield plan.timed(path.waypoints, NEAR_SPEED, "cartesian")
            return
    raise SkillFailure("trajectory collision", f"arm {plan.arm!r}: cannot back out of {plan.mech.joint}'s part")


# ----- push: sweep the trailing face --------------------------------------------------------------------
@dataclass(frozen=True)
class _Push:
    q_pre: Floats  # arm above the push's start
    descent: Floats  # pre-push -> start, PUSH_GAP behind the face
    sweep: Floats  # start -> as far as the arm follows toward the goal
    reach: float  # joint value at the end of `sweep`
    clear: float  # m the hand must rise from the push height for its fingertips to clear the face's top


def _push_candidates(plan: MechanismPlanner, goal: float, sign: float) -> Iterator[_Push]:
    ctx, mech, hand = plan.ctx, plan.mech, plan.hand
    d, m = ctx.backend.data, ctx.backend.model
    g = mech.panel
    centre, box, half = d.geom_xpos[g].copy(), d.geom_xmat[g].reshape(3, 3).copy(), m.geom_size[g].copy()
    radial = centre - mech.anchor - ((centre - mech.anchor) @ mech.axis) * mech.axis
    motion = sign * (np.cross(mech.axis, radial) if mech.hinge else mech.axis)
    face_axis = int(np.argmax(np.abs(box.T @ motion)))
    normal = -np.sign(box[:, face_axis] @ motion) * box[:, face_axis]  # out of the trailing face
    normal = normal - (normal @ DOWN) * DOWN
    normal /= np.linalg.norm(normal)
    face = centre + normal * half[face_axis]
    top = centre[2] + np.abs(box[2]) @ half
    height = top - hand.palm_clear + PALM_CLEAR
    if mech.hinge:
        u = radial / np.linalg.norm(radial)
        along = int(np.argmax(np.abs(box.T @ u)))
        edge = float(radial @ u + abs(box[:, along] @ u) * half[along])
        spots = [(face + u * (f * edge - (face - mech.anchor) @ u), f * edge) for f in (0.6, 0.5, 0.72)]
    else:
        side = np.cross(np.array([0.0, 0.0, 1.0]), normal)
        across = int(np.argmax(np.abs(box.T @ side)))
        spots = [(face + side * (f * half[across]), 1.0) for f in (0.0, 0.35, -0.35, 0.65, -0.65)]
    order = ctx.rng["grasp"].permutation(len(spots))
    tool_x = plan.ik.fk(ctx.executor.arm_target(plan.arm))[1][:, 0]
    end = _beyond(mech, goal, sign)
    for i in order:
        spot, lever = spots[int(i)]  # lever: m of face motion per joint unit there (radius | 1)
        touch = np.array([spot[0], spot[1], height]) + normal * hand.finger_x  # fingers' side on the face
        start = mech.value - sign * PUSH_GAP / lever
        values = steps(start, end, STEP[mech.hinge])
        door = (lambda v: max(v, mech.value)) if sign > 0 else (lambda v: min(v, mech.value))
        # either side of the fingers can push; first the one needing less wrist roll from here
        for yaw in ((1.0, -1.0) if -normal @ tool_x >= 0 else (-1.0, 1.0)):
            x = -yaw * normal  # the fingers' side faces the panel; the palm's width runs along it
            rot = np.column_stack([x, np.cross(DOWN, x), DOWN])
            pos0, rot0 = mech.carry(touch, rot, start)
            q0 = plan.solve_cold(pos0, rot0)
            if q0 is None or not plan.free(q0, None, opening=0.0):
                continue
            # above the start, the fingertips clear the face's top edge: the free-space move may cross it
            pre = pos0 - max(APPROACH, top + hand.tips + PALM_CLEAR - pos0[2]) * DOWN
            q_pre = plan.solve(pre, rot0, q0)
            if q_pre is None or not plan.free(q_pre, None, opening=0.0):
                continue
            descent = plan.line(q_pre, rot0, pre, pos0, None, opening=0.0)
            if not descent.complete:
                continue
            sweep = plan.sweep(descent.waypoints[-1], touch, rot, values, "part", door)
            yield _Push(q_pre, descent.waypoints, sweep.waypoints, sweep.reached, pre[2] - pos0[2])


def _push(ctx: SynthContext, arm: str, mech: Mechanism, goal: float, sign: float,
          aside: Sequence[Aside] = ()) -> Iterator[Segment]:
    """Push the part's trailing face toward `goal` with the closed hand, and back out upward; the sweep waits
    until every arm going `aside` is clear of the part's way."""
    kind = "screw" if mech.hinge else "cartesian"
    for _ in range(ROUNDS):
        plan = MechanismPlanner(ctx, arm, mech)
        best = _furthest(_push_candidates(plan, goal, sign), goal, sign)
        if best is None or sign * (best.reach - goal) < -TOLERANCE[mech.hinge]:
            got = f"only to {best.reach:.2f}" if best else "nowhere"
            raise SkillFailure("ik infeasible", f"arm {arm!r} can push {mech.joint} {got} (goal {goal:.2f})")
        # A closed hand is the narrowest pusher. Closed before the free-space move, the planner sees it
        # closed too (open H fingers reach 4 cm further down: a straight path above the door would graze
        # it); but where the hand has just let go of a handle, the closing fingers would catch it, so
        # there the hand closes on the way down instead.
        early = plan.free(ctx.executor.arm_target(arm), None, opening=0.0)
        if early:
            yield Gripper(arm, 0.0, ticks=1 if _hand_at(ctx, arm, 0.0) else GRIPPER_TICKS)
        yield from ctx.move_to(arm, best.q_pre)
        if not early:
            yield Gripper(arm, 0.0, ticks=1)
        yield plan.timed(best.descent, NEAR_SPEED, "cartesian")
        yield from _until_clear(ctx, mech, aside)
        yield Guarded(plan.timed(best.sweep, SWEEP_SPEED, kind),
                      until=functools.partial(_reached, ctx, mech, goal, sign), required=False,
                      name=f"push {mech.joint}")
        yield from _back_out(ctx, plan, DOWN, "part", opening=0.0, distance=best.clear)
        if _reached(ctx, mech, goal, sign, settled=True):
            return
        mech = refresh(ctx, mech)  # the part lags: push again from where it is
    raise SkillFailure("guard timeout", f"{mech.joint} at {ctx.backend.joint_value(mech.joint):.2f} after {ROUNDS} "
                                        f"pushes (goal {goal:.2f})")


# ----- the skills ---------------------------------------------------------------------------------------
def _clear_path(ctx: SynthContext, arm: str, mech: Mechanism, goal: float) -> Generator[Segment, None, list[Aside]]:
    """Send the other arm(s) home first if the part, moving to `goal`, would sweep through them (as a
    hand that has just put something in the oven and backed out only a little would block its door).

    One node at a time, the other arm goes home before this one moves. Beside other lanes it goes home in a
    lane of its own while this arm approaches the part; `_push` holds the sweep until the part's way is
    clear of it (`Aside.clear`). Returns those arms."""
    world = ctx.world()
    values = steps(mech.value, goal, STEP[mech.hinge])[1:]  # where the part will be, not where it is
    aside: list[Aside] = []
    executor = ctx.executor
    for other in world.arms:
        if other == arm:
            continue
        q = ctx.executor.planning_pose(other)
        blocked = _sweep_hits(ctx, mech, values, other, [q])
        home = np.array(ctx.env.robot.arm(other).home)
        if not blocked or np.max(np.abs(q - home)) <= 1e-6:
            continue
        if not ctx.concurrent:
            yield from _out_of_the_way(ctx, other, mech)
            continue
        yield Wait(ctx.env.fps * WAIT_FOR_ARM_S, until=functools.partial(_free, executor, other), required=True,
                   name=f"the {other} arm free to go out of the way")
        lane = ctx.run_beside(other, f"{other} arm out of the way", _out_of_the_way(ctx, other, mech))
        # until it has committed to its first motion: this arm's plans see it where that motion ends
        yield Wait(ctx.env.fps * WAIT_FOR_ARM_S, until=functools.partial(_under_way, executor, lane),
                   name=f"the {other} arm on its way")
        aside.append(Aside(ctx, mech, values, other, lane))
    return aside


def _free(executor: SkillExecutor, arm: str) -> bool:
    return executor.lane_of(arm) is None


def _under_way(executor: SkillExecutor, lane: Lane) -> bool:
    return lane not in executor.lanes or (lane.segment is not None and not lane.waiting)


def _sweep_hits(ctx: SynthContext, mech: Mechanism, values: Iterable[float], other: str,
                poses: Iterable[Floats]) -> bool:
    """Does the part, at any of `values`, come within CHECK_MARGIN of the `other` arm at any of `poses`?"""
    world = ctx.world()
    mine = world.arm_geoms(other)
    margin = world.margin
    world.margin = margin + CHECK_MARGIN
    try:
        for q in poses:
            for v in values:
                world.set_joint(mech.joint, v)
                pairs = world.colliding_geoms({other: q})
                if np.any(mine[pairs[:, 0]] | mine[pairs[:, 1]]):
                    return True
        return False
    finally:
        world.margin = margin
        world.set_joint(mech.joint, mech.value)


def _out_of_the_way(ctx: SynthContext, other: str, mech: Mechanism) -> Iterator[Segment]:
    q = ctx.executor.arm_target(other)
    # A hand left inside something (touching it, as after putting the fruit in) is no start for a
    # free-space plan: it first backs straight out along its tool axis, the way it went in.
    plan = MechanismPlanner(ctx, other, mech)
    pos, rot = plan.ik.fk(q)
    for distance in (2 * APPROACH, APPROACH):  # further back can fold the elbow into the torso
        out = plan.line(q, rot, pos, pos - distance * rot[:, 2], "anything")
        if out.complete and plan.free(out.waypoints[-1], None):
            yield plan.timed(out.waypoints, NEAR_SPEED, "cartesian")
            break
    yield from ctx.move_to(other, np.array(ctx.env.robot.arm(other).home))


def _until_clear(ctx: SynthContext, mech: Mechanism, aside: Sequence[Aside]) -> Iterator[Segment]:
    """Stand still until every arm going `aside` is out of the part's way (nothing when none is)."""
    if aside:
        yield Wait(ctx.env.fps * WAIT_FOR_ARM_S, until=lambda: all(a.clear() for a in aside), required=True,
                   name=f"{mech.joint}'s way clear of the other arm")


@dataclass
class Aside:
    """An arm going out of a part's way in a lane of its own; `clear` once the part may sweep."""

    ctx: SynthContext
    mech: Mechanism
    values: Floats
    arm: str
    lane: Lane
    _asked: int = 0

    def clear(self) -> bool:
        executor = self.ctx.executor
        if self.lane not in executor.lanes:
            return True
        self._asked += 1
        if self._asked % GATE_EVERY:  # a look costs ~len(values) checks per pose: not every tick
            return False
        track = self.lane.track()
        poses = [executor.arm_target(self.arm)]
        if track is not None:
            poses += list(track[::GATE_EVERY]) + [track[-1]]
        return not _sweep_hits(self.ctx, self.mech, self.values, self.arm, poses)


def _park(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    """With `park: true`, home and open the hand (as retract does). Otherwise the hand stays as it is,
    backed out of the part: opening it here would change the fingers under the next skill's free-space
    plan, which sees them as they are when it plans."""
    if bool(binding.params.get("park", False)):
        yield from ctx.move_to(arm, np.array(ctx.env.robot.arm(arm).home))
        yield Gripper(arm, 1.0, ticks=3)


def open(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:  # noqa: A001 - the skill's name
    """Open the part to `goal` (default: the node's joint_above threshold + margin): pull it by a
    grasp frame, and push a door's inner face for what the arm cannot carry."""
    mech = read_mechanism(ctx, binding)
    goal = _goal(ctx, binding, mech, opening=True)
    if _reached(ctx, mech, goal, 1.0, settled=True):
        return
    aside = yield from _clear_path(ctx, arm, mech, goal)
    yield from _until_clear(ctx, mech, aside)  # a pull swings the part from the first tick on
    plan = MechanismPlanner(ctx, arm, mech)
    status = yield from _pull(ctx, plan, goal, 1.0, allow_short=mech.hinge)
    mech = refresh(ctx, mech)
    if not _reached(ctx, mech, goal, 1.0, settled=True):
        if not mech.hinge or mech.value < MIN_PUSH_START:
            reason = "grasp lost" if status == "lost" else "guard timeout"
            raise SkillFailure(reason, f"{mech.joint} stopped at {mech.value:.2f} (goal {goal:.2f})")
        yield from _push(ctx, arm, mech, goal, 1.0)
    yield from _park(ctx, binding, arm)


def close(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    """Close the part to `goal` (default: the node's joint_below threshold - margin, at most the range
    end) by pushing its outer face."""
    mech = read_mechanism(ctx, binding)
    goal = _goal(ctx, binding, mech, opening=False)
    if _reached(ctx, mech, goal, -1.0, settled=True):
        return
    aside = yield from _clear_path(ctx, arm, mech, goal)
    yield from _push(ctx, arm, mech, goal, -1.0, aside)
    yield from _park(ctx, binding, arm)
