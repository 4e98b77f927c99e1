"""Native dataset store: one self-contained HDF5 file per finished episode, a manifest and a commit log.

Simulator-free on purpose (no mujoco, no x2.sim, no x2.rollout): the rollout calls into it, and a
stranger's dataset can be inspected without a simulator.
"""

from x2.datasets.episode import EPISODE_FORMAT, FIELDS, REQUIRED_DATASETS, SOURCES, Episode
from x2.datasets.index import EpisodeRecord, Segment
from x2.datasets.inspect import DatasetSummary, summarize
from x2.datasets.store import SCHEMA, Dataset, Manifest, lock_holder
from x2.datasets.timeline import plot_timeline
from x2.datasets.validate import Problem, RepairResult, Report, repair, validate
from x2.datasets.workspace import (
    dataset_path,
    last_dataset,
    list_datasets,
    remember_dataset,
    resolve_dataset,
    resolve_output,
)
from x2.datasets.writer import EpisodeWriter

__all__ = [
    "EPISODE_FORMAT",
    "FIELDS",
    "REQUIRED_DATASETS",
    "SCHEMA",
    "SOURCES",
    "Dataset",
    "DatasetSummary",
    "Episode",
    "EpisodeRecord",
    "EpisodeWriter",
    "Manifest",
    "Problem",
    "RepairResult",
    "Report",
    "Segment",
    "dataset_path",
    "last_dataset",
    "list_datasets",
    "lock_holder",
    "plot_timeline",
    "remember_dataset",
    "repair",
    "resolve_dataset",
    "resolve_output",
    "summarize",
    "validate",
]
