"""`push` and `pull`: slide an object across the table by a displacement.

push: a closed fist comes down behind the object (opposite the direction of motion), fingertips a
little above the table, and moves straight through it; the gripper's flat finger faces span the
object from near the table up, so it slides instead of tipping. pull: the open gripper comes down
over the object (or a named part, e.g. a handle), closes on it along the direction of motion (so the
far pad drags it by its normal force), drags it, and lets go.

Parameters: `direction` [dx, dy] (world; default away from the robot for push, towards it for pull)
or `to` (an object the target should end up at), and `distance` (m; default 0.1, or the distance to
`to`). Both are guarded on the object itself: the motion stops once the object has covered the
distance along the direction, read from the live simulator, whatever the fingers slipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from x2.base.arrays import Floats
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.segments import Gripper, Guarded, Segment, SkillFailure
from x2.synth.skills.contact_motion import (
    CONTACT_SPEED,
    GRIPPER_TICKS,
    NEAR_SPEED,
    gripper_reach,
    object_reach,
    straight_track,
    tool_frame,
    unit,
)
from x2.synth.skills.shapes import rot_about

DISTANCE = 0.10  # m, default displacement
DOWN = np.array([0.0, 0.0, -1.0])
HOVER = 0.08  # m above the contact pose where free-space motion ends and straight moves begin
SLACK = 0.03  # m the guarded track runs past the goal, so slip and servo lag never stop it short

# push
PUSH_TIP_HEIGHT = 0.012  # m fingertips above the table: clear of it under servo sag, low on the object
PUSH_GAP = 0.015  # m between gripper and object before the push starts
PUSH_LEG = 0.04  # m per closed-loop leg of a push (a pushed 5 cm block drifts ~1.5 cm sideways in 10 cm)
STEER_MAX = np.deg2rad(20)  # the most a leg turns off the push direction to steer the object back
# pull
PULL_TIP_HEIGHT = 0.008  # m fingertips above the table when closing on the object
PULL_MIN_GRIP = 0.01  # m the tcp (pad centre) stays below the object's top, so the pads close on its side


def _goal(ctx: SynthContext, binding: SkillBinding, start: Floats, default: tuple[float, float]
          ) -> tuple[Floats, float]:
    """Unit direction (3-vector, horizontal) and distance of the slide."""
    params = binding.params
    if "to" in params:
        to = str(params["to"])
        if to not in ctx.backend.object_names:
            raise SkillFailure("target unreachable", f"`to: {to}` names no object; objects: "
                                                     f"{', '.join(ctx.backend.object_names)}")
        delta = np.asarray(ctx.backend.object_pos(to)[:2]) - start[:2]
        direction, distance = unit(delta), float(np.linalg.norm(delta))
    else:
        raw = params.get("direction", list(default))
        if not isinstance(raw, list | tuple) or len(raw) != 2:
            raise SkillFailure("target unreachable", f"direction {raw!r} is not [dx, dy]")
        direction, distance = unit(np.array(raw, dtype=np.float64)), DISTANCE
    distance = binding.number("distance", distance)
    return np.array([direction[0], direction[1], 0.0]), distance


def _covered(ctx: SynthContext, obj: str, start: Floats, direction: Floats,
             distance: float) -> Callable[[], bool]:
    return lambda: float((ctx.backend.object_pos(obj) - start) @ direction) >= distance


def _slide(ctx: SynthContext, arm: str, obj: str, start: Floats, direction: Floats, distance: float,
           lead: float, leg: float, verb: str) -> Iterator[Segment]:
    """Move the tcp (in contact) until the object has covered `distance` along `direction`, in legs of
    `leg` m; before each leg the motion is re-aimed from where the object is now at the goal (turning at
    most STEER_MAX off the direction), which cancels the drift of a pushed object. `lead` is the free
    travel before contact."""
    goal = start + direction * distance
    covered = _covered(ctx, obj, start, direction, distance)
    while not covered():
        now = np.array(ctx.backend.object_pos(obj), dtype=np.float64)
        remaining = float((goal - now) @ direction)
        to_goal = goal - now
        off = float(np.arctan2(np.cross(direction, to_goal)[2], to_goal @ direction))
        aim = rot_about(np.array([0.0, 0.0, 1.0]), float(np.clip(off, -STEER_MAX, STEER_MAX))) @ direction
        last = remaining <= leg
        length = lead + (remaining + SLACK if last else leg)
        track = straight_track(ctx, arm, aim * length, touching=obj, speed=CONTACT_SPEED,
                         at_least=lead + remaining if last else None)
        yield Guarded(track, until=covered, required=last, name=f"{verb} {obj} {distance * 1e3:.0f} mm")
        if last:
            return
        lead = 0.0


def push(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    assert obj is not None  # needs_target
    start = np.array(ctx.backend.object_pos(obj), dtype=np.float64)
    direction, distance = _goal(ctx, binding, start, (1.0, 0.0))
    yield Gripper(arm, 0.0, ticks=GRIPPER_TICKS)
    # Finger faces forward (tool x along the motion): both closed fingers touch, 26 mm apart, which
    # resists the object turning. The gripper is symmetric about its axis, so +-x are equivalent: take the
    # one nearer the wrist's current heading.
    _, now = ctx.world().tcp_pose(arm)
    rot = tool_frame(DOWN, direction if now[:, 0] @ direction >= 0 else -direction)
    tip = gripper_reach(ctx, arm, np.array([0.0, 0.0, 1.0]))
    height = object_reach(ctx, obj, start, -DOWN)
    front = gripper_reach(ctx, arm, np.array([1.0, 0.0, 0.0]), band=height)  # the parts that can touch it
    behind = object_reach(ctx, obj, start, -direction)
    begin = start - direction * (behind + front + PUSH_GAP)
    begin[2] = ctx.backend.table_height + PUSH_TIP_HEIGHT + tip
    yield from ctx.move_pose(arm, begin - DOWN * HOVER, rot)
    yield straight_track(ctx, arm, DOWN * HOVER, speed=NEAR_SPEED)
    yield from _slide(ctx, arm, obj, start, direction, distance, front + PUSH_GAP, PUSH_LEG, "push")
    yield straight_track(ctx, arm, -direction * 0.01 - DOWN * HOVER, touching=obj, speed=NEAR_SPEED)


def _pull_grasps(ctx: SynthContext, arm: str, binding: SkillBinding, obj: str, start: Floats,
                 direction: Floats, tip: float) -> list[tuple[Floats, Floats]]:
    """Candidate (tcp position, rotation) top grasps, best first. On a part (a handle) the fingers close
    along the site's y, else x. On the object itself they close on a pair of its faces, preferably along
    the direction of motion, so the far pad drags it by its normal force rather than by friction alone.
    Each closing axis comes in two headings (the gripper is symmetric); the one nearer the wrist's goes first."""
    table = ctx.backend.table_height
    if binding.target is not None and binding.target != obj:  # a named part, e.g. a handle
        pos, rot, _ = ctx.backend.site_box(binding.target)
        axes = [rot[:, 1], rot[:, 0]]
        centre: Floats = np.array(pos, dtype=np.float64)
        centre[2] = max(centre[2], table + PULL_TIP_HEIGHT + tip)
    else:
        body = np.asarray(ctx.backend.data.xmat[ctx.backend.model.body(f"{obj}/object").id]).reshape(3, 3)
        axes = sorted([body[:, 0], body[:, 1]], key=lambda a: -abs(float(a @ direction)))
        top = start[2] + object_reach(ctx, obj, start, -DOWN)
        centre = start.copy()
        centre[2] = min(table + PULL_TIP_HEIGHT + tip, top - PULL_MIN_GRIP)
        if centre[2] - tip < table + 0.002:
            raise SkillFailure("no grasp", f"{obj} is too low for the fingers to close on it above the table")
    _, now = ctx.world().tcp_pose(arm)
    out: list[tuple[Floats, Floats]] = []
    for a in axes:
        flat = a - (a @ DOWN) * DOWN
        if np.linalg.norm(flat) < 1e-3:
            continue
        x = np.cross(unit(flat), DOWN)  # tool y (the closing axis) along the candidate: x = y cross z
        out += [(centre, tool_frame(DOWN, h)) for h in sorted((x, -x), key=lambda h: -float(h @ now[:, 0]))]
    return out


