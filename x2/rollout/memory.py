"""An in-memory recorder: a worker records an attempt here, and the process that owns the dataset
writes it through the real `EpisodeWriter` (one writer per dataset, episodes in attempt order), whose
`extend` takes `arrays()` as they are.

A loop that does not observe (`RolloutOptions.observe` False) records each tick's state alone (`append_state`:
no Tick made, no empty streams kept, on every tick of a synthesis); `arrays` then takes the robot's and the
objects' streams from those states in one batch (`Backend.observations`), the same numbers the loop would have
read tick by tick."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats
from x2.format import Tick

# The Tick fields the loop fills, in Tick's order; each becomes one array to send between processes.
_COLUMNS = ("timestamp", "action", "state", "qpos", "qvel", "ee_pose", "object_poses", "lateness_ms")


@dataclass
class MemoryRecorder:
    ticks: dict[str, list[object]] = field(default_factory=lambda: {c: [] for c in _COLUMNS})

    def append(self, tick: Tick) -> None:
        # The loop hands over fresh arrays every tick (copies from the simulator), so no copy here.
        if tick.qpos is None:  # a tick of its state alone: recorded as append_state records it
            assert tick.state is not None  # (the loop's ticks always carry the simulator's state)
            self.append_state(tick.timestamp, tick.action, tick.state, tick.lateness_ms)
            return
        for name in _COLUMNS:
            self.ticks[name].append(getattr(tick, name))

    def append_state(self, timestamp: float, action: Floats, state: Floats, lateness_ms: float | None) -> None:
        """A tick of a loop that does not observe: its state alone (a fresh array, kept as it is)."""
        ticks = self.ticks
        ticks["timestamp"].append(timestamp)
        ticks["action"].append(action)
        ticks["state"].append(state)
        ticks["lateness_ms"].append(lateness_ms)

    def __len__(self) -> int:
        return len(self.ticks["timestamp"])

    def arrays(self, observations: Callable[[Floats], Mapping[str, Floats]] | None = None
               ) -> dict[str, npt.NDArray[np.generic]]:
        """Compact arrays to send between processes, in the loop's column order. Streams the ticks left out (a loop
        that did not observe) come from `observations` of the recorded states, which must then be given."""
        out: dict[str, npt.NDArray[np.generic]] = {}
        derived: Mapping[str, Floats] = {}
        observed, states = len(self.ticks["qpos"]), len(self.ticks["state"])
        if observed not in (0, states):
            raise ValueError(f"{states - observed} of {states} ticks were recorded by append_state, the rest with "
                             "their robot and object streams: one recording takes one kind")
        if states and not observed:
            if observations is None:
                raise ValueError("these ticks carry states alone: arrays() needs the backend's observations")
            stacked = np.asarray(self.ticks["state"])  # (stacked once: 1.5 MB for a synthesised episode)
            derived = {"state": stacked, **observations(stacked)}
        for name in _COLUMNS:
            out[name] = derived[name] if name in derived else np.asarray(self.ticks[name])
        return out
