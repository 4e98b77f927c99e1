"""The last word before an action reaches the simulator, whatever the device or mapper did:
finite values only, joints inside their limits, grippers in [0, 1], and no joint moving more than
`max_speed` in one tick."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from x2.sim.mujoco.backend import MujocoBackend


@dataclass(frozen=True)
class SafetyConfig:
    max_speed: float = 3.0  # rad/s per arm joint (as JointMirror), gripper: full stroke in 0.2 s


class SafetyFilter:
    def __init__(self, backend: MujocoBackend, fps: int, config: SafetyConfig | None = None):
        c = config or SafetyConfig()
        m = backend.model
        lo, hi, step, grip = [], [], [], []
        for arm in backend.env.robot.arms:
            for j in arm.joints:
                jid = m.joint(j).id
                limited = bool(m.jnt_limited[jid])
                lo.append(m.jnt_range[jid, 0] if limited else -np.inf)
                hi.append(m.jnt_range[jid, 1] if limited else np.inf)
                step.append(c.max_speed / fps)
            lo.append(0.0)
            hi.append(1.0)
            step.append(5.0 / fps)
            grip.append(len(lo) - 1)
        self.lo, self.hi, self.step = np.array(lo), np.array(hi), np.array(step)
        self.last: np.ndarray | None = None
        self.clamped = 0  # ticks where the filter changed the mapper's action
        self.rejected = 0  # ticks with non-finite actions (held the last one)

    def reset(self, home_action: np.ndarray) -> None:
        self.last = np.array(home_action, dtype=np.float64)
        self.clamped = self.rejected = 0

    def __call__(self, action: np.ndarray) -> np.ndarray:
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
