"""MuJoCo backend: the green booth built with MjSpec, and the `Backend` implementation."""

from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.world import build_world

__all__ = ["MujocoBackend", "build_world"]
