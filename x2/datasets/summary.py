"""Summary statistics of a dataset, computed from the manifest and the commit log alone.

Reading only ``episodes.jsonl`` (segments, outcome and failure are in every line) keeps ``x2 datasets
info`` and ``ls`` fast on thousands of episodes and lets them run on a stranger's dataset without
opening a single HDF5 file.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from x2.datasets.index import EpisodeRecord
from x2.datasets.store import Dataset


@dataclass(frozen=True)
class DatasetSummary:
    name: str
    root: Path
    robot: str
    task: str
    fps: float
    episodes: int
    frames: int
    duration_s: float  # frames / fps: ticks are sim-time control steps
    success_rate: float | None  # None for an empty dataset
    sources: dict[str, int] = field(default_factory=dict)
    subtask_mean_s: dict[str, float] = field(default_factory=dict)  # DAG order first, then other labels
    subtask_count: dict[str, int] = field(default_factory=dict)  # how many segments each mean is over
    failure_reasons: dict[str, int] = field(default_factory=dict)  # "node: reason" -> episodes


def segment_lengths(ds: Dataset, records: list[EpisodeRecord]) -> dict[str, list[int]]:
    """Frames of every segment per label, from the index: the DAG's nodes in their order first, then
    the other labels ("done", "unfinished") sorted."""
    lengths: dict[str, list[int]] = defaultdict(list)
    for record in records:
        for segment in record.segments:
            lengths[segment.node].append(segment.end - segment.start)
    order = [str(n) for n in ds.manifest.dag.get("nodes", [])]
    names = [n for n in order if n in lengths] + sorted(n for n in lengths if n not in order)
    return {n: lengths[n] for n in names}


def summarize(ds: Dataset) -> DatasetSummary:
    return summarize_records(ds, ds.episodes())


def summarize_records(ds: Dataset, records: list[EpisodeRecord]) -> DatasetSummary:
    fps = float(ds.manifest.fps)
    frames = sum(r.frames for r in records)
    lengths = segment_lengths(ds, records)
    names = list(lengths)
    failures = Counter(f"{r.failure[0]}: {r.failure[2]}" for r in records if r.failure)
    return DatasetSummary(
        name=ds.name, root=ds.root, robot=ds.manifest.robot, task=ds.manifest.task, fps=fps,
        episodes=len(records), frames=frames, duration_s=frames / fps,
        success_rate=sum(r.success for r in records) / len(records) if records else None,
        sources=dict(Counter(r.source for r in records).most_common()),
        subtask_mean_s={n: sum(lengths[n]) / len(lengths[n]) / fps for n in names},
        subtask_count={n: len(lengths[n]) for n in names},
        failure_reasons=dict(failures.most_common()),
    )