def pull(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    assert obj is not None  # needs_target
    start = np.array(ctx.backend.object_pos(obj), dtype=np.float64)
    direction, distance = _goal(ctx, binding, start, (-1.0, 0.0))
    yield Gripper(arm, 1.0, ticks=GRIPPER_TICKS)
    tip = gripper_reach(ctx, arm, np.array([0.0, 0.0, 1.0]))
    chosen = None
    for pos, rot in _pull_grasps(ctx, arm, binding, obj, start, direction, tip):
        try:
            q_grasp = ctx.solve_ik(arm, pos, rot)
            chosen = ctx.solve_ik(arm, pos - DOWN * HOVER, rot, q_ref=q_grasp)
        except SkillFailure:
            continue
        break
    if chosen is None:
        raise SkillFailure("ik infeasible", f"arm {arm!r}: no reachable grasp on {binding.target}")
    yield from ctx.move_to(arm, chosen)
    yield straight_track(ctx, arm, DOWN * HOVER, touching=obj, speed=NEAR_SPEED)
    yield Gripper(arm, 0.0, ticks=GRIPPER_TICKS)
    yield from _slide(ctx, arm, obj, start, direction, distance, 0.0, np.inf, "pull")  # held: no drift to steer
    yield Gripper(arm, 1.0, ticks=GRIPPER_TICKS)
    yield straight_track(ctx, arm, -DOWN * HOVER, touching=obj, speed=NEAR_SPEED)
