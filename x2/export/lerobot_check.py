"""Is what LeRobot reads back what x2 meant to export? (The reading itself is in `x2.export.lerobot`.)

While an episode is written, `WrittenEpisode.of` keeps what the check needs of it and no more: its labels and
subtask codes as runs (a few per episode), sha256 digests of its float columns (state, action, environment
state) and, spilled to a folder beside the export (`EdgeStore`), the source pixels of its first and last frame
per camera. The adapter reloads the finished folder with LeRobot's own `LeRobotDataset` and hands over what it
read one episode at a time as plain arrays (`Readback`); `compare` holds each against its `WrittenEpisode` and
raises one `ExportError` naming the first thing that differs. Memory does not grow with the number of episodes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats
from x2.base.errors import ExportError
from x2.export.lerobot_language import frame_timestamp
from x2.export.lerobot_plan import ENV_STATE, EpisodePlan, ExportPlan, arm_feature, depth_feature

# Mean absolute difference (0..255 levels) a decoded frame may have from its source. LeRobot's default
# AV1 (crf 30, yuv420p) lands at ~2 levels on 96x128 booth images; a wrong frame, camera or channel
# order is tens of levels off.
PIXEL_TOLERANCE = 6.0

Pixels = npt.NDArray[np.generic]  # a picture (H, W, 3) uint8, or a depth map (H, W) float32 metres
# camera -> (first frame, last frame): (H, W, 3) uint8 per camera, (H, W) float32 metres per depth feature
Edges = Mapping[str, tuple[Pixels, Pixels]]
_Fail = Callable[[str, object, object], ExportError]  # (what, found, allowed) -> the one line


@dataclass(frozen=True)
class Runs[V]:
    """A per-frame column as runs of equal values: `values[k]` from frame `starts[k]` up to the next start."""

    starts: tuple[int, ...]
    values: tuple[V, ...]
    frames: int

    @classmethod
    def of(cls, column: Sequence[V]) -> Runs[V]:
        starts = tuple(t for t in range(len(column)) if t == 0 or column[t] != column[t - 1])
        return cls(starts, tuple(column[t] for t in starts), len(column))

    def expand(self) -> list[V]:
        out: list[V] = []
        for value, start, stop in zip(self.values, self.starts, (*self.starts[1:], self.frames), strict=True):
            out += [value] * (stop - start)
        return out


@dataclass(frozen=True)
class Digest:
    """A float column as exported (float32): its shape and the sha256 of its bytes."""

    shape: tuple[int, ...]
    sha256: str

    @classmethod
    def of(cls, values: Floats) -> Digest:
        rows = np.ascontiguousarray(values, np.float32)
        return cls(tuple(rows.shape), hashlib.sha256(rows.tobytes()).hexdigest())


def _codes(column: npt.NDArray[np.int64]) -> Runs[int]:
    return Runs.of([int(v) for v in column])


@dataclass(frozen=True)
class WrittenEpisode:
    """What the check holds one exported episode's read-back to (see the module doc)."""

    index: int  # the x2 episode it came from
    frames: int
    task: str
    labels: Runs[str]  # every frame's subtask text
    subtask_index: Runs[int]  # encoded (SubtaskCodes)
    state: Digest
    action: Digest
    arm_subtask_index: tuple[Runs[int], ...] = ()  # per arm of the plan, its encoded column
    environment_state: Digest | None = None

    @classmethod
    def of(cls, plan: EpisodePlan) -> WrittenEpisode:
        arms = () if plan.arm_subtask_index is None else tuple(_codes(c) for c in plan.arm_subtask_index.T)
        env = None if plan.environment_state is None else Digest.of(plan.environment_state)
        return cls(plan.record.index, plan.frames, plan.task, Runs.of(plan.labels), _codes(plan.subtask_index),
                   Digest.of(plan.state), Digest.of(plan.action), arms, env)


class EdgeStore(Sequence[Edges]):
    """Each episode's first and last source frame per camera, in files of one folder (one episode's at a time
    in memory); the folder goes with the export's staged build."""

    def __init__(self, folder: Path, cameras: Sequence[str]) -> None:
        self.folder, self.cameras, self._count = folder, tuple(cameras), 0

    def append(self, edges: Edges) -> None:
        if self.cameras:
            self.folder.mkdir(parents=True, exist_ok=True)
        for k, cam in enumerate(self.cameras):
            np.save(self.folder / f"{self._count:06d}-{k}.npy", np.stack(edges[cam]))
        self._count += 1

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> Edges: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Edges]: ...

    def __getitem__(self, i: int | slice) -> Edges | Sequence[Edges]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._count))]
        if not 0 <= i < self._count:
            raise IndexError(i)
        out: dict[str, tuple[Pixels, Pixels]] = {}
        for k, cam in enumerate(self.cameras):
            pair: Pixels = np.load(self.folder / f"{i:06d}-{k}.npy")
            out[cam] = (pair[0], pair[1])
        return out


