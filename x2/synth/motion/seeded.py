"""Damped-least-squares IK for following a continuous tcp path from a nearby seed.

`ArmIK` (mink: a QP over the whole model per iteration, random restarts) finds a pose from anywhere,
at 1-100 ms a solve. A screw or straight move only needs small corrections from the previous
waypoint's solution: `x2.sim.mujoco.kinematics.ArmDLS` does that at ~25 us an iteration, so tracking
a 15-waypoint arc costs about a millisecond. This binds it to one arm of a `CollisionWorld`.
"""

from __future__ import annotations

import weakref

from x2.sim.mujoco.kinematics import ArmDLS
from x2.synth.motion.collision import CollisionWorld


class SeededIK(ArmDLS):
    """Tcp pose -> joint angles for one arm of a `CollisionWorld`'s model, from a seed configuration."""

    def __init__(self, world: CollisionWorld, arm: str, damping: float = 0.02, rot_weight: float = 0.25):
        super().__init__(world.model, world.arm_qadr[arm], world.joint_range[arm], world.tcp_site[arm],
                         damping=damping, rot_weight=rot_weight)
        self.arm = arm


_SHARED: weakref.WeakKeyDictionary[CollisionWorld, dict[str, SeededIK]] = weakref.WeakKeyDictionary()


def seeded_ik(world: CollisionWorld, arm: str) -> SeededIK:
    """One solver per world and arm, shared by the skills of an attempt (a solve depends only on its
    target and seed, so sharing changes no result; it saves an MjData per skill)."""
    solvers = _SHARED.setdefault(world, {})
    if arm not in solvers:
        solvers[arm] = SeededIK(world, arm)
    return solvers[arm]
