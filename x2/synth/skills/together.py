"""`lift_together`: both hands grasp one object by its two handles and move it straight up or down as one.

Bound to both arms. Each arm takes the object's annotated grasp site nearest its own shoulder (a tray's left
handle for the left arm); the grasps are made one after the other, as a pick's (`close_on`), since nothing moves
yet. Then both arms follow straight tcp lines by the same displacement on one jerk-limited time profile (a
single `ArmsTrack`): at every tick both hands have covered the same fraction of the way, so the object stays
level. Checked: each line against the world (the object carried by the first arm; the second arm holds it too,
so the pair object-second arm is allowed meanwhile), and the two arms against each other at every waypoint.

With `release` the object is set down where the move ends (a negative `lift` back onto the table): both jaws
open, and both hands back off upwards together.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import PlanningError
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.motion.timing import Limits, time_polyline
from x2.synth.segments import ArmsTrack, Gripper, Segment, SkillFailure, Wait
from x2.synth.skills.grasp_poses import straight_line
from x2.synth.skills.pick_place import (
    APPROACH,
    RELEASE_TICKS,
    close_on,
    holding,
    released,
    supports,
)
from x2.synth.skills.shapes import UP

LIFT = 0.12  # m, default: clear of what stood on the table around it
SPEED = 0.5  # of the context's limits: a two-handed load moves gently
SETTLE_TICKS = 9  # after the lift: the load's sway dies down before the node's predicate is read
BACK_OFF = 0.06  # m both hands rise after letting go


def lift_together(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    if obj is None or obj not in ctx.backend.object_names:
        raise SkillFailure("no grasp", f"lift_together needs an object target, got {binding.target!r}")
    arms = [a.name for a in ctx.env.robot.arms]
    if len(arms) != 2:
        raise SkillFailure("no plan", f"lift_together needs two arms, robot {ctx.env.robot.name} has {len(arms)}")
    lift = binding.number("lift", LIFT)
    try:
        for a, site in _handles(ctx, obj, arms).items():
            if not holding(ctx, a, obj):
                yield from close_on(ctx, a, obj, binding.number("approach", APPROACH), site)
        world = ctx.world()
        world.attach(obj, arms[0])
        world.allow((obj, body) for body in _bodies(ctx, arms[1]))  # it holds the object too
        # it leaves what it stands on, carries what stands on it, and may be set down on the table
        world.allow([*supports(ctx, obj), (obj, "table_top")])
        yield _together(ctx, obj, arms, UP * lift)
        yield Wait(SETTLE_TICKS)
        if not all(holding(ctx, a, obj) for a in arms):
            raise SkillFailure("grasp lost", f"{obj} slipped out of a hand while both moved it")
        if bool(binding.params.get("release", False)):
            for a in arms:
                yield Gripper(a, 1.0, ticks=2)
            yield Wait(RELEASE_TICKS, until=lambda: all(released(ctx, a, obj) for a in arms), name="let go")
            if not all(released(ctx, a, obj) for a in arms):
                raise SkillFailure("predicate false", f"{obj} still touches a hand after both opened")
            world = ctx.world()
            world.detach(obj)
            world.clear_allowed()
            world.allow((obj, f) for a in arms for f in ctx.backend.finger_bodies(a))  # open fingers slide off
            yield _together(ctx, None, arms, UP * BACK_OFF)
    finally:
        ctx.world().clear_allowed()


def _handles(ctx: SynthContext, obj: str, arms: list[str]) -> dict[str, str]:
    """Each arm's grasp site: of the object's annotated `grasp*` sites, the nearest its shoulder (one each)."""
    m, d = ctx.backend.model, ctx.backend.data
    sites = [m.site(i).name for i in range(m.nsite) if m.site(i).name.startswith(f"{obj}/grasp")]
    if len(sites) < len(arms):
        raise SkillFailure("no grasp", f"{obj} has {len(sites)} grasp sites; lifting it with both hands needs one "
                                       "per hand (grasp_* sites in its MJCF)")
    out: dict[str, str] = {}
    for a in arms:
        root = np.asarray(ctx.backend.arm_root_pos(a))[:2]
        free = [s for s in sites if s not in out.values()]
        out[a] = min(free, key=lambda s: float(np.linalg.norm(d.site_xpos[m.site(s).id][:2] - root)))
    return out


def _bodies(ctx: SynthContext, arm: str) -> list[str]:
    """The named bodies of an arm and its gripper."""
    world = ctx.world()
    m = world.model
    bodies = {int(m.geom_bodyid[g]) for g in np.flatnonzero(world.arm_geoms(arm))}
    return sorted(name for b in bodies if (name := m.body(b).name))


def _together(ctx: SynthContext, obj: str | None, arms: list[str], displacement: Floats) -> ArmsTrack:
    """Both arms' straight lines by `displacement`, checked against each other at every waypoint, on one time
    profile."""
    world = ctx.world()
    try:
        lines = {a: straight_line(world, a, ctx.executor.arm_target(a), displacement) for a in arms}
    except PlanningError as exc:
        what = f"moving {obj}" if obj else "backing off"
        raise SkillFailure("no plan", f"both hands {what}: {exc}") from None
    if len({len(p) for p in lines.values()}) != 1:  # (the same displacement at the same step: the same count)
        raise SkillFailure("no plan", "the two hands' lines have different numbers of waypoints")
    for k in range(len(lines[arms[0]])):
        both = {a: lines[a][k] for a in arms}
        if world.in_collision(both):
            raise SkillFailure("no plan", f"the hands meet on the way: {world.colliding_pairs(both)[:3]}")
    limits = ctx.limits.scaled(SPEED)
    per_arm = [limits.per_joint(lines[a].shape[1]) for a in arms]
    joint = Limits(*(np.concatenate([p[i] for p in per_arm]) for i in range(3)))
    try:
        traj = time_polyline("+".join(arms), np.hstack([lines[a] for a in arms]), joint, ctx.env.control_dt)
    except PlanningError as exc:
        raise SkillFailure("no plan", str(exc)) from None
    q = traj.q[1:] if len(traj.q) > 1 else traj.q
    cols = np.cumsum([0] + [lines[a].shape[1] for a in arms])
    return ArmsTrack({a: q[:, cols[i]:cols[i + 1]] for i, a in enumerate(arms)})
