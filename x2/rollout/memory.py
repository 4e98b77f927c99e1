"""An in-memory recorder: a worker records an attempt here, and the process that owns the dataset
writes it through the real `EpisodeWriter` (one writer per dataset, episodes in attempt order)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from x2.rollout.loop import Recorder

_COLUMNS = ("timestamp", "action", "qpos", "qvel", "ee_pose", "object_poses", "state", "lateness_ms")


@dataclass
class MemoryRecorder:
    ticks: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in _COLUMNS})

    def append(self, **tick: Any) -> None:
        # The loop hands over fresh arrays every tick (copies from the simulator), so no copy here.
        for name in _COLUMNS:
            self.ticks[name].append(tick.get(name))

    def __len__(self) -> int:
        return len(self.ticks["timestamp"])

    def arrays(self) -> dict[str, np.ndarray]:
        """Compact arrays to send between processes."""
        return {name: np.asarray(values) for name, values in self.ticks.items()}


def replay_into(writer: Recorder, arrays: dict[str, np.ndarray]) -> None:
    """Append recorded ticks to an episode writer, tick by tick, exactly as the loop would have."""
    for t in range(len(arrays["timestamp"])):
        writer.append(timestamp=float(arrays["timestamp"][t]), action=arrays["action"][t], qpos=arrays["qpos"][t],
                      qvel=arrays["qvel"][t], ee_pose=arrays["ee_pose"][t], object_poses=arrays["object_poses"][t],
                      state=arrays["state"][t], lateness_ms=float(arrays["lateness_ms"][t]))
