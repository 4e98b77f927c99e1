"""Native dataset store: one self-contained HDF5 file per finished episode, a manifest and a commit log.

Simulator-free on purpose (no mujoco, no x2.sim, no x2.rollout): the rollout calls into it, and a
stranger's dataset can be inspected without a simulator. The format itself (names, paths, typed
records, writer-side checks) is x2.format.
"""

from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord, Segment
from x2.datasets.store import Dataset, lock_holder
from x2.datasets.summary import DatasetSummary, summarize
from x2.datasets.timeline import plot_timeline
from x2.datasets.validate import Problem, RepairResult, Report, repair, validate
from x2.datasets.workspace import (
    dataset_label,
    dataset_path,
    given_output,
    last_dataset,
    list_datasets,
    remember_dataset,
    resolve_dataset,
    resolve_output,
)
from x2.datasets.writer import EpisodeWriter
from x2.format import (
    FORMAT_VERSION,
    SOURCES,
    EpisodeEnd,
    EpisodeStart,
    Manifest,
    Rejection,
    TeleopEnd,
    Tick,
)

__all__ = [
    "FORMAT_VERSION",
    "SOURCES",
    "Dataset",
    "DatasetSummary",
    "Episode",
    "EpisodeEnd",
    "EpisodeRecord",
    "EpisodeStart",
    "EpisodeWriter",
    "Manifest",
    "Problem",
    "Rejection",
    "RepairResult",
    "Report",
    "Segment",
    "TeleopEnd",
    "Tick",
    "dataset_path",
    "given_output",
    "last_dataset",
    "dataset_label",
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
