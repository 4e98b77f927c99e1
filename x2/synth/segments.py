"""What skills yield: short, timed pieces of motion the executor plays one control tick at a time.

A skill is a generator of segments. Between segments it may look at the live world (through its
`SynthContext`) and plan the next one, so grasps and articulated motions close the loop on what
actually happened, not on what was planned at the start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from x2.base.arrays import Floats
from x2.base.errors import X2Error


class SkillFailure(X2Error):
    """An attempt cannot go on; `reason` is one short category for the rejection histogram."""

    REASONS = ("ik infeasible", "no plan", "trajectory collision", "grasp lost", "guard timeout",
               "predicate false", "simulator unstable", "no grasp", "target unreachable", "deadlock")

    def __init__(self, reason: str, detail: str = ""):
        self.reason, self.detail = reason, detail
        super().__init__(f"{reason}: {detail}" if detail else reason)

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.reason, self.detail)


@dataclass(frozen=True)
class ArmTrack:
    """Joint targets for one arm, one row per control tick (the first row is the next tick's target)."""

    arm: str
    q: Floats  # (T, dof)
    kind: str = "free-space"  # free-space | cartesian | screw

    def __len__(self) -> int:
        return len(self.q)


@dataclass(frozen=True)
class ArmsTrack:
    """Joint targets for several arms moving as one (an object held in both hands), the same number of ticks
    each. Only a lane that owns every one of these arms may play it: no other lane's motion needs checking."""

    q: dict[str, Floats]  # arm -> (T, dof)
    kind: str = "cartesian"

    def __post_init__(self) -> None:
        if len({len(v) for v in self.q.values()}) != 1:
            raise ValueError("ArmsTrack: every arm needs the same number of ticks")

    def __len__(self) -> int:
        return len(next(iter(self.q.values())))


@dataclass(frozen=True)
class BaseTrack:
    """Targets for a mobile robot's base (x, y, yaw), one row per control tick; the arms hold their targets."""

    q: Floats  # (T, 3)

    def __len__(self) -> int:
        return len(self.q)


@dataclass(frozen=True)
class Gripper:
    """Command an arm's gripper (0 closed .. 1 open) and let the fingers move for `ticks`."""

    arm: str
    value: float
    ticks: int = 9


@dataclass(frozen=True)
class Guarded:
    """Play `track` until `until()` holds (checked every tick on the live world). If it never holds
    and `required`, the attempt fails with "guard timeout"."""

    track: ArmTrack
    until: Callable[[], bool]
    required: bool = True
    name: str = "guard"


@dataclass(frozen=True)
class Wait:
    """Hold every target for up to `ticks`, ending early when `until()` holds (if given)."""

    ticks: int
    until: Callable[[], bool] | None = None
    required: bool = False
    name: str = "wait"


Segment = ArmTrack | ArmsTrack | BaseTrack | Gripper | Guarded | Wait
