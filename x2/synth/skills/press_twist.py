"""`press` (push a button in with a fist) and `twist` (grasp a knob and turn it about its joint).

Both read the mechanism from the model: the slide joint under a button's site, the hinge under a
knob's grasp frame with its world axis and anchor, so any asset with such a joint works. Both close
the loop on the joint: the guarded move ends when the task's own predicate (button_pressed,
joint_above/below) holds on the live simulator, not when the planned motion ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.segments import Gripper, Guarded, Segment, SkillFailure, Wait
from x2.synth.skills.contact_motion import (
    CONTACT_SPEED,
    GRIPPER_TICKS,
    NEAR_SPEED,
    contact_force,
    gripper_reach,
    joint_of_site,
    screw_track,
    screw_waypoints,
    straight_track,
    tool_frame,
)
from x2.synth.skills.shapes import rot_about
from x2.tasks.predicates import button_pressed, joint_above, joint_below

UP = np.array([0.0, 0.0, 1.0])

PRESS_DEPTH = 0.006  # m: past the predicate's 4 mm default, inside button_panel's 8 mm travel
PRESS_APPROACH = 0.05  # m between the fingertips and the button where the guarded press starts
PRESS_OVERTRAVEL = 0.004  # m the press track runs past `depth`, so lag and cap compliance never stop it short
PRESS_HOLD_S = 0.3  # s the button is held down: a deliberate press as a person makes it (a guess, not measured)
PRESS_MAX_FORCE = 30.0  # N: stop pressing something that does not give (6x button_panel's full-travel force)

TWIST_ANGLE = np.pi / 2  # rad, a quarter turn
TWIST_APPROACH = 0.06  # m along the grasp frame's approach axis to the pre-grasp pose
TWIST_OVERTURN = 0.3  # rad the screw track runs past `angle`: pad slip and lag; the joint guard stops it


def target_site(ctx: SynthContext, binding: SkillBinding, kind: mujoco.mjtJoint) -> str:
    """The binding's part site, or for a whole-object target the object's site on a joint of `kind`
    (grasp frames first)."""
    if binding.target is not None and binding.target != binding.target_object:
        return binding.target
    obj = binding.target_object
    m = ctx.backend.model
    sites: list[str] = sorted((m.site(i).name for i in range(m.nsite) if m.site(i).name.startswith(f"{obj}/")),
                   key=lambda s: (not s.endswith("grasp"), s))
    for site in sites:
        try:
            joint_of_site(ctx, site, kind)
        except SkillFailure:
            continue
        return site
    raise SkillFailure("target unreachable", f"{obj} has no site on a {kind.name.removeprefix('mjJNT_').lower()} "
                                             f"joint; name a part ({obj}/PART)")


def _approach_pose(ctx: SynthContext, arm: str, approach: Floats) -> Floats | None:
    """Tool rotation for an approach direction, keeping the wrist's current heading; None = any heading
    about a vertical approach (the IK chooses, as for top grasps)."""
    if float(np.dot(approach, -UP)) > 1.0 - 1e-6:
        return None
    _, rot = ctx.world().tcp_pose(arm)
    return tool_frame(approach, rot[:, 0])


def press(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    site = target_site(ctx, binding, mujoco.mjtJoint.mjJNT_SLIDE)
    obj = site.split("/", 1)[0]
    joint = ctx.backend.model.joint(joint_of_site(ctx, site, mujoco.mjtJoint.mjJNT_SLIDE)).name
    depth = binding.number("depth", PRESS_DEPTH)
    approach = binding.number("approach", PRESS_APPROACH)
    yield Gripper(arm, 0.0, ticks=GRIPPER_TICKS)  # a fist: both fingertips side by side on the cap
    pos, rot, _ = ctx.backend.site_box(site)
    normal = rot[:, 2].copy()
    tip = gripper_reach(ctx, arm, np.array([0.0, 0.0, 1.0]))
    hover = pos + normal * (approach + tip)
    tool_rot = _approach_pose(ctx, arm, -normal)
    yield from ctx.move_pose(arm, hover, tool_rot, axis_down=tool_rot is None)

    def stop() -> bool:
        return button_pressed(ctx.backend, joint, depth) or contact_force(ctx, arm, obj) > PRESS_MAX_FORCE

    press_by = approach + depth + PRESS_OVERTRAVEL
    track = straight_track(ctx, arm, -normal * press_by, touching=obj, speed=CONTACT_SPEED)
    yield Guarded(track, until=stop, name=f"press {joint} by {depth * 1e3:.0f} mm")
    if not button_pressed(ctx.backend, joint, depth):
        raise SkillFailure("predicate false", f"{joint} moved only {-ctx.backend.joint_value(joint) * 1e3:.1f} mm "
                                              f"under {PRESS_MAX_FORCE:.0f} N")
    yield Wait(round(PRESS_HOLD_S * ctx.env.fps))
    yield straight_track(ctx, arm, normal * approach, touching=obj, speed=NEAR_SPEED)


@dataclass(frozen=True)
class _KnobGrasp:
    pos: Floats  # tcp at the grasp
    rot: Floats
    q: Floats  # the arm's joints there


def _twist_grasp(ctx: SynthContext, arm: str, site: str, obj: str, axis: Floats, anchor: Floats,
                 turn: float) -> _KnobGrasp:
    """Grasp pose and joint angles from which the tcp can turn by `turn` about the axis.

    A round knob can be taken at any angle about its axis, so the grasp frame is rotated until the
    middle of the turn has the wrist at its current heading (at home, the middle of the roll joint's
    range), leaving room both ways; if that grasp or its screw path fails, headings 45 and 90 deg off."""
    pos0, rot0, _ = ctx.backend.site_box(site)
    _, now = ctx.world().tcp_pose(arm)
    a, b = (v - (v @ axis) * axis for v in (rot0[:, 0], now[:, 0]))
    centre = float(np.arctan2(axis @ np.cross(a, b), a @ b)) - turn / 2
    for pre in centre + np.array([0.0, 1.0, -1.0, 2.0, -2.0]) * np.pi / 4:
        spin = rot_about(axis, pre)
        pos, rot = anchor + spin @ (pos0 - anchor), spin @ rot0
        try:
            q = ctx.solve_ik(arm, pos, rot)
            screw_waypoints(ctx, arm, q, axis, anchor, turn, obj)
        except SkillFailure:
            continue
        return _KnobGrasp(pos, rot, q)
    raise SkillFailure("ik infeasible", f"arm {arm!r}: no grasp of {site} leaves room to turn it by "
                                        f"{np.rad2deg(turn):.0f} deg")


def twist(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    site = target_site(ctx, binding, mujoco.mjtJoint.mjJNT_HINGE)
    obj = site.split("/", 1)[0]
    m, d = ctx.backend.model, ctx.backend.data
    jid = joint_of_site(ctx, site, mujoco.mjtJoint.mjJNT_HINGE)
    joint = m.joint(jid).name
    angle = binding.number("angle", TWIST_ANGLE)
    approach = binding.number("approach", TWIST_APPROACH)
    goal = ctx.backend.joint_value(joint) + angle
    lo, hi = m.jnt_range[jid]
    if m.jnt_limited[jid] and not lo <= goal <= hi:
        raise SkillFailure("target unreachable", f"{joint} to {goal:.2f} rad is outside its range {lo:.2f}..{hi:.2f}")
    axis, anchor = d.xaxis[jid].copy(), d.xanchor[jid].copy()
    turn = angle + np.sign(angle) * TWIST_OVERTURN
    yield Gripper(arm, 1.0, ticks=GRIPPER_TICKS)
    grasp = _twist_grasp(ctx, arm, site, obj, axis, anchor, turn)
    approach_dir = grasp.rot[:, 2]
    yield from ctx.move_to(arm, ctx.solve_ik(arm, grasp.pos - approach_dir * approach, grasp.rot, q_ref=grasp.q))
    yield straight_track(ctx, arm, approach_dir * approach, touching=obj, speed=NEAR_SPEED)
    yield Gripper(arm, 0.0, ticks=GRIPPER_TICKS)

    def turned() -> bool:
        return joint_above(ctx.backend, joint, goal) if angle >= 0 else joint_below(ctx.backend, joint, goal)

    track = screw_track(ctx, arm, axis, anchor, turn, touching=obj, speed=CONTACT_SPEED)
    yield Guarded(track, until=turned, name=f"turn {joint} to {goal:.2f} rad")
    yield Gripper(arm, 1.0, ticks=GRIPPER_TICKS)
    yield straight_track(ctx, arm, -approach_dir * approach, touching=obj, speed=NEAR_SPEED)
