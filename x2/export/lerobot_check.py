"""Is what LeRobot reads back what x2 meant to export? (The reading itself is in `x2.export.lerobot`.)

The adapter reloads the finished folder with LeRobot's own `LeRobotDataset` and hands over what it read
as plain arrays (`Readback`); `compare` holds it against the plan and the source pixels and raises one
`ExportError` naming the first thing that differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from x2.base.errors import ExportError
from x2.export.lerobot_language import frame_timestamp
from x2.export.lerobot_plan import ENV_STATE, ExportPlan, arm_feature

# Mean absolute difference (0..255 levels) a decoded frame may have from its source. LeRobot's default
# AV1 (crf 30, yuv420p) lands at ~2 levels on 96x128 booth images; a wrong frame, camera or channel
# order is tens of levels off.
PIXEL_TOLERANCE = 6.0

Edges = Mapping[str, tuple[np.ndarray, np.ndarray]]  # camera -> (first frame, last frame), (H, W, 3) uint8


@dataclass
class EpisodeReadback:
    length: int  # LeRobot's episode metadata
    frame_index: np.ndarray
    timestamp: np.ndarray
    task: list[str]  # per frame, through task_index and meta/tasks.parquet
    subtask: list[str | None]  # per frame, language_render.active_at(timestamp, style="subtask")
    subtask_index: np.ndarray
    state: np.ndarray  # (T, J) observation.state
    action: np.ndarray  # (T, A)
    edge_task: tuple[str, str] = ("", "")  # LeRobotDataset[first]["task"], [last]["task"]
    arm_subtask_index: dict[str, np.ndarray] = field(default_factory=dict)  # subtask_index.<arm> -> (T,)
    environment_state: np.ndarray | None = None  # (T, K * 7) observation.environment_state, when exported
    edges: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


@dataclass
class Readback:
    episodes: int
    frames: int
    fps: int
    per_episode: list[EpisodeReadback]


def _first_difference(got: Sequence[object], want: Sequence[object]) -> int | None:
    for t, (a, b) in enumerate(zip(got, want, strict=True)):
        if a != b:
            return t
    return None


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def compare(plan: ExportPlan, source_edges: Sequence[Edges], back: Readback, where: str) -> None:
    """Raise ExportError at the first difference between the plan (and source pixels) and the readback."""
    def fail(what: str, found: object, allowed: object) -> ExportError:
        return ExportError(f"{where}: LeRobot read back {what}: found {found}; allowed: {allowed}")

    if back.fps != plan.fps:
        raise fail("fps", back.fps, plan.fps)
    if back.episodes != len(plan.episodes) or len(back.per_episode) != len(plan.episodes):
        raise fail("episodes", back.episodes, f"{len(plan.episodes)} (the episodes written)")
    if back.frames != plan.frames:
        raise fail("frames", back.frames, f"{plan.frames} (the frames written)")
    for i, (want, got) in enumerate(zip(plan.episodes, back.per_episode, strict=True)):
        name = f"episode {i} (x2 episode {want.record.index})"
        if got.length != want.frames or len(got.frame_index) != want.frames:
            raise fail(f"{name} length", f"{got.length} ({len(got.frame_index)} rows)", want.frames)
        t: int | None  # the first row that differs
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
        t = _first_difference(got.subtask, list(want.labels))
        if t is not None:
            raise fail(f"{name} frame {t} subtask (language_persistent, active_at)", repr(got.subtask[t]),
                       f"{want.labels[t]!r} (x2's label)")
        index = np.asarray(got.subtask_index, np.int64).reshape(-1)
        if not np.array_equal(index, want.subtask_index):
            t = int(np.flatnonzero(index != want.subtask_index)[0])
            raise fail(f"{name} frame {t} subtask_index", int(index[t]), int(want.subtask_index[t]))
        for a, arm in enumerate(plan.arms):
            key = arm_feature(arm)
            assert want.arm_subtask_index is not None  # the plan gives every episode its arms' columns
            if key not in got.arm_subtask_index:
                raise fail(f"{name} feature {key}", "missing", f"an int64 column per arm of {list(plan.arms)}")
            index = np.asarray(got.arm_subtask_index[key], np.int64).reshape(-1)
            expected = want.arm_subtask_index[:, a]
            if not np.array_equal(index, expected):
                t = int(np.flatnonzero(index != expected)[0]) if index.shape == expected.shape else 0
                raise fail(f"{name} frame {t} {key}", int(index[t]) if index.size else None, int(expected[t]))
        columns = [("observation.state", got.state, want.state), ("action", got.action, want.action)]
        if want.environment_state is not None:
            if got.environment_state is None:
                raise fail(f"{name} feature {ENV_STATE}", "missing", f"the poses of {list(plan.objects)}")
            columns.append((ENV_STATE, got.environment_state, want.environment_state))
        for column, values, source in columns:
            source = np.asarray(source, np.float32)
            values = np.asarray(values, np.float32).reshape(source.shape[0], -1)
            if values.shape != source.shape:
                raise fail(f"{name} {column} shape", values.shape, source.shape)
            if not np.array_equal(values, source):
                t = int(np.flatnonzero((values != source).any(axis=1))[0])
                raise fail(f"{name} frame {t} {column}", values[t].tolist(), f"{source[t].tolist()} (the file's)")
        for cam, (first, last) in source_edges[i].items():
            if cam not in got.edges:
                raise fail(f"{name} camera", f"no {cam} frames", f"observation.images.{cam}")
            for end, source, decoded in zip(("first", "last"), (first, last), got.edges[cam], strict=True):
                if decoded.shape != source.shape:
                    raise fail(f"{name} {end} {cam} frame shape", decoded.shape, source.shape)
                diff = mean_abs_diff(decoded, source)
                if diff > PIXEL_TOLERANCE:
                    raise fail(f"{name} {end} {cam} frame", f"{diff:.1f} levels mean abs diff from the source",
                               f"<= {PIXEL_TOLERANCE:g}")
