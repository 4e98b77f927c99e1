"""Atomic skills, one registry. A task node's `skill:` names one of these."""

from __future__ import annotations

from x2.synth.skills.base import SkillDef, SkillFn
from x2.synth.skills.handover import hand_over
from x2.synth.skills.intercept import intercept
from x2.synth.skills.navigate import navigate
from x2.synth.skills.open_close import close, open  # noqa: A004 - the skill's name
from x2.synth.skills.pick_place import pick, place
from x2.synth.skills.press_twist import press, twist
from x2.synth.skills.pushing import pull, push
from x2.synth.skills.retract import retract
from x2.synth.skills.together import lift_together
from x2.synth.skills.tool_pull import hook_pull

SKILLS: dict[str, SkillDef] = {
    "open": SkillDef("open", open, {"target": float, "joint": str, "park": bool},
                     doc="open a hinged door or a drawer to a joint target: pull a grasp frame along the joint, "
                         "push a door's inner face for the rest; closed-loop on the joint"),
    "close": SkillDef("close", close, {"target": float, "joint": str, "park": bool},
                      doc="close a hinged door or a drawer to a joint target by pushing its outer face, "
                          "closed-loop on the joint"),
    "pick": SkillDef("pick", pick, {"approach": float, "lift": float},
                     doc="grasp an object (top grasps from its grasp sites and shape), lift it straight up"),
    "place": SkillDef("place", place, {"approach": float},
                      doc="put the held object on a surface (object or site; `approach`: the height it comes down "
                          "from) or into a box site through its open side, let go, back out"),
    "hand_over": SkillDef("hand_over", hand_over, {"height": float, "approach": float}, both_arms=True,
                          doc="the arm holding the target object carries it to between the shoulders (`height` above "
                              "the table), the other arm grasps it there (the target's part if named), then the "
                              "first lets go and backs off; bound to both arms"),
    "intercept": SkillDef("intercept", intercept, {"approach": float, "lift": float},
                          doc="grasp an object a conveyor carries, in motion: meet it where it will be, follow it "
                              "down, close while keeping pace, lift it off"),
    "lift_together": SkillDef("lift_together", lift_together, {"lift": float, "approach": float, "release": bool},
                              both_arms=True,
                              doc="both hands grasp the target by the grasp sites nearest each, then move it "
                                  "straight up (negative `lift`: down) as one, level; `release`: let go after and "
                                  "back off; bound to both arms"),
    "retract": SkillDef("retract", retract, {"open_gripper": bool}, needs_target=False, both_arms=True,
                        arm_by_arm=True,
                        doc="move the arm(s) home along a collision-free path"),
    "press": SkillDef("press", press, {"depth": float, "approach": float},
                      doc="press a button (part site on a slide joint) in with a closed fist, hold, retreat"),
    "push": SkillDef("push", push, {"direction": list, "to": str, "distance": float},
                     doc="push an object across the table with a closed fist from behind"),
    "pull": SkillDef("pull", pull, {"direction": list, "to": str, "distance": float},
                     doc="grasp an object (or its handle) low and drag it across the table, then let go"),
    "hook_pull": SkillDef("hook_pull", hook_pull, {"tool": str, "reach": float},
                          doc="with a held tool's blade (`tool`: its object; default the held one with a blade), "
                              "drag the target towards the arm until it is within `reach` m of the arm's first "
                              "joint, then set the tool down beside it and let go"),
    "navigate": SkillDef("navigate", navigate, {"reach_with": str, "distance": float}, both_arms=True,
                         needs_base=True,
                         doc="drive a mobile robot's base until the target is `distance` ahead of the `reach_with` "
                             "arm (collision-free, the arms holding still)"),
    "twist": SkillDef("twist", twist, {"angle": float, "approach": float},
                      doc="grasp a knob and turn it about its hinge by `angle` rad, closed-loop on the joint"),
}

__all__ = ["SKILLS", "SkillDef", "SkillFn"]
