"""A floor under the spread of an export's normalisation statistics (meta/stats.json).

LeRobot's policies normalise every input and target with the dataset's statistics: (x - mean) / (std + 1e-8)
(or by min/max, or by quantiles). A channel that the simulator holds constant up to its own jitter, such as
an idle arm's joints or a resting object's height and tilt, has a std of 1e-7 to 1e-13: normalised, its
jitter becomes unit-variance noise that differs from episode to episode. A network fed that learns to tell
the training episodes apart by it instead of by what varies (where the block is), and in evaluation the same
channel arrives 5-10 standard deviations off. Measured on pick_place (bench/RESULTS.md, "x2 eval").

So every float feature a policy reads or predicts (state, environment state, action) gets a floor under its
spread: a channel whose std is below FLOOR gets std FLOOR, and its min/max and quantile pairs FLOOR either side
of their middle. A channel that varies by less than a millimetre or milliradian over the whole dataset then
normalises to about 0, in training and in evaluation alike; every other channel keeps LeRobot's own numbers
(even where LeRobot's quantiles, averaged over episodes, are narrow for a channel that is constant within each
episode but not across them: a placed plate's position).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

FLOOR = 1e-3  # m, rad, unit-quaternion components, gripper fractions: far above the physics' jitter (< 1e-6)
PAIRS = (("min", "max"), ("q01", "q99"), ("q10", "q90"))


def floor_spread(stats: dict[str, dict[str, npt.NDArray[np.floating]]], features: Iterable[str],
                 floor: float = FLOOR) -> dict[str, list[int]]:
    """Raise, in place, the spread of each of `features` in `stats` (LeRobot's stats: feature -> {mean, std, min,
    max, q01, ...} arrays) to `floor`; the channels raised, per feature (only features with any)."""
    raised: dict[str, list[int]] = {}
    for feature in features:
        entry = stats.get(feature)
        if entry is None or "std" not in entry:
            continue
        std = np.asarray(entry["std"], dtype=np.float64)
        low = std < floor
        for lo_key, hi_key in PAIRS:
            if lo_key in entry and hi_key in entry:
                lo = np.asarray(entry[lo_key], dtype=np.float64)
                hi = np.asarray(entry[hi_key], dtype=np.float64)
                middle = (hi + lo) / 2
                entry[lo_key] = np.where(low, np.minimum(lo, middle - floor), lo)
                entry[hi_key] = np.where(low, np.maximum(hi, middle + floor), hi)
        entry["std"] = np.where(low, floor, std)
        if low.any():
            raised[feature] = [int(i) for i in np.flatnonzero(low)]
    return raised
