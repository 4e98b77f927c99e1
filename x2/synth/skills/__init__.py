"""Atomic skills, one registry. A task node's `skill:` names one of these."""

from __future__ import annotations

from x2.synth.skills.base import SkillDef, SkillFn, SkillParam
from x2.synth.skills.handover import HEIGHT, hand_over
from x2.synth.skills.intercept import intercept
from x2.synth.skills.navigate import STANDOFF, navigate
from x2.synth.skills.open_close import close, open  # noqa: A004 - the skill's name
from x2.synth.skills.pick_place import APPROACH, LIFT, pick, place
from x2.synth.skills.press_twist import PRESS_APPROACH, PRESS_DEPTH, TWIST_ANGLE, TWIST_APPROACH, press, twist
from x2.synth.skills.pushing import DISTANCE, pull, push
from x2.synth.skills.retract import retract
from x2.synth.skills.together import LIFT as LIFT_TOGETHER
from x2.synth.skills.together import lift_together
from x2.synth.skills.tool_pull import REACH, hook_pull

# The parameters several skills share. A default is the constant the skill itself reads (binding.number(name,
# CONSTANT) in its module), so what `x2 tasks skills` prints is what runs.
_APPROACH = SkillParam(float, "m of the last straight move onto the grasp (pre-grasp distance)", APPROACH)
_LIFT = SkillParam(float, "m of the straight lift after the grasp", LIFT)
_JOINT = SkillParam(str, "the part's hinge or slide joint (default: the one moving the target's part)")
_PARK = SkillParam(bool, "home the arm and open the hand afterwards", False)
_SLIDE = {"direction": SkillParam(list, "[dx, dy] in the world (default: away from the robot for push, towards it "
                                        "for pull)"),
          "to": SkillParam(str, "an object the target should end up at (instead of direction)"),
          # (no one default: with `to` it is the distance to that object)
          "distance": SkillParam(float, f"m to move the object (default {DISTANCE:g}, or the distance to `to`)")}


SKILLS: dict[str, SkillDef] = {
    "open": SkillDef("open", open, {
        "goal": SkillParam(float, "the joint value to reach (default: the node's joint_above threshold plus a "
                                    "margin, else the joint's range end)"),
        "joint": _JOINT, "park": _PARK},
        doc="open a hinged door or a drawer to a joint target: pull a grasp frame along the joint, "
            "push a door's inner face for the rest; closed-loop on the joint"),
    "close": SkillDef("close", close, {
        "goal": SkillParam(float, "the joint value to reach (default: the node's joint_below threshold minus a "
                                    "margin, else the joint's range end)"),
        "joint": _JOINT, "park": _PARK},
        doc="close a hinged door or a drawer to a joint target by pushing its outer face, closed-loop on the joint"),
    "pick": SkillDef("pick", pick, {"approach": _APPROACH, "lift": _LIFT},
                     doc="grasp an object (top grasps from its grasp sites and shape), lift it straight up"),
    "place": SkillDef("place", place, {
        "approach": SkillParam(float, "m above the goal the held object comes down from", APPROACH)},
        doc="put the held object on a surface (object or site) or into a box site through its open side, let go, "
            "back out"),
    "hand_over": SkillDef("hand_over", hand_over, {
        "height": SkillParam(float, "m above the table where the object changes hands", HEIGHT),
        "approach": _APPROACH}, both_arms=True,
        doc="the arm holding the target object carries it to between the shoulders, the other arm grasps it there "
            "(the target's part if named), then the first lets go and backs off; bound to both arms"),
    "intercept": SkillDef("intercept", intercept, {"approach": _APPROACH, "lift": _LIFT},
                          doc="grasp an object a conveyor carries, in motion: meet it where it will be, follow it "
                              "down, close while keeping pace, lift it off"),
    "lift_together": SkillDef("lift_together", lift_together, {
        "lift": SkillParam(float, "m to move the object up as one (negative: down)", LIFT_TOGETHER),
        "approach": _APPROACH,
        "release": SkillParam(bool, "let go afterwards and back off", False)}, both_arms=True,
        doc="both hands grasp the target by the grasp sites nearest each, then move it straight up (or down) as "
            "one, level; bound to both arms"),
    "retract": SkillDef("retract", retract, {
        "open_gripper": SkillParam(bool, "open the hand once home", True)}, needs_target=False, both_arms=True,
        arm_by_arm=True, doc="move the arm(s) home along a collision-free path"),
    "press": SkillDef("press", press, {
        "depth": SkillParam(float, "m to push the button in", PRESS_DEPTH),
        "approach": SkillParam(float, "m between the fingertips and the button where the guarded press starts",
                               PRESS_APPROACH)},
        doc="press a button (part site on a slide joint) in with a closed fist, hold, retreat"),
    "push": SkillDef("push", push, dict(_SLIDE), doc="push an object across the table with a closed fist from behind"),
    "pull": SkillDef("pull", pull, dict(_SLIDE),
                     doc="grasp an object (or its handle) low and drag it across the table, then let go"),
    "hook_pull": SkillDef("hook_pull", hook_pull, {
        "tool": SkillParam(str, "the tool object (default: the held object that has a blade part)"),
        "reach": SkillParam(float, "m from the arm's first joint (horizontally) the target is dragged to", REACH)},
        doc="with a held tool's blade, drag the target towards the arm until it is within `reach`, then set the "
            "tool down beside it and let go"),
    "navigate": SkillDef("navigate", navigate, {
        "reach_with": SkillParam(str, "the arm that will work at the target (default: the arm nearest it)"),
        "distance": SkillParam(float, "m from that arm's first joint axis to the target, horizontally", STANDOFF)},
        both_arms=True, needs_base=True,
        doc="drive a mobile robot's base until the target is `distance` ahead of the `reach_with` arm "
            "(collision-free, the arms holding still)"),
    "twist": SkillDef("twist", twist, {
        "angle": SkillParam(float, "rad to turn the knob about its hinge", float(TWIST_ANGLE)),
        "approach": SkillParam(float, "m along the grasp frame's approach axis to the pre-grasp pose",
                               TWIST_APPROACH)},
        doc="grasp a knob and turn it about its hinge by `angle` rad, closed-loop on the joint"),
}

__all__ = ["SKILLS", "SkillDef", "SkillFn", "SkillParam"]
