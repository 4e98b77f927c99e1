"""Twin calibration files and short recordings of a known twin, for the calibration tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from x2.envspec import load_env
from x2.rollout.episodes import open_dataset, record_episode
from x2.rollout.loop import Rollout
from x2.rollout.teacher import Observation
from x2.sim import make_backend
from x2.sim.backend import ResetInfo


def write_calibration(cwd: Path, name: str, data: dict[str, object]) -> Path:
    """specs/calibrations/<name>.yaml under `cwd`."""
    path = cwd / "specs" / "calibrations" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"name": name, **data}, sort_keys=False))
    return path


class SwingTeacher:
    """Each arm joint swung by a sum of two sines (fast and slow) about home, after a third of a second at home."""

    def __init__(self, ticks: int, fps: int, seed: int) -> None:
        self.ticks, self.fps, self.seed = ticks, fps, seed
        self._track: np.ndarray | None = None

    def reset(self, info: ResetInfo, home_action: np.ndarray) -> None:
        rng = np.random.default_rng(self.seed)
        home = np.asarray(home_action, dtype=np.float64)
        t = np.maximum(np.arange(self.ticks) - self.fps // 3, 0) / self.fps
        f1, f2 = rng.uniform(0.4, 0.8, len(home)), rng.uniform(1.5, 3.0, len(home))
        wave = 0.15 * np.sin(2 * np.pi * f1 * t[:, None]) + 0.05 * np.sin(2 * np.pi * f2 * t[:, None])
        self._track = home + wave
        self._track[:, [i for i in range(len(home)) if i % 7 == 6]] = 1.0  # grippers open (aloha's slots 6, 13)

    def act(self, obs: Observation) -> np.ndarray | None:
        assert self._track is not None
        return self._track[obs.tick] if obs.tick < len(self._track) else None


def record_swings(path: Path, robot: str, episodes: int, ticks: int) -> None:
    """`episodes` swing recordings of `ticks` ticks on `robot` (pick_place's scene) into the dataset at `path`."""
    env = load_env("pick_place", robot=robot)
    backend = make_backend(env)
    ds = open_dataset(path, env, backend)
    try:
        rollout = Rollout(backend)
        for k in range(episodes):
            record_episode(ds, rollout, SwingTeacher(ticks, env.fps, k), seed=k, source="scripted")
    finally:
        ds.close()
        backend.close()
