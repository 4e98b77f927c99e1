"""An in-memory recorder: a worker records an attempt here, and the process that owns the dataset
writes it through the real `EpisodeWriter` (one writer per dataset, episodes in attempt order), whose
`extend` takes `arrays()` as they are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from x2.format import Tick

# The Tick fields the loop fills, in Tick's order; each becomes one array to send between processes.
_COLUMNS = ("timestamp", "action", "state", "qpos", "qvel", "ee_pose", "object_poses", "lateness_ms")


@dataclass
class MemoryRecorder:
    ticks: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in _COLUMNS})

    def append(self, tick: Tick) -> None:
        # The loop hands over fresh arrays every tick (copies from the simulator), so no copy here.
        for name in _COLUMNS:
            self.ticks[name].append(getattr(tick, name))

    def __len__(self) -> int:
        return len(self.ticks["timestamp"])

    def arrays(self) -> dict[str, np.ndarray]:
        """Compact arrays to send between processes."""
        return {name: np.asarray(values) for name, values in self.ticks.items()}

