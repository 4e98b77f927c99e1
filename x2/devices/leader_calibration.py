"""The leader-arm calibration procedure: the leader held in the robot's home pose, then its grippers opened,
each step confirmed by the operator through `confirm` (the caller's prompt; nothing here reads input)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import X2Error
from x2.devices.calibration import GRIPPER_SLOTS, JOINTS, Calibration
from x2.devices.master_arm import MasterArmDevice

MIN_GRIPPER_TRAVEL_TICKS = 20


def parse_flips(text: str) -> list[int]:
    """`--flip 2,8`: the joints (1-12, left arm first) whose leader servo turns the other way, as signs."""
    try:
        flipped = {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise X2Error(f"--flip: found {text!r}; allowed: joint numbers 1-{JOINTS} separated by commas") from None
    if not flipped <= set(range(1, JOINTS + 1)):
        raise X2Error(f"--flip: found {sorted(flipped)}; allowed: joint numbers 1-{JOINTS}")
    return [-1 if k + 1 in flipped else 1 for k in range(JOINTS)]


def mean_ticks(dev: MasterArmDevice, seconds: float = 0.5) -> Floats:
    """Average raw readings over a short window: a hand-held leader trembles by a few ticks."""
    dev.drain()
    time.sleep(seconds)
    samples = dev.drain()
    if not samples:
        raise X2Error(f"{dev.config.port}: ticks: found no readings in {seconds} s; allowed: a leader arm that "
                      "answers (x2 devices check)")
    mean: Floats = np.mean([s.values["ticks"] for s in samples], axis=0)  # (untyped in numpy's stubs)
    return mean


def calibrate_leader(dev: MasterArmDevice, home: Floats, signs: Sequence[int], home_pose: str,
                     confirm: Callable[[str], None]) -> Calibration:
    """The calibration of a connected leader: its ticks at the robot's `home` (12 joint angles, rad;
    `home_pose` says them to the operator), then with the grippers open."""
    confirm(f"1/2 hold the leader in {home_pose}, grippers closed; then Enter")
    at_home = mean_ticks(dev)
    confirm("2/2 keep the arms there and open both grippers fully; then Enter")
    opened = mean_ticks(dev)
    grip = list(GRIPPER_SLOTS)
    if np.any(np.abs(opened[grip] - at_home[grip]) < MIN_GRIPPER_TRAVEL_TICKS):
        raise X2Error(f"{dev.config.port}: gripper: found {opened[grip] - at_home[grip]} ticks between closed "
                      f"and open; allowed: a clear opening (>= {MIN_GRIPPER_TRAVEL_TICKS} ticks); open the grippers "
                      "fully and retry")
    return Calibration.from_pose(dev.device_id, dev.calibration.ids if dev.calibration else dev.config.ids,
                                 at_home, home, signs, tuple(at_home[grip]), tuple(opened[grip]))
