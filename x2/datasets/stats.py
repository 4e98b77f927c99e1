"""Per-feature and per-subtask statistics of a dataset (`x2 datasets stats`).

Features (action, qpos, qvel, ee_pose) are read episode by episode and combined with the pairwise
mean / sum-of-squares update (Chan et al.), in float64, so memory stays one episode whatever the
dataset size and the result equals numpy on the concatenated arrays. Subtask durations come from the
index's segments alone (no file is opened for them). The std is the population one (numpy's ddof=0).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord
from x2.datasets.removal import Progress
from x2.datasets.store import Dataset
from x2.datasets.summary import segment_lengths
from x2.files.atomic import replacing, write_text

FEATURES = {"action": fmt.ACTION, "qpos": fmt.QPOS, "qvel": fmt.QVEL, "ee_pose": fmt.EE_POSE}
POSE_PARTS = ("x", "y", "z", "qw", "qx", "qy", "qz")


@dataclass(frozen=True)
class FeatureStats:
    feature: str
    names: tuple[str, ...]
    frames: int
    mean: npt.NDArray[np.float64]
    std: npt.NDArray[np.float64]
    min: npt.NDArray[np.float64]
    max: npt.NDArray[np.float64]


@dataclass(frozen=True)
class DurationStats:
    """One subtask's segment lengths in frames (every segment labelled with it, over all episodes)."""

    node: str
    frames: tuple[int, ...]
    fps: float

    @property
    def count(self) -> int:
        return len(self.frames)

    def summary(self) -> dict[str, float]:
        """count, mean, p50, p90, max in frames (numpy's linear percentiles)."""
        values = np.asarray(self.frames, np.float64)
        return {"count": float(values.size), "mean": float(values.mean()),
                "p50": float(np.percentile(values, 50)), "p90": float(np.percentile(values, 90)),
                "max": float(values.max())}


@dataclass(frozen=True)
class DatasetStats:
    dataset: str
    episodes: int
    frames: int
    fps: float
    features: list[FeatureStats] = field(default_factory=list)
    durations: list[DurationStats] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset, "episodes": self.episodes, "frames": self.frames, "fps": self.fps,
            "features": {f.feature: {"names": list(f.names), "frames": f.frames, "mean": f.mean.tolist(),
                                     "std": f.std.tolist(), "min": f.min.tolist(), "max": f.max.tolist()}
                         for f in self.features},
            "subtask_frames": {d.node: d.summary() for d in self.durations},
            "subtask_seconds": {d.node: {k: v if k == "count" else v / d.fps for k, v in d.summary().items()}
                                for d in self.durations},
        }


class _Running:
    """Count, mean, sum of squared deviations, min and max per dimension, merged batch by batch."""

    def __init__(self, dims: int) -> None:
        self.n = 0
        self.mean = np.zeros(dims)
        self.m2 = np.zeros(dims)
        self.min = np.full(dims, np.inf)
        self.max = np.full(dims, -np.inf)

    def add(self, rows: npt.NDArray[np.generic]) -> None:
        x = np.asarray(rows, np.float64)
        if x.shape[0] == 0:
            return
        n_b, mean_b = x.shape[0], x.mean(axis=0)
        m2_b = ((x - mean_b) ** 2).sum(axis=0)
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (n_b / n)
        self.m2 = self.m2 + m2_b + delta ** 2 * (self.n * n_b / n)
        self.n = n
        self.min = np.minimum(self.min, x.min(axis=0))
        self.max = np.maximum(self.max, x.max(axis=0))


def _names(ds: Dataset, ep: Episode, feature: str, dims: int, shape: tuple[int, ...]) -> tuple[str, ...]:
    if feature == "ee_pose":
        arms = [str(a.get("name", f"arm{i}")) for i, a in enumerate(ds.manifest.world.get("robot", {}).get("arms", []))]
        if len(arms) != shape[1]:
            arms = [f"arm{i}" for i in range(shape[1])]
        return tuple(f"{arm}.{part}" for arm in arms for part in POSE_PARTS)
    names = ep.dataset_attrs(FEATURES[feature]).get(fmt.NAMES_ATTR)
    if isinstance(names, list) and len(names) == dims:
        return tuple(str(n) for n in names)
    return tuple(f"{feature}[{i}]" for i in range(dims))


def dataset_stats(ds: Dataset, records: Sequence[EpisodeRecord], progress: Progress | None = None) -> DatasetStats:
    running: dict[str, _Running] = {}
    names: dict[str, tuple[str, ...]] = {}
    for done, record in enumerate(records, 1):
        with ds.load(record.index) as ep:
            for feature, path in FEATURES.items():
                if path not in ep:
                    continue
                arr = ep[path]
                rows = arr.reshape(arr.shape[0], -1)
                if feature not in running:
                    running[feature] = _Running(rows.shape[1])
                    names[feature] = _names(ds, ep, feature, rows.shape[1], arr.shape)
                running[feature].add(rows)
        if progress is not None:
            progress(done, len(records))
    features = [FeatureStats(f, names[f], r.n, r.mean, np.sqrt(r.m2 / r.n), r.min, r.max)
                for f, r in running.items() if r.n > 0]
    lengths = segment_lengths(ds, list(records))
    fps = float(ds.manifest.fps)
    return DatasetStats(ds.name, len(records), sum(r.frames for r in records), fps, features,
                        [DurationStats(n, tuple(frames), fps) for n, frames in lengths.items()])


def write_json(stats: DatasetStats, out: str | Path) -> Path:
    out = Path(out)
    write_text(out, json.dumps(stats.to_json(), indent=1) + "\n")
    return out


def plot_durations(stats: DatasetStats, out: str | Path) -> Path:
    """A PNG with one histogram of segment durations (seconds) per subtask, written atomically."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    durations = stats.durations
    cols = min(3, max(1, len(durations)))
    rows = max(1, -(-len(durations) // cols))
    fig = Figure(figsize=(4.0 * cols, 2.8 * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, d in zip(axes.ravel(), durations, strict=False):
        seconds = np.asarray(d.frames, np.float64) / d.fps
        ax.hist(seconds, bins=min(30, max(5, d.count // 2)), color="tab:blue", alpha=0.8)
        ax.set_title(f"{d.node} ({d.count} segments)", fontsize=9)
        ax.set_xlabel("duration (s)", fontsize=8)
        ax.set_ylabel("segments", fontsize=8)
    for ax in axes.ravel()[len(durations):]:
        ax.axis("off")
    if not durations:
        axes[0, 0].text(0.5, 0.5, "no labelled segments", ha="center", va="center")
    fig.suptitle(f"{stats.dataset}: subtask durations over {stats.episodes} episodes", fontsize=10)
    fig.tight_layout()
    out = Path(out)
    with replacing(out) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    return out