@dataclass
class EpisodeReadback:
    length: int  # LeRobot's episode metadata
    episode_index: npt.NDArray[np.int64]  # the rows its metadata gives it (dataset_from_index..dataset_to_index)
    frame_index: npt.NDArray[np.int64]
    timestamp: Floats
    task: list[str]  # per frame, through task_index and meta/tasks.parquet
    subtask: list[str | None]  # per frame, language_render.active_at(timestamp, style="subtask")
    subtask_index: npt.NDArray[np.int64]
    state: Floats  # (T, J) observation.state
    action: Floats  # (T, A)
    edge_task: tuple[str, str] = ("", "")  # LeRobotDataset[first]["task"], [last]["task"]
    arm_subtask_index: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)  # subtask_index.<arm> -> (T,)
    environment_state: Floats | None = None  # (T, K * 7) observation.environment_state, when exported
    edges: dict[str, tuple[Pixels, Pixels]] = field(default_factory=dict)  # as Edges, decoded by LeRobot


@dataclass
class Readback:
    episodes: int
    frames: int
    fps: int
    per_episode: Iterable[EpisodeReadback]  # read one at a time, in episode order


def _first_difference(got: Sequence[object], want: Sequence[object]) -> int | None:
    for t, (a, b) in enumerate(zip(got, want, strict=True)):
        if a != b:
            return t
    return None


def mean_abs_diff(a: Pixels, b: Pixels) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def compare(plan: ExportPlan, written: Sequence[WrittenEpisode], source_edges: Sequence[Edges], back: Readback,
            where: str) -> None:
    """Raise ExportError at the first difference between what was written (and its source pixels) and the
    readback, reading the readback one episode at a time."""
    def fail(what: str, found: object, allowed: object) -> ExportError:
        return ExportError(f"{where}: LeRobot read back {what}: found {found}; allowed: {allowed}")

    if back.fps != plan.fps:
        raise fail("fps", back.fps, plan.fps)
    if back.episodes != len(written):
        raise fail("episodes", back.episodes, f"{len(written)} (the episodes written)")
    frames = sum(w.frames for w in written)
    if back.frames != frames:
        raise fail("frames", back.frames, f"{frames} (the frames written)")
    episodes: Iterator[EpisodeReadback] = iter(back.per_episode)
    for i, want in enumerate(written):
        got = next(episodes, None)
        if got is None:
            raise fail("episodes", i, f"{len(written)} (the episodes written)")
        _compare_episode(plan, i, want, source_edges[i], got, fail)
    if next(episodes, None) is not None:
        raise fail("episodes", f"more than {len(written)}", f"{len(written)} (the episodes written)")


def _compare_labels(name: str, want: WrittenEpisode, got: EpisodeReadback, fail: _Fail) -> None:
    labels = want.labels.expand()
    t = _first_difference(got.subtask, labels)
    if t is not None:
        raise fail(f"{name} frame {t} subtask (language_persistent, active_at)", repr(got.subtask[t]),
                   f"{labels[t]!r} (x2's label)")
    codes = np.asarray(want.subtask_index.expand(), np.int64)
    index = np.asarray(got.subtask_index, np.int64).reshape(-1)
    if not np.array_equal(index, codes):
        t = int(np.flatnonzero(index != codes)[0])
        raise fail(f"{name} frame {t} subtask_index", int(index[t]), int(codes[t]))


def depth_bound(plan: ExportPlan, depth: Floats) -> Floats:
    """How far LeRobot's depth encoder may move each depth (m): codes evenly spaced in log(d + shift), so rounding to
    the nearest moves d by at most (d + shift) (e^(step / 2) - 1); lossless video keeps the codes (float32 slack)."""
    out: Floats = (np.asarray(depth, np.float64) + plan.depth_shift) * math.expm1(plan.depth_step / 2) * 1.001 + 1e-6
    return out


def _compare_depth(plan: ExportPlan, what: str, decoded: Pixels, source: Pixels, fail: _Fail) -> None:
    error = np.abs(np.asarray(decoded, np.float64) - np.asarray(source, np.float64))
    bound = depth_bound(plan, np.asarray(source, np.float64))
    if not (error <= bound).all():
        worst = int(np.argmax(error - bound))
        raise fail(what, f"{1000 * error.flat[worst]:.2f} mm from the source depth",
                   f"<= {1000 * bound.flat[worst]:.2f} mm (the depth encoder's quantisation there)")


