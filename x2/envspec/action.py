"""The action vector's layout: where each arm's joint targets and gripper opening sit.

One definition for every reader and writer of actions (the backend, the synthesis executor, the teleop
mappers and safety filter, scripted teachers, device streams played back as a leader arm): per arm, in the
robot's arm order, its joint position targets (rad) and then its gripper opening in [0, 1] (1 = open).
For the dual-arm robots: ``[left 6 joints, left gripper, right 6 joints, right gripper]``. A mobile robot's base
comes last, after every arm: its planar position targets ``base_x``, ``base_y`` (m, along the world's axes, from
where the robot is mounted) and its heading ``base_yaw`` (rad).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from x2.base.errors import NotFoundError

DEFINITION = ("per arm: joint position targets (rad), then gripper opening in [0, 1], 1 = open; "
              "a mobile base last: base_x, base_y (m), base_yaw (rad)")
GRIPPER_SUFFIX = "_gripper"
BASE_PREFIX = "base_"  # a mobile base's joints (base_x, base_y, base_yaw): after every arm


@dataclass(frozen=True)
class ArmSlots:
    name: str
    joints: slice  # the arm's joint targets in the action vector
    gripper: int  # its gripper opening


@dataclass(frozen=True)
class ActionLayout:
    arms: tuple[ArmSlots, ...]
    names: tuple[str, ...]  # one per action value: the joint names, then "<arm>_gripper"; the base's last
    base: slice | None = None  # a mobile base's targets (x, y, yaw), after every arm

    @classmethod
    def for_arms(cls, arms: Sequence[tuple[str, Sequence[str]]], base: Sequence[str] = ()) -> ActionLayout:
        """From (arm name, joint names) in the robot's arm order, and a mobile base's joint names."""
        slots: list[ArmSlots] = []
        names: list[str] = []
        for arm, joints in arms:
            start = len(names)
            names += [*joints, f"{arm}{GRIPPER_SUFFIX}"]
            slots.append(ArmSlots(arm, slice(start, start + len(joints)), start + len(joints)))
        base_slots = slice(len(names), len(names) + len(base)) if base else None
        return cls(tuple(slots), (*names, *base), base_slots)

    @classmethod
    def from_names(cls, names: Sequence[str]) -> ActionLayout | None:
        """Recover the layout from stored action names (an episode's /action `names`), or None when
        the names do not follow it (each arm's joints closed by one "<arm>_gripper")."""
        arms: list[tuple[str, list[str]]] = []
        joints: list[str] = []
        for name in names:
            if name.endswith(GRIPPER_SUFFIX):
                if not joints:
                    return None
                arms.append((name.removesuffix(GRIPPER_SUFFIX), joints))
                joints = []
            else:
                joints.append(name)
        if joints and not all(j.startswith(BASE_PREFIX) for j in joints):
            return None  # joints after the last gripper are a base's, or the names are not a layout
        return cls.for_arms(arms, joints) if arms else None

    @property
    def dim(self) -> int:
        return len(self.names)

    @property
    def gripper_slots(self) -> npt.NDArray[np.intp]:
        return np.array([a.gripper for a in self.arms], dtype=np.intp)

    def arm(self, name: str) -> ArmSlots:
        for a in self.arms:
            if a.name == name:
                return a
        raise NotFoundError(f"action layout has no arm {name!r}; arms: {[a.name for a in self.arms]}")

    def compose(self, joints: Sequence[Sequence[float]], grippers: Sequence[float],
                base: Sequence[float] = ()) -> npt.NDArray[np.float64]:
        """The action with each arm's joint targets and gripper opening, in arm order, and the base's targets."""
        out = np.zeros(self.dim)
        for slots, q, g in zip(self.arms, joints, grippers, strict=True):
            out[slots.joints] = q
            out[slots.gripper] = g
        if self.base is not None:
            out[self.base] = base
        return out
