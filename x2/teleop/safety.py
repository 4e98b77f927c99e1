"""The last word before an action reaches the simulator, whatever the device or mapper did:
finite values only, joints inside their limits, grippers in [0, 1], and no joint moving more than
`max_speed` in one tick."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from x2.base.arrays import Floats
from x2.sim.backend import Backend


@dataclass(frozen=True)
class SafetyConfig:
    max_speed: float = 3.0  # rad/s per arm joint (as JointMirror), gripper: full stroke in 0.2 s
    max_base_speed: float = 0.5  # m/s (rad/s) per mobile-base joint: twice the teleop mappers' drive


class SafetyFilter:
    def __init__(self, backend: Backend, fps: int, config: SafetyConfig | None = None):
        c = config or SafetyConfig()
        layout = backend.action_layout
        self.lo, self.hi = np.zeros(layout.dim), np.ones(layout.dim)  # grippers: [0, 1]
        self.step = np.full(layout.dim, 5.0 / fps)  # a gripper's full stroke in 0.2 s
        for arm, slots in zip(backend.env.robot.arms, layout.arms, strict=True):
            limits = backend.joint_range(arm.joints)
            self.lo[slots.joints], self.hi[slots.joints] = limits[:, 0], limits[:, 1]
            self.step[slots.joints] = c.max_speed / fps
        base = backend.env.robot.base
        if base is not None and layout.base is not None:  # a mobile base: within its range, at a drive's speed
            self.lo[layout.base], self.hi[layout.base] = base.low, base.high
            self.step[layout.base] = c.max_base_speed / fps
        self.last: Floats | None = None
        self.clamped = 0  # ticks where the filter changed the mapper's action
        self.rejected = 0  # ticks with non-finite actions (held the last one)

    def reset(self, home_action: Floats) -> None:
        self.last = np.array(home_action, dtype=np.float64)
        self.clamped = self.rejected = 0

    def __call__(self, action: Floats) -> Floats:
        assert self.last is not None, "reset() the safety filter first"
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.last.shape or not np.all(np.isfinite(action)):
            self.rejected += 1
            return self.last.copy()
        safe = np.clip(action, self.lo, self.hi)
        safe = self.last + np.clip(safe - self.last, -self.step, self.step)
        if not np.array_equal(safe, action):
            self.clamped += 1
        self.last = safe
        return safe.copy()
