"""`x2 datasets partition`: assign each episode to the train, val or test part, stratified by task and source
(written to `partition.json` by partition.py).

Each stratum (one task recorded by one source) is shuffled on its own, from a generator seeded by the
partition's seed and the stratum's name, and keeps about the asked fractions: at least one val episode once it
has two episodes, at least one test episode (when asked for) once it has three, and always one train
episode. Same dataset and seed, same `partition.json`, byte for byte; a stratum's assignment does not
change when another stratum grows. Every episode of one recording (an augmented episode and its parent)
is put in one part.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord
from x2.datasets.partition import write_partition
from x2.datasets.removal import Progress
from x2.datasets.store import Dataset
from x2.datasets.untrusted import json_loads


@dataclass(frozen=True)
class Stratum:
    task: str
    source: str
    train: tuple[int, ...]
    val: tuple[int, ...]
    test: tuple[int, ...]

    @property
    def episodes(self) -> int:
        return len(self.train) + len(self.val) + len(self.test)


def part_counts(n: int, val: float, test: float) -> tuple[int, int]:
    """(val, test) episodes of a stratum of `n`: nearest to the fractions within the minimums above."""
    n_val = max(1, int(n * val + 0.5)) if val > 0 and n >= 2 else 0
    n_test = max(1, int(n * test + 0.5)) if test > 0 and n >= 3 else 0
    room = n - 1  # train keeps one; then val keeps its one before test takes more
    n_val = min(n_val, room - (1 if n_test else 0))
    n_test = min(n_test, room - n_val)
    return n_val, n_test


def plan_partition(ds: Dataset, val: float, test: float = 0.0, seed: int = 0,
                progress: Progress | None = None) -> list[Stratum]:
    for name, value in (("--val", val), ("--test", test)):
        if not 0.0 <= value < 1.0:
            raise DatasetError(f"{name}: found {value}; allowed: a fraction in [0, 1)")
    if val + test >= 1.0:
        raise DatasetError(f"--val/--test: found {val} + {test}; allowed: a sum below 1 (train keeps the rest)")
    if seed < 0:
        raise DatasetError(f"--seed: found {seed}; allowed: an integer >= 0")
    records = sorted(ds.episodes(), key=lambda r: r.index)
    facts = _episode_facts(ds, records, progress)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for record in records:
        groups[(facts[record.index].task, record.source)].append(record.index)
    chosen: dict[int, str] = {}
    for (task, source), members in sorted(groups.items()):
        key = zlib.crc32(f"{task}\0{source}".encode())
        order = np.random.default_rng(np.random.SeedSequence([seed, key])).permutation(members).tolist()
        n_val, n_test = part_counts(len(order), val, test)
        for rank, index in enumerate(order):
            chosen[index] = "val" if rank < n_val else "test" if rank < n_val + n_test else "train"
    _keep_recordings_together(facts, chosen)
    strata: list[Stratum] = []
    for (task, source), members in sorted(groups.items()):
        def pick(name: str, members: list[int] = members) -> tuple[int, ...]:
            return tuple(sorted(i for i in members if chosen[i] == name))
        strata.append(Stratum(task, source, train=pick("train"), val=pick("val"), test=pick("test")))
    return strata


def _origin(attrs: Mapping[str, Any], name: str, inner: str | None = None) -> tuple[str, int] | None:
    """(dataset, episode) named by the JSON attr `name` (or its field `inner`)."""
    try:
        value = json_loads(attrs[name]) if name in attrs else None
        if value and inner is not None:
            value = value[inner]
        return (str(value["dataset"]), int(value["episode"])) if value else None
    except (ValueError, TypeError, KeyError):
        return None


@dataclass(frozen=True)
class _Facts:
    task: str
    recording: tuple[str, int]  # (dataset, episode) of the recorded motion this episode replays
    original: bool  # the recording itself (or a copy of it), not an augmented variant


def _episode_facts(ds: Dataset, records: Sequence[EpisodeRecord], progress: Progress | None) -> dict[int, _Facts]:
    """Each episode's task and recording, from its own file (one pass: a merged dataset holds several)."""
    out: dict[int, _Facts] = {}
    for done, record in enumerate(records, 1):
        with Episode(ds.episode_path(record.index)) as ep:
            attrs, task, source = ep.attrs, ep.task, ep.source
        augmented = _origin(attrs, fmt.AUGMENTATION_ATTR, "parent") if source == "augment" else None
        recording = augmented or _origin(attrs, fmt.MERGED_FROM_ATTR) or _origin(attrs, fmt.FILTERED_FROM_ATTR) \
            or (ds.name, record.index)
        out[record.index] = _Facts(task or ds.manifest.task, recording, augmented is None)
        if progress is not None:
            progress(done, len(records))
    return out


def _keep_recordings_together(facts: dict[int, _Facts], chosen: dict[int, str]) -> None:
    """Put every episode of one recording in the part of that recording (see the module docstring)."""
    units: dict[tuple[str, int], list[int]] = defaultdict(list)
    for index in sorted(facts):
        units[facts[index].recording].append(index)
    for members in units.values():
        lead = next((i for i in members if facts[i].original), members[0])
        for i in members:
            chosen[i] = chosen[lead]


def assign_partition(root: str | Path, val: float, test: float = 0.0, seed: int = 0,
                     progress: Progress | None = None) -> list[Stratum]:
    """Plan the partition and write `partition.json` (atomically, holding the lock); every episode is listed."""
    ds = Dataset.open(root)
    ds.lock()
    try:
        strata = plan_partition(ds, val, test, seed, progress)
        assignment = {i: name for s in strata for name, members in (("train", s.train), ("val", s.val),
                                                                     ("test", s.test)) for i in members}
        write_partition(ds.root, assignment)
    finally:
        ds.close()
    return strata


__all__ = ["Stratum", "assign_partition", "part_counts", "plan_partition"]
