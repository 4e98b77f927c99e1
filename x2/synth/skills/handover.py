"""`hand_over`: the arm holding an object passes it to the other arm in the air.

Bound to both arms (neither may start anything else meanwhile), the target names the object, or the part the
receiving hand should take (a baton's far end). The giver is the arm whose fingers hold the object now; the
taker is the other one. Steps:

1. the giver carries the object to the hand-over point, between the two shoulders at `height` above the table,
   keeping its grip's orientation (the held object is checked against everything on the way);
2. the taker grasps it there as a pick would (grasp_poses.py; its fingers may touch the object, not the
   giver's), closes until both fingers touch and lets the squeeze build;
3. only then does the giver open (all the way: nothing is near but the object), and the object changes hands in
   the collision world too;
4. the giver backs off along its approach axis, so its open fingers leave the object without dragging it.

The object is never unsupported: between steps 2 and 3 both hands hold it, which is what a person does.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.segments import Gripper, Segment, SkillFailure, Wait
from x2.synth.skills.grasp_poses import solve_pose
from x2.synth.skills.pick_place import (
    APPROACH,
    NEAR_CONTACT,
    RELEASE_TICKS,
    close_on,
    holding,
    released,
    straight_move,
)

HEIGHT = 0.22  # m above the table where the object changes hands: clear of everything standing on the table
SETTLE_TICKS = 6  # the giver's servos catch up with its last target before the taker aims at the object
BACK_OFF = 0.06  # m the giver's tcp moves back along its approach axis after letting go


def hand_over(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    if obj is None or obj not in ctx.backend.object_names:
        raise SkillFailure("no grasp", f"hand_over needs an object target, got {binding.target!r}")
    site = binding.target if binding.target != obj else None
    arms = [a.name for a in ctx.env.robot.arms]
    if len(arms) != 2:
        raise SkillFailure("no plan", f"hand_over needs two arms, robot {ctx.env.robot.name} has {len(arms)}")
    givers = [a for a in arms if holding(ctx, a, obj)]
    if len(givers) != 1:
        raise SkillFailure("grasp lost", f"hand_over: {obj} is held by {len(givers) or 'no'} hand(s), not one")
    giver = givers[0]
    taker = next(a for a in arms if a != giver)
    world = ctx.world()
    world.attach(obj, giver)  # at the grip as it is now
    try:
        yield from _carry_to_meeting_point(ctx, giver, obj, binding.number("height", HEIGHT))
        yield Wait(SETTLE_TICKS)
        yield from close_on(ctx, taker, obj, binding.number("approach", APPROACH), site)
        yield Gripper(giver, 1.0, ticks=2)
        yield Wait(RELEASE_TICKS, until=lambda: released(ctx, giver, obj), name="giver lets go")
        if not released(ctx, giver, obj):
            raise SkillFailure("predicate false", f"{obj} still touches the {giver} fingers after they opened")
        world = ctx.world()
        world.clear_allowed()
        world.detach(obj)
        world.attach(obj, taker)
        world.allow((obj, f) for f in ctx.backend.finger_bodies(giver))  # the open fingers slide off it
        away = -world.tcp_pose(giver)[1][:, 2] * BACK_OFF
        yield straight_move(ctx, world, giver, away, NEAR_CONTACT, f"the {giver} hand backing off {obj}")
    finally:
        ctx.world().clear_allowed()
    if not holding(ctx, taker, obj):
        raise SkillFailure("grasp lost", f"{obj} slipped out of the {taker} gripper at the hand-over")


def _carry_to_meeting_point(ctx: SynthContext, giver: str, obj: str, height: float) -> Iterator[Segment]:
    """The giver moves so the object's origin comes to the shoulders' mid-plane at `height` above the table, as
    far out as it is now, its orientation unchanged."""
    backend = ctx.backend
    origin = np.asarray(backend.object_pos(obj), dtype=np.float64)
    middle = float(np.mean([backend.arm_root_pos(a.name)[1] for a in ctx.env.robot.arms]))
    goal = np.array([origin[0], middle, backend.table_height + height])
    pos, rot = ctx.world().tcp_pose(giver)
    seeds = [ctx.executor.arm_target(giver), np.array(ctx.env.robot.arm(giver).home)]
    q = solve_pose(ctx, giver, pos + goal - origin, rot, seeds)
    yield from ctx.move_to(giver, q)