def _compare_episode(plan: ExportPlan, i: int, want: WrittenEpisode, source_edges: Edges, got: EpisodeReadback,
                     fail: _Fail) -> None:
    name = f"episode {i} (x2 episode {want.index})"
    if got.length != want.frames or len(got.frame_index) != want.frames:
        raise fail(f"{name} length", f"{got.length} ({len(got.frame_index)} rows)", want.frames)
    t: int | None  # the first row that differs
    if not np.array_equal(got.episode_index, np.full(want.frames, i)):
        t = int(np.flatnonzero(got.episode_index != i)[0])
        raise fail(f"{name} row {t} episode_index", int(got.episode_index[t]), i)
    frames = np.arange(want.frames)
    if not np.array_equal(got.frame_index, frames):
        t = int(np.flatnonzero(got.frame_index != frames)[0])
        raise fail(f"{name} frame_index at row {t}", int(got.frame_index[t]), t)
    stamps = np.array([frame_timestamp(t, plan.fps) for t in range(want.frames)], dtype=np.float32)
    if not np.array_equal(np.asarray(got.timestamp, np.float32), stamps):
        t = int(np.flatnonzero(np.asarray(got.timestamp, np.float32) != stamps)[0])
        raise fail(f"{name} frame {t} timestamp", float(got.timestamp[t]), f"{stamps[t]} (frame_index / fps)")
    t = _first_difference(got.task, [want.task] * want.frames)
    if t is not None:
        raise fail(f"{name} frame {t} task", repr(got.task[t]), f"{want.task!r} (the episode's instruction)")
    for end, task in zip(("first", "last"), got.edge_task, strict=True):
        if task != want.task:
            raise fail(f"{name} {end} frame task (LeRobotDataset item)", repr(task), repr(want.task))
    if plan.labelled:  # (a real recording's export has no labels to compare)
        _compare_labels(name, want, got, fail)
    for arm, runs in zip(plan.arms, want.arm_subtask_index, strict=True):
        key = arm_feature(arm)
        if key not in got.arm_subtask_index:
            raise fail(f"{name} feature {key}", "missing", f"an int64 column per arm of {list(plan.arms)}")
        index = np.asarray(got.arm_subtask_index[key], np.int64).reshape(-1)
        expected = np.asarray(runs.expand(), np.int64)
        if not np.array_equal(index, expected):
            t = int(np.flatnonzero(index != expected)[0]) if index.shape == expected.shape else 0
            raise fail(f"{name} frame {t} {key}", int(index[t]) if index.size else None, int(expected[t]))
    columns: list[tuple[str, Floats, Digest]] = [("observation.state", got.state, want.state),
                                                 ("action", got.action, want.action)]
    if want.environment_state is not None:
        if got.environment_state is None:
            raise fail(f"{name} feature {ENV_STATE}", "missing", f"the poses of {list(plan.objects)}")
        columns.append((ENV_STATE, got.environment_state, want.environment_state))
    for column, values, digest in columns:
        rows = np.asarray(values, np.float32).reshape(digest.shape[0], -1)
        if rows.shape != digest.shape:
            raise fail(f"{name} {column} shape", rows.shape, digest.shape)
        found = Digest.of(rows)
        if found != digest:
            raise fail(f"{name} {column}", f"values of sha256 {found.sha256[:12]}...",
                       f"the file's, sha256 {digest.sha256[:12]}... (as float32)")
    depth = {depth_feature(c) for c in plan.depth}
    for cam, (first, last) in source_edges.items():
        if cam not in got.edges:
            raise fail(f"{name} camera", f"no {cam} frames", cam if cam in depth else f"observation.images.{cam}")
        for end, source, decoded in zip(("first", "last"), (first, last), got.edges[cam], strict=True):
            if decoded.shape != source.shape:
                raise fail(f"{name} {end} {cam} frame shape", decoded.shape, source.shape)
            if cam in depth:
                _compare_depth(plan, f"{name} {end} {cam} frame", decoded, source, fail)
                continue
            diff = mean_abs_diff(decoded, source)
            if diff > PIXEL_TOLERANCE:
                raise fail(f"{name} {end} {cam} frame", f"{diff:.1f} levels mean abs diff from the source",
                           f"<= {PIXEL_TOLERANCE:g}")
