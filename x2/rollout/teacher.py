"""Teachers produce the action each tick. Teleop, synthesis and scripted runs differ only here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from x2.base.arrays import Floats
from x2.envspec.action import ActionLayout
from x2.sim.backend import ResetInfo, RobotState


class Observation(NamedTuple):
    """What a teacher sees at one tick (immutable; a named tuple, made every tick: a third of a frozen dataclass's
    cost)."""

    tick: int
    time: float
    # None when the loop reads neither (RolloutOptions.observe False): for a teacher that acts on the simulator
    # through its own context, as synthesis's executor does
    robot: RobotState | None
    object_poses: Floats | None
    instruction: str
    lateness_ms: float = 0.0  # how late this tick started against the clock's slot (0 when unpaced)


class Teacher(Protocol):
    """`act` returns the action for this tick, or None when the teacher ends the episode."""

    def reset(self, info: ResetInfo, home_action: Floats) -> None: ...
    def act(self, obs: Observation) -> Floats | None: ...


@dataclass(frozen=True)
class Waypoint:
    action: tuple[float, ...]  # full action vector: per arm its joints then its gripper in [0, 1]
    duration_s: float  # time to move here from the previous waypoint (linear in joint space)


class JointWaypointTeacher:
    """Drives the robot through joint-space waypoints at the control rate, then holds and ends."""

    def __init__(self, waypoints: Sequence[Waypoint], fps: int, hold_s: float = 0.5):
        if not waypoints:
            raise ValueError("a waypoint teacher needs at least one waypoint")
        self.waypoints, self.fps, self.hold_s = list(waypoints), fps, hold_s
        self._track: Floats | None = None

    def reset(self, info: ResetInfo, home_action: Floats) -> None:
        points = [np.asarray(home_action, dtype=np.float64)]
        segments = []
        for wp in self.waypoints:
            start, end = points[-1], np.asarray(wp.action, dtype=np.float64)
            n = max(1, round(wp.duration_s * self.fps))
            segments.append(start + (end - start) * (np.arange(1, n + 1)[:, None] / n))
            points.append(end)
        hold = np.repeat(points[-1][None], max(1, round(self.hold_s * self.fps)), axis=0)
        self._track = np.concatenate([*segments, hold])

    def act(self, obs: Observation) -> Floats | None:
        if self._track is None:
            raise RuntimeError("reset() the teacher before act()")
        return self._track[obs.tick] if obs.tick < len(self._track) else None


def reach_and_return(home_action: Floats, layout: ActionLayout, fps: int) -> JointWaypointTeacher:
    """A short scripted motion for demos and smoke runs: each arm reaches out, closes and opens its
    gripper, and comes home. It exercises the loop; it is not meant to solve a task."""
    home = np.asarray(home_action, dtype=np.float64)
    reach = home.copy()
    close = home.copy()
    for arm in layout.arms:
        shoulder, elbow = arm.joints.start + 1, arm.joints.start + 2
        reach[shoulder] += 0.35  # shoulder pitch forward
        reach[elbow] -= 0.35  # elbow opens
        close[shoulder], close[elbow] = reach[shoulder], reach[elbow]
        close[arm.gripper] = 0.0
    plan = [Waypoint(tuple(reach), 1.5), Waypoint(tuple(close), 0.7), Waypoint(tuple(reach), 0.7),
            Waypoint(tuple(home), 1.5)]
    return JointWaypointTeacher(plan, fps)
