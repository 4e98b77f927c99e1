"""`retract`: both arms come home along planned paths from wherever the previous skill left them."""

from __future__ import annotations

import numpy as np

from x2.base.seeding import streams
from x2.envspec import load_env
from x2.envspec.env import SkillBinding
from x2.rollout import Rollout, RolloutOptions
from x2.sim.mujoco.backend import MujocoBackend
from x2.synth.context import SynthContext
from x2.synth.executor import SkillExecutor
from x2.synth.skills import SKILLS

AWAY = {"left": [0.3, -0.8, 1.2, 0.2, 1.1, 0.3], "right": [-0.3, -0.9, 1.5, -0.2, 1.2, -0.3]}


def test_retract_both_arms_home_without_touching_anything() -> None:
    env = load_env("pick_place")
    backend = MujocoBackend(env)
    rollout = Rollout(backend)
    offsets = {"left": 0, "right": 7}
    executor = SkillExecutor(env.robot.action)
    ctx = SynthContext(backend, rollout.monitor, executor, streams(3))
    binding = SkillBinding("retract", "both", None, None, {}, ("test", 1))

    def program():
        yield from SKILLS["retract"].run(ctx, binding, "both")

    executor.program = program
    contacts: list[tuple[str, str]] = []

    def start_away(t: int, b: MujocoBackend) -> None:
        if t == 0:  # the arms start where some other skill left them, targets included
            b.set_joint_values({j: q for a in env.robot.arms for j, q in zip(a.joints, AWAY[a.name], strict=True)})
            for name, q in AWAY.items():
                executor.targets[offsets[name]:offsets[name] + 6] = q
        robot_bodies = ("left_", "right_")
        contacts.extend((c.body1, c.body2) for c in b.contacts()
                        if c.body1.startswith(robot_bodies) or c.body2.startswith(robot_bodies))

    result = rollout.run(executor, seed=3, options=RolloutOptions(stop_on_success=False, max_ticks=900,
                                                                  hooks=[start_away]))
    assert executor.failure is None and result.end_reason == "teacher"
    for arm in env.robot.arms:
        assert backend.arm_joint_error(arm.name) < 0.02, arm.name
    assert contacts == []
    assert np.allclose(executor.targets[[6, 13]], 1.0)  # grippers opened
