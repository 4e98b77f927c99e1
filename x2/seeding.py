"""Named random streams from one seed, so adding a draw in one place never shifts another.

Streams are children of `numpy.random.SeedSequence(seed)` in a fixed order; the order is part of
the on-disk contract (same seed, same bytes), so append new names, never reorder.
"""

from __future__ import annotations

import numpy as np

STREAMS = ("scene", "grasp", "planner", "noise")


def streams(seed: int) -> dict[str, np.random.Generator]:
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children, strict=True)}


def child_seeds(master_seed: int, count: int) -> list[int]:
    """Per-attempt/episode seeds: attempt i gets the same seed whatever the number of workers."""
    return [int(s.generate_state(1, np.uint32)[0]) for s in np.random.SeedSequence(master_seed).spawn(count)]


def nth_child_seed(master_seed: int, index: int) -> int:
    """`child_seeds(master_seed, n)[index]` for any n > index, without drawing the ones before it."""
    child = np.random.SeedSequence(master_seed, spawn_key=(index,))
    return int(child.generate_state(1, np.uint32)[0])
