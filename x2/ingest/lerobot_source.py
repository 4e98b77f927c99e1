"""A LeRobot v3.0 dataset in a local folder, read with LeRobot's own reader (imported here, lazily: it pulls torch).

`open_recording` loads its metadata (meta/info.json: fps, features and their column names, which features are
videos) and its frames table; `RecordingSource.episode` gives one episode's rows (the range LeRobot's episode
metadata gives it: timestamps, the two joint features, the task text), and `RecordingSource.frames` one camera's
frames of that episode, decoded by LeRobot's `decode_video_frames` through pyav (torchcodec does not load on every
machine) at the episode's own timestamps. Nothing here converts or checks units: x2/ingest/real.py does."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from x2.base.arrays import Floats, Image
from x2.base.errors import DatasetError, NotFoundError
from x2.files.hf_cache import hf_datasets_cache

INFO_FILE = "meta/info.json"  # where a LeRobot dataset declares its fps and features
CAMERA_PREFIX = "observation.images."  # LeRobot's camera features: observation.images.<cam>
# the columns LeRobot adds to every frame (its DEFAULT_FEATURES): where a frame is, not what was recorded
BOOKKEEPING = ("timestamp", "frame_index", "episode_index", "index", "task_index")


@dataclass(frozen=True)
class InfoFeature:
    """One feature of meta/info.json: its dtype, shape and column names (a list, or LeRobot's {"motors": [...]})."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    names: tuple[str, ...]


@dataclass(frozen=True)
class RecordedEpisode:
    """One LeRobot episode's rows."""

    index: int  # LeRobot's episode_index
    start: int  # the row of its first frame in the dataset's frames table
    timestamps: Floats  # (T,) float64, s: LeRobot's `timestamp` column
    action: Floats  # (T, n) as stored
    state: Floats  # (T, n) as stored
    tasks: tuple[str, ...]  # the task text of its frames, in order of first appearance


@dataclass
class RecordingSource:
    """An opened LeRobot dataset (`open_recording`)."""

    root: Path
    fps: float
    features: dict[str, InfoFeature]
    cameras: dict[str, str]  # x2 camera name -> LeRobot camera feature (a video, or images in the frames table)
    episode_count: int
    _dataset: Any  # LeRobot's LeRobotDataset
    _action: str
    _state: str

    def episode(self, i: int) -> RecordedEpisode:
        meta = self._dataset.meta.episodes[i]
        start, stop = int(meta["dataset_from_index"]), int(meta["dataset_to_index"])
        table = self._dataset.hf_dataset.select_columns(["timestamp", "task_index", self._action, self._state])
        rows = table.with_format("numpy")[start:stop]
        names = [str(name) for name in self._dataset.meta.tasks.index]
        seen: dict[str, None] = {}
        for k in np.asarray(rows["task_index"]).tolist():
            seen.setdefault(names[int(k)], None)
        return RecordedEpisode(int(meta["episode_index"]), start, np.asarray(rows["timestamp"], dtype=np.float64),
                             np.asarray(rows[self._action]), np.asarray(rows[self._state]), tuple(seen))

    def frames(self, episode: RecordedEpisode, camera: str) -> Image:
        """(T, H, W, 3) uint8 RGB: the camera's frames at the episode's timestamps, as LeRobot decodes them (a video),
        or as stored (PNG images in the frames table: lossless)."""
        from lerobot.datasets.video_utils import decode_video_frames

        key = self.cameras[camera]
        if self.features[key].dtype == "image":
            stop = episode.start + len(episode.timestamps)
            pictures = self._dataset.hf_dataset.with_format(None).select_columns([key])[episode.start:stop][key]
            return np.stack([np.asarray(p.convert("RGB"), dtype=np.uint8) for p in pictures])
        meta = self._dataset.meta.episodes[episode.index]
        start = float(meta[f"videos/{key}/from_timestamp"])
        path = self.root / self._dataset.meta.get_video_file_path(episode.index, key)
        try:
            frames = decode_video_frames(path, [start + float(t) for t in episode.timestamps],
                                         self._dataset.tolerance_s, backend="pyav", return_uint8=True)
        except (AssertionError, RuntimeError, OSError, ValueError) as exc:  # LeRobot asserts frames within tolerance
            raise DatasetError(f"{path}: {key}: found frames that LeRobot cannot decode at episode "
                               f"{episode.index}'s timestamps ({str(exc).splitlines()[0][:120]}); allowed: a video "
                               "with a frame at every timestamp") from None
        return np.ascontiguousarray(frames.permute(0, 2, 3, 1).numpy(), dtype=np.uint8)


def read_features(root: Path) -> tuple[float, dict[str, InfoFeature]]:
    """fps and the features of meta/info.json, through LeRobot's metadata reader."""
    _offline()
    from lerobot.datasets.dataset_metadata import LeRobotDatasetMetadata

    info = root / INFO_FILE
    if not info.is_file():
        raise NotFoundError(f"{info}: info: found no such file; allowed: a LeRobot v3.0 dataset folder "
                            "(meta/info.json, data/, videos/)")
    try:
        meta = LeRobotDatasetMetadata(_repo_id(root), root=root)
    except Exception as exc:  # noqa: BLE001  (LeRobot raises what its readers raise: any of them is this line)
        raise DatasetError(f"{info}: dataset: found what LeRobot 0.6 cannot read ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:120] if str(exc) else ''}); allowed: a LeRobot v3.0 "
                           "dataset") from None
    features = {key: InfoFeature(key, str(ft.get("dtype")), tuple(int(n) for n in ft.get("shape") or ()),
                             _names(ft.get("names")))
                for key, ft in dict(meta.features).items()}
    return float(meta.fps), features


def camera_features(features: dict[str, InfoFeature]) -> dict[str, str]:
    """x2 camera name -> LeRobot feature, for every RGB camera (`observation.images.<cam>`, a video or images; depth
    maps, one channel, are not camera frames x2 stores)."""
    return {key.removeprefix(CAMERA_PREFIX): key for key, ft in sorted(features.items())
            if ft.dtype in ("video", "image") and key.startswith(CAMERA_PREFIX) and len(ft.shape) == 3
            and ft.shape[0 if _channels_first(ft) else 2] == 3}


def picture_size(ft: InfoFeature) -> tuple[int, int]:
    """(height, width) of a camera feature (LeRobot writes (H, W, C); older datasets (C, H, W), names saying so)."""
    return (ft.shape[1], ft.shape[2]) if _channels_first(ft) else (ft.shape[0], ft.shape[1])


def _channels_first(ft: InfoFeature) -> bool:
    return bool(ft.names) and ft.names[0] in ("channel", "channels")


def unused_features(features: dict[str, InfoFeature], used: set[str]) -> list[str]:
    """The recording's features an import leaves out (LeRobot's own bookkeeping columns aside)."""
    return sorted(set(features) - used - set(BOOKKEEPING))


def _names(names: object) -> tuple[str, ...]:
    if isinstance(names, dict) and len(names) == 1:  # LeRobot's older {"motors": [...]}
        names = next(iter(names.values()))
    if isinstance(names, list | tuple):
        return tuple(str(n) for n in names)
    return ()


def _repo_id(root: Path) -> str:
    return f"local/{root.name}"


@contextlib.contextmanager
def open_recording(root: Path, action: str, state: str, cache: Path) -> Iterator[RecordingSource]:
    """The dataset at `root`, loaded by LeRobot (offline; the datasets library's cache in `cache`, removed after)."""
    _offline()
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    fps, features = read_features(root)
    cameras = camera_features(features)
    with hf_datasets_cache(cache):
        try:
            dataset = LeRobotDataset(_repo_id(root), root=root, video_backend="pyav", return_uint8=True)
        except Exception as exc:  # noqa: BLE001  (as in read_features)
            raise DatasetError(f"{root / INFO_FILE}: dataset: found what LeRobot 0.6 cannot load "
                               f"({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}); "
                               "allowed: a LeRobot v3.0 dataset") from None
        yield RecordingSource(root, fps, features, cameras, int(dataset.meta.total_episodes), dataset, action, state)


def _offline() -> None:
    """A local folder: nothing to fetch. LeRobot asks the hub for what a folder lacks (an incomplete recording);
    offline (the hub library reads this when it is first imported) that is an error here, not a download."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
