"""`intercept`: grasp an object that a conveyor carries, in motion, and lift it off.

The object's path is read from the live world, not assumed: its velocity (its free joint's), and the slide joint
of what carries it, whose limit says when it stops. The grasp is planned where the object will be:

1. a meeting time is chosen: the arm's free-space motion to a pre-grasp pose above where the object will be
   then, planned from where the arm is now, must fit before it (the lead grows to the motion's length, and the
   arm holds still for whatever is left);
2. once there, the object's position and velocity are read again, and the tcp follows it tick by tick: down
   onto the grasp while keeping pace (the small miss of the prediction blended out on the way down), level
   with it while the jaw closes and the squeeze builds, then up with the pace easing off;
3. each tick's joint target comes from damped least squares seeded with the tick before, and every one is
   checked for collisions with the carrier and the object where they will be at that tick.

It needs the object still moving when the jaw has closed; a conveyor that stops first is "target unreachable"
(a `pick` binds a standing object). The free-space motion of step 1 is checked against the world as it stands
when it is planned, as every skill's is: it ends above the object's path, so only a motion that dives across the
path earlier could meet the object, and then the physics' contact gate rejects the attempt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.motion.seeded import seeded_ik
from x2.synth.segments import ArmTrack, Gripper, Segment, SkillFailure, Wait
from x2.synth.skills.grasp_poses import MAX_JUMP, fit_and_rank, order_for_trial, raw_candidates, solve_pose
from x2.synth.skills.pick_place import (
    APPROACH,
    CLOSE_TICKS,
    LIFT,
    OPEN_TICKS,
    SQUEEZE_TICKS,
    holding,
    jaw_open,
    supports,
)
from x2.synth.skills.shapes import UP, arm_reach, gripper_geometry, object_shape

MIN_SPEED = 0.005  # m/s: slower than this the object is standing (bind `pick`)
START_TICKS = 15  # ticks to wait for a carrier starting up (0.5 s)
LEAD_S = 2.0  # s, the first guess of how long the arm needs to get above the meeting point
MAX_LEAD_TRIES = 4  # free-space plans made: to fit the lead to the motion's length, or after a failed one
DESCENT_S = 0.8  # s for the last `approach` metres down onto the grasp, keeping pace with the object
LIFT_S = 0.8  # s for the lift, the pace easing off linearly to a stop
LEAD_MARGIN = 3  # ticks of slack between the motion's end and the meeting time
MAX_TRIES = 4  # grasp candidates tried
MAX_WAIT_S = 20.0  # s ahead at most that a meeting is looked for
LATER_TICKS = 6  # ticks the meeting moves on when the object is not yet within reach then (0.2 s: 1 cm at 5 cm/s)


@dataclasses.dataclass(frozen=True)
class Motion:
    """Where the object goes: position now, constant velocity, and how long until its carrier stops."""

    pos: Floats
    vel: Floats
    stops_in: float  # s (inf: nothing stops it)
    carrier: str | None  # the slide joint carrying it
    carrier_q: float
    carrier_rate: float  # m/s along the joint

    def at(self, t: float) -> Floats:
        return self.pos + self.vel * min(t, self.stops_in)

    def carrier_at(self, t: float) -> float:
        return self.carrier_q + self.carrier_rate * min(t, self.stops_in)


@dataclasses.dataclass(frozen=True)
class Meeting:
    """Where and when the hand meets the moving object, and the free-space motion that takes it there."""

    offset: Floats  # the grasp's tcp position from the object's origin
    rot: Floats  # tcp rotation of the grasp
    lead: int  # ticks from now until the hand is above the meeting point
    track: ArmTrack  # the free-space motion there (no longer than `lead`)


def intercept(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    if obj is None or obj not in ctx.backend.object_names:
        raise SkillFailure("no grasp", f"intercept needs an object target, got {binding.target!r}")
    approach, lift = binding.number("approach", APPROACH), binding.number("lift", LIFT)
    dt = ctx.env.control_dt
    if not jaw_open(ctx, arm):
        yield Gripper(arm, 1.0, OPEN_TICKS)
    # a conveyor starting with the world is still at rest on the first tick
    yield Wait(START_TICKS, until=lambda: float(np.linalg.norm(_velocity(ctx, obj))) >= MIN_SPEED,
               name=f"{obj} moving")
    motion = _motion(ctx, obj)
    if float(np.linalg.norm(motion.vel)) < MIN_SPEED:
        raise SkillFailure("target unreachable", f"{obj} is not moving ({np.linalg.norm(motion.vel):.3f} m/s): "
                                                 "bind pick to a standing object")
    try:
        meeting = _plan_meeting(ctx, arm, obj, motion, approach)
        offset, rot = meeting.offset, meeting.rot
        yield meeting.track
        if meeting.lead > len(meeting.track):
            yield Wait(meeting.lead - len(meeting.track), name="the object coming")
        motion = _motion(ctx, obj)  # read again: follow the object as it is, not as it was predicted
        descent, close = round(DESCENT_S / dt), CLOSE_TICKS + SQUEEZE_TICKS
        if (descent + 1 + close) * dt > motion.stops_in:
            raise SkillFailure("target unreachable", f"{obj} stops before the jaw could close on it in motion")
        world = ctx.world()
        world.allow((obj, f) for f in ctx.backend.finger_bodies(arm))
        tcp_now = world.tcp_pose(arm)[0]
        miss = motion.pos + offset + UP * approach - tcp_now
        k = np.arange(1, descent + 1)
        s = _smooth(k / descent)
        down = tcp_now + np.outer(k * dt, motion.vel) + np.outer(s, miss - UP * approach)
        yield ArmTrack(arm, _follow(ctx, arm, obj, motion, down, rot, k * dt), "cartesian")
        yield Gripper(arm, 0.0, ticks=1)  # the object moves on during this tick: the next track starts a tick on
        k = np.arange(descent + 2, descent + 2 + close)
        level = motion.pos + offset + np.outer(k * dt, motion.vel)
        yield ArmTrack(arm, _follow(ctx, arm, obj, motion, level, rot, k * dt), "cartesian")
        if not holding(ctx, arm, obj):
            raise SkillFailure("grasp lost", f"the {arm} fingers closed without holding the moving {obj}")
        world = ctx.world()
        world.attach(obj, arm)
        n = round(LIFT_S / dt)
        u = np.arange(1, n + 1) / n
        start = world.tcp_pose(arm)[0]
        # the pace eases off linearly: distance covered = v * t * (1 - u / 2); up along a smooth profile
        up = start + np.outer(u * (1 - u / 2) * n * dt, motion.vel) + np.outer(_smooth(u), UP * lift)
        yield ArmTrack(arm, _follow(ctx, arm, None, motion, up, rot, None), "cartesian")
    finally:
        ctx.world().clear_allowed()
    if not holding(ctx, arm, obj):
        raise SkillFailure("grasp lost", f"{obj} slipped out of the {arm} gripper during the lift")


def _smooth(u: Floats) -> Floats:
    """0 -> 1 with zero slope at both ends (smoothstep)."""
    return u * u * (3 - 2 * u)


def _velocity(ctx: SynthContext, obj: str) -> Floats:
    """The object's linear velocity (its free joint's), world frame."""
    dof = ctx.backend.model.joint(f"{obj}/free").dofadr[0]
    vel: Floats = ctx.backend.data.qvel[dof:dof + 3].copy()
    return vel


def _motion(ctx: SynthContext, obj: str) -> Motion:
    m, d = ctx.backend.model, ctx.backend.data
    pos = np.array(ctx.backend.object_pos(obj), dtype=np.float64)
    vel = _velocity(ctx, obj)
    joint = _carrier_joint(ctx, obj)
    if joint is None:
        return Motion(pos, vel, np.inf, None, 0.0, 0.0)
    q, rate = float(d.qpos[m.jnt_qposadr[joint]]), float(d.qvel[m.jnt_dofadr[joint]])
    lo, hi = m.jnt_range[joint]
    left = (hi - q) / rate if rate > 1e-6 else (q - lo) / -rate if rate < -1e-6 else 0.0
    return Motion(pos, vel, max(float(left), 0.0), m.joint(joint).name, q, rate)


def _carrier_joint(ctx: SynthContext, obj: str) -> int | None:
    """The slide joint of the body the object rests on (a conveyor's pallet), if any."""
    m = ctx.backend.model
    for _, geom in supports(ctx, obj):
        body = int(m.geom(geom).bodyid[0])
        while body > 0:
            for j in range(m.body_jntadr[body], m.body_jntadr[body] + m.body_jntnum[body]):
                if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE:
                    return j
            body = int(m.body_parentid[body])
    return None


def _plan_meeting(ctx: SynthContext, arm: str, obj: str, motion: Motion,
                  approach: float) -> Meeting:
    """The first meeting the arm makes in time (step 1 above), a grasp `approach` m above it."""
    m, d = ctx.backend.model, ctx.backend.data
    dt = ctx.env.control_dt
    arm_model = ctx.env.robot.arm(arm)
    g = ctx.env.robot.gripper
    gripper = gripper_geometry(m, d, arm_model, ctx.backend.finger_bodies(arm), g.closed_ctrl, g.open_ctrl,
                               ctx.backend.jaw())
    reach = arm_reach(m, d, arm_model)
    shape = object_shape(m, d, obj, world=True)
    seeds = [ctx.executor.arm_target(arm), np.array(arm_model.home)]
    lead = round(LEAD_S / dt)
    errors: list[str] = []
    plans = 0
    while plans < MAX_LEAD_TRIES:
        t_meet = (lead + round(DESCENT_S / dt)) * dt  # where the object is when the tcp reaches the grasp
        if t_meet + (CLOSE_TICKS + SQUEEZE_TICKS + 1) * dt > motion.stops_in:
            raise SkillFailure("target unreachable", f"{obj} stops before it comes within the {arm} arm's reach "
                               "in time" + (f" ({'; '.join(errors[:2])})" if errors else ""))
        if t_meet > MAX_WAIT_S:  # nothing stops it (no carrier with a limit) and it never comes within reach
            raise SkillFailure("target unreachable", f"{obj} does not come within the {arm} arm's reach in "
                               f"{MAX_WAIT_S:g} s" + (f" ({'; '.join(errors[:2])})" if errors else ""))
        shift = motion.at(t_meet) - motion.pos
        raw = [dataclasses.replace(c, pos=c.pos + shift) for c in raw_candidates(m, d, obj)]
        # the fingertips clear what it stands on (the pallet), not the table
        ranked = fit_and_rank(raw, shape.moved(shift, np.eye(3)), gripper, -shape.support(-UP) + shift[2], reach)
        if not ranked:  # not yet within reach: meet it later
            lead += LATER_TICKS
            continue
        track = None
        for cand in order_for_trial(ranked, ctx.rng["grasp"], ctx.motion.grasp_variety)[:MAX_TRIES]:
            offset = cand.pos - motion.at(t_meet)
            try:  # IK costs milliseconds, a plan much more: only a pose that has a solution is planned to
                q_pre = solve_pose(ctx, arm, motion.at(lead * dt) + offset + UP * approach, cand.rot, seeds)
            except SkillFailure as exc:
                errors.append(f"{cand.source}: {exc}"[:160])
                continue
            plans += 1
            try:
                track = next(iter(ctx.move_to(arm, q_pre)))
            except SkillFailure as exc:
                errors.append(f"{cand.source}: {exc}"[:160])
                if plans == MAX_LEAD_TRIES:
                    break
                continue
            break
        if track is None:  # no pose there (the arm's edge) or no way: meet it later, nearer
            lead += LATER_TICKS
            continue
        assert isinstance(track, ArmTrack)  # move_to yields one track
        if len(track) + LEAD_MARGIN <= lead:
            return Meeting(offset, cand.rot, lead, track)
        lead = len(track) + LEAD_MARGIN
    raise SkillFailure("no plan", f"no way to meet the moving {obj}: " + ("; ".join(errors[:3]) or
                                                                          "the arm never gets there in time"))


def _follow(ctx: SynthContext, arm: str, obj: str | None, motion: Motion, tcp: Floats, rot: Floats,
            times: Floats | None) -> Floats:
    """Joint targets putting the tcp on each row of `tcp` (one per tick), each checked for collisions with the
    carrier (and, with `obj`, the object) where they are at that tick's time."""
    world = ctx.world()
    ik = seeded_ik(world, arm)
    q = ctx.executor.arm_target(arm)
    out = np.empty((len(tcp), len(q)))
    for i, p in enumerate(tcp):
        nxt = ik.solve(p, rot, q)
        if nxt is None or float(np.max(np.abs(nxt - q))) > MAX_JUMP:
            raise SkillFailure("ik infeasible", f"following the moving object: tcp at {np.round(p, 3).tolist()}")
        if times is not None and motion.carrier is not None:
            world.set_joint(motion.carrier, motion.carrier_at(float(times[i])))
        if obj is not None and times is not None:
            world.set_object_position(obj, motion.at(float(times[i])))
        if world.in_collision({arm: nxt}):
            pairs = world.colliding_pairs({arm: nxt})[:3]
            raise SkillFailure("no plan", f"following the moving object: {pairs}")
        out[i] = q = nxt
    return out
