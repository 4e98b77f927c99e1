"""Replay, and the physics check, of a recorded episode in the world rebuilt from its file (`open_world`).

- Replay (`replay_actions`, `x2 replay --check`): reset to the stored first state, step the stored
  actions (action t between frame t and t + 1) and compare every state reached with the stored one. On the
  machine that recorded it an episode reproduces exactly (deviation 0): the file holds the model as
  stepped, the full integration state and the float32 actions exactly as applied.
- The physics check (`deepest_penetration`; over a dataset's episodes `penetrations`, `x2 datasets validate
  --physics`): set every stored state and measure the contacts the physics saw, to find episodes whose bodies
  went through each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from x2 import format as fmt
from x2.base.arrays import Floats, Ints
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.recorded.world import SIM_BOUND, open_world
from x2.rollout.loop import PENETRATION_LIMIT_M, Penetration

__all__ = ["PENETRATION_LIMIT_M", "ReplayReport", "deepest_penetration", "penetrations", "replay_actions"]


@dataclass(frozen=True)
class ReplayReport:
    episode: int
    deviation: Floats  # (T,) largest |state - stored state| over the state vector, per frame (0 at 0)
    worst_component: Ints  # (T,) index into the state vector of that largest deviation

    @property
    def max_deviation(self) -> float:
        return float(self.deviation.max()) if len(self.deviation) else 0.0

    @property
    def first_deviation(self) -> int | None:
        """The first frame whose replayed state differs from the stored one at all."""
        bad = np.flatnonzero(self.deviation > 0)
        return int(bad[0]) if len(bad) else None


def replay_actions(ep: Episode) -> ReplayReport:
    with open_world(ep) as world:
        backend = world.backend
        states = ep.numeric(fmt.STATES, 2, 1, bound=SIM_BOUND)
        frames = len(states)
        actions = ep.numeric(fmt.ACTION, 2, frames - 1, bound=SIM_BOUND)
        deviation, worst = np.zeros(frames), np.zeros(frames, dtype=np.intp)
        backend.set_state(states[0])
        for t in range(frames - 1):
            backend.step(np.asarray(actions[t], dtype=np.float64))
            diff = np.abs(backend.get_state() - states[t + 1])
            worst[t + 1] = int(np.argmax(diff))
            deviation[t + 1] = float(diff[worst[t + 1]])
    return ReplayReport(ep.index, deviation, worst)


def deepest_penetration(ep: Episode) -> Penetration:
    """The deepest contact over every stored frame of the episode, recomputed from its states."""
    deepest = Penetration(0.0, 0, None)
    with open_world(ep) as world:
        backend = world.backend
        states = ep.numeric(fmt.STATES, 2, 1, bound=SIM_BOUND)
        for t in range(len(states)):
            backend.set_state(states[t])
            deepest = deepest.then(backend, t)
    return deepest


def penetrations(ds: Dataset, records: Sequence[EpisodeRecord],
                 progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, Penetration]]:
    """(index, deepest penetration) of each of `records`, in order, each episode read and replayed as it goes."""
    for done, record in enumerate(records):
        if progress is not None:
            progress(done, len(records))
        with ds.load(record.index) as ep:
            pen = deepest_penetration(ep)
        yield record.index, pen
