"""Atomic skills, one registry. A task node's `skill:` names one of these."""

from __future__ import annotations

from x2.synth.skills.base import SkillDef, SkillFn
from x2.synth.skills.retract import retract

SKILLS: dict[str, SkillDef] = {
    "retract": SkillDef("retract", retract, {"open_gripper": bool}, needs_target=False, both_arms=True,
                        doc="move the arm(s) home along a collision-free path"),
}

__all__ = ["SKILLS", "SkillDef", "SkillFn"]
