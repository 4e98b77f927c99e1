"""Damped-least-squares IK for following a continuous tcp path from a nearby seed.

`ArmIK` (mink: a QP over the whole model per iteration, random restarts) finds a pose from anywhere,
at 1-100 ms a solve. A screw or straight move only needs small corrections from the previous
waypoint's solution: `x2.sim.mujoco.kinematics.ArmDLS` does that at ~25 us an iteration, so tracking
a 15-waypoint arc costs about a millisecond. This binds it to one arm of a `CollisionWorld`; on a mobile
robot every solve first puts the base where the world has it (the arm chain hangs from it).
"""

from __future__ import annotations

import weakref

from x2.base.arrays import Floats
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.kinematics import ArmDLS


class SeededIK(ArmDLS):
    """Tcp pose -> joint angles for one arm of a `CollisionWorld`'s model, from a seed configuration."""

    def __init__(self, world: CollisionWorld, arm: str, damping: float = 0.02, rot_weight: float = 0.25):
        super().__init__(world.model, world.arm_qadr[arm], world.joint_range[arm], world.tcp_site[arm],
                         damping=damping, rot_weight=rot_weight)
        self.arm = arm
        self._world = weakref.ref(world)  # (the world keys the shared solvers: a strong reference would keep it)
        self._base_qadr = world.base_qadr

    def _follow_base(self) -> None:
        if not self._base_qadr.size:
            return  # (a fixed robot: nothing to follow)
        world = self._world()
        if world is not None:
            self.data.qpos[self._base_qadr] = world.base_q()

    def solve(self, pos: Floats, rot: Floats, seed: Floats, **options: float | bool) -> Floats | None:
        self._follow_base()
        return super().solve(pos, rot, seed, **options)  # type: ignore[arg-type]

    def fk(self, q: Floats) -> tuple[Floats, Floats]:
        self._follow_base()
        return super().fk(q)


_SHARED: weakref.WeakKeyDictionary[CollisionWorld, dict[str, SeededIK]] = weakref.WeakKeyDictionary()


def seeded_ik(world: CollisionWorld, arm: str) -> SeededIK:
    """One solver per world and arm, shared by the skills of an attempt (a solve depends only on its
    target and seed, so sharing changes no result; it saves an MjData per skill)."""
    solvers = _SHARED.setdefault(world, {})
    if arm not in solvers:
        solvers[arm] = SeededIK(world, arm)
    return solvers[arm]

