"""Short real episodes for the render, export and dataset-management tests.

Every episode is recorded by the real loop in the real simulator (scripted joint waypoints, cut after
`ticks` ticks), so its file carries a real world (model_xml, world record) that readers rebuild: only
its length is small. Same arguments, same bytes (outside /timing).
"""

from __future__ import annotations

from pathlib import Path

from x2.base.seeding import slot_seed
from x2.datasets import Dataset, EpisodeRecord
from x2.envspec import load_env
from x2.rollout.episodes import open_dataset, record_episode
from x2.rollout.loop import Rollout, RolloutOptions
from x2.rollout.teacher import reach_and_return
from x2.sim import make_backend


def record_short_dataset(path: Path, episodes: int = 2, ticks: int = 24, task: str = "fruit_in_microwave",
                         robot: str | None = None, seed: int = 0, variant: str = "default") -> list[EpisodeRecord]:
    """Append `episodes` scripted episodes of `ticks` frames each to the dataset at `path`."""
    env = load_env(task, robot=robot, variant=variant)
    backend = make_backend(env)
    ds: Dataset = open_dataset(Path(path), env, backend)
    records: list[EpisodeRecord] = []
    try:
        rollout = Rollout(backend, None)
        start = ds.next_slot(seed)
        for slot in range(start, start + episodes):
            teacher = reach_and_return(backend.home_action(), backend.action_layout, env.fps)
            _, record = record_episode(ds, rollout, teacher, slot_seed(seed, slot), source="scripted",
                                       options=RolloutOptions(max_ticks=ticks), master_seed=seed, slot=slot)
            ds.use_slots(seed, slot)
            assert record is not None
            records.append(record)
    finally:
        ds.close()
        backend.close()
    return records
