"""`retract`: bring one arm (or both, one after the other) back to its home pose, collision-free."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.segments import Gripper, Segment


def retract(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    arms = [a.name for a in ctx.env.robot.arms] if arm == "both" else [arm]
    for name in arms:
        home = np.array(ctx.env.robot.arm(name).home)
        if np.max(np.abs(ctx.executor.arm_target(name) - home)) > 1e-6:
            yield from ctx.move_to(name, home)
        if bool(binding.params.get("open_gripper", True)):
            yield Gripper(name, 1.0, ticks=3)
