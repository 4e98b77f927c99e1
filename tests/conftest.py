"""Shared test scenes."""

from __future__ import annotations

import numpy as np

from x2.sim.mujoco.backend import MujocoBackend
from x2.spec import load_env
from x2.synth.motion.collision import CollisionWorld
from x2.synth.motion.ik import ArmIK

APPROACH_X = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # tool +z along world +x


def cavity_reach_problem() -> tuple[MujocoBackend, CollisionWorld, np.ndarray, np.ndarray]:
    """The left arm at home and a goal 4 cm inside the open microwave: a plan must go around the door."""
    b = MujocoBackend(load_env("fruit_in_microwave"))
    b.reset(1)
    b.set_joint_values({"microwave/door_hinge": 1.9})
    world = CollisionWorld(b)
    cavity, _, _ = b.site_box("microwave/cavity")
    goal = ArmIK(world, "left").solve(cavity + np.array([-0.04, 0.0, -0.03]), APPROACH_X,
                                      rng=np.random.default_rng(1))
    return b, world, np.array(b.env.robot.arm("left").home), goal
