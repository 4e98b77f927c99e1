"""Seeds: one master seed, numbered slots drawn from it, and named random streams from each seed.

Slot i of a master seed (an attempt of `x2 synth`, an episode of `x2 collect`) gets the i-th child of
`numpy.random.SeedSequence(master_seed)`, whatever the number of workers and whichever collector asks:
every collector of a dataset draws from the same sequence and continues after the last slot used there
(`Dataset.next_slot`), so no two episodes of a dataset share a seed.

A seed's streams are children of `SeedSequence(seed)` in a fixed order; the order is part of the on-disk
contract (same seed, same bytes), so append new names, never reorder.
"""

from __future__ import annotations

import numpy as np

STREAMS = ("scene", "grasp", "planner", "noise", "schedule", "language", "appearance", "embodiment")


# The randomisation axes a reset draws, each from its own streams: `axis_streams` redraws one axis alone (x2 tasks
# preview --axis), the others kept. Embodiment draws the cameras' jitter and the table's height relative to the
# robot; another robot or gripper is chosen (--robot, --gripper), not drawn.
AXES: dict[str, tuple[str, ...]] = {"appearance": ("appearance",), "task": ("scene", "language"),
                                    "embodiment": ("embodiment",)}


def axis_streams(seed: int, axes: dict[str, int] | None = None) -> dict[str, np.random.Generator]:
    """`streams(seed)`, except that each axis named in `axes` draws from the streams of its own seed there."""
    rngs = streams(seed)
    for axis, other in (axes or {}).items():
        theirs = streams(other)
        rngs.update({name: theirs[name] for name in AXES[axis]})
    return rngs


def streams(seed: int, names: tuple[str, ...] = STREAMS) -> dict[str, np.random.Generator]:
    """Independent generators `names[i]` = child i of `SeedSequence(seed)` (another user of seeds, such as
    replay augmentation, passes its own ordered names)."""
    children = np.random.SeedSequence(seed).spawn(len(names))
    return {name: np.random.default_rng(child) for name, child in zip(names, children, strict=True)}


def child_seed(master_seed: int, *key: int) -> int:
    """The seed at `key` under `master_seed`: `SeedSequence(master_seed, spawn_key=key)` as one integer."""
    child = np.random.SeedSequence(master_seed, spawn_key=tuple(int(k) for k in key))
    return int(child.generate_state(1, np.uint32)[0])


def slot_seed(master_seed: int, slot: int) -> int:
    """The seed of slot `slot`: `SeedSequence(master_seed).spawn(n)[slot]` for any n > slot, computed directly."""
    return child_seed(master_seed, slot)
