"""`x2 import lerobot`: a real robot's LeRobot v3.0 recording made an x2 dataset of source `real`.

Each LeRobot episode becomes one x2 episode (docs/format.md, "Real recordings"): /timestamps the recording's own,
/action its commanded joints and /observations/qpos its measured ones, both in the robot's action layout and x2's
units through the robot file's `lerobot:` table (x2/envspec/recording_table.py), its camera videos decoded into
/observations/images/<cam>, its task text the `instruction`, and the root attr `recording` saying where it came from,
the table used and the gaps found. Nothing is invented: no resampling, no world, no simulator state, no labels.

Everything is checked before anything is written: a recording whose joint features do not match the table is
refused in one line naming meta/info.json. Episodes go through the dataset's writer (`.inprogress/`, fsync, rename,
the index line), one at a time in the recording's order, each with a seed named by the recording and its episode:
run again on the same recording, the import skips the episodes already committed and imports the rest (a kill loses
only the episode in progress, whose leftover file the next run removes: the same input gives the same files).
Another recording into the same dataset is refused."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

import x2
from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Dataset
from x2.envspec.recording_table import RecordingTable, own_export_table
from x2.envspec.robot import RobotInfo, load_robot
from x2.files.digest import file_digest
from x2.ingest.lerobot_source import (
    INFO_FILE,
    InfoFeature,
    RecordedEpisode,
    RecordingSource,
    camera_features,
    open_recording,
    picture_size,
    read_features,
    unused_features,
)
from x2.ingest.timing import TimingReport, examine

FORMAT = "lerobot"  # the `recording` attr's `format`: what `x2 import` read
TOLERANCE_S = 1e-4  # LeRobot's own timestamp tolerance (LeRobotDataset's tolerance_s default)
FRAMES_PER_READ = 64  # camera frames decoded at once: an episode's video never sits whole in memory

Progress = Callable[[int, int, str], None]  # (episodes done, episodes in all, note)


@dataclass(frozen=True)
class ImportedEpisode:
    source_index: int  # LeRobot's episode_index
    index: int  # the x2 episode
    frames: int
    timing: TimingReport
    instruction: str


@dataclass
class ImportResult:
    dataset: Path
    robot: str
    fps: float
    cameras: tuple[str, ...]
    episodes_in_source: int
    not_imported: tuple[str, ...]  # the recording's features left out (other sensors, depth maps): said, not dropped
    imported: list[ImportedEpisode] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)  # LeRobot episodes committed by an earlier run


def default_name(source: Path) -> str:
    """The dataset's default name (and its manifest `task`): the recording folder's name, in x2's name letters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(source).resolve().name).strip("_.") or "recording"


def episode_seed(origin: dict[str, Any], episode_index: int) -> int:
    """A real episode's seed: drawn by nothing, it names the recording and the episode (31 bits of the sha256 of
    the recording's meta/info.json digest and the LeRobot episode index), so that a dataset knows which episodes
    of a recording it has (a resumed import skips them) and episodes of two recordings can be merged."""
    text = f"{origin['info_sha256']}:{int(episode_index)}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "big") & 0x7FFFFFFF


def table_of(robot: RobotInfo, name: str, features: dict[str, InfoFeature] | None = None) -> RecordingTable:
    """The table that reads a recording with these `features`: x2's own export's when the recording names its
    action and state as x2's export of this robot does, the robot file's `lerobot:` table otherwise."""
    own = own_export_table(robot.model)
    if own is not None and features is not None and all(
            (ft := features.get(key)) is not None and ft.names == want
            for key, want in ((own.action_feature, robot.model.action_names),
                              (own.state_feature, robot.model.recorded_joints))):
        return own
    if robot.recording is None:
        raise DatasetError(f"{robot.file}: lerobot: found none for robot {name}; allowed: a `lerobot:` table of its "
                           "recordings' columns and units, or a recording in x2's own export layout (docs/robots.md, "
                           "\"Real recordings\")")
    return robot.recording


def check_features(source: Path, features: dict[str, InfoFeature], table: RecordingTable, robot: str) -> None:
    """The recording's joint features against the robot's table: same names, as many of them; one line otherwise."""
    info = Path(source) / INFO_FILE
    for key in (table.action_feature, table.state_feature):
        ft, wanted = features.get(key), table.names_of(key)
        if ft is None:
            raise DatasetError(f"{info}: features.{key}: found none (features: {', '.join(sorted(features))}); "
                               f"allowed: the feature robot {robot}'s lerobot table reads")
        if ft.dtype not in ("float32", "float64") or len(ft.shape) != 1:
            raise DatasetError(f"{info}: features.{key}: found {ft.dtype}{list(ft.shape)}; allowed: float32 or "
                               f"float64 [{len(wanted)}]")
        names = set(ft.names)
        if len(ft.names) != ft.shape[0] or len(names) != len(ft.names) or not set(wanted) <= names or \
                not names <= {*wanted, *table.ignored}:
            found = f"{ft.shape[0]} values named {list(ft.names)}" if ft.names else f"{ft.shape[0]} unnamed values"
            also = f" (and may hold {list(table.ignored)}, not imported)" if table.ignored else ""
            raise DatasetError(f"{info}: features.{key}.names: found {found}; allowed: the {len(wanted)} "
                               f"columns of robot {robot}'s lerobot table {list(wanted)}{also}")


def import_lerobot(source: str | Path, robot: str, out: Path, progress: Progress | None = None) -> ImportResult:
    """Import every episode of the LeRobot dataset at `source` into the x2 dataset at `out` (made, or resumed)."""
    source = Path(source).resolve()
    info = load_robot(robot)
    name = info.model.name
    fps, features = read_features(source)
    table = table_of(info, name, features)
    check_features(source, features, table, name)
    cameras = tuple(camera_features(features))
    used = {table.action_feature, table.state_feature, *camera_features(features).values()}
    left_out = unused_features(features, used)
    origin: dict[str, Any] = {"format": FORMAT, "path": str(source), "info_sha256": file_digest(source / INFO_FILE),
                              "not_imported": left_out}
    manifest = fmt.Manifest(
        robot=name, task=default_name(source), fps=fps, joint_names=table.action_names,
        action_names=table.action_names, cameras=list(cameras), world={},
        versions=_versions(), extra={fmt.RECORDING_ATTR: origin, "action_definition": _DEFINITION})
    out = Path(out)
    with Dataset.create(out, manifest, exist_ok=True) as ds:
        _same_recording(ds, origin)
        ds.lock()
        _drop_leftovers(ds)
        done = {r.seed for r in ds.episodes()}
        with tempfile.TemporaryDirectory(prefix="x2-import-") as cache, \
                open_recording(source, table.action_feature, table.state_feature, Path(cache)) as rec:
            result = ImportResult(out, name, fps, cameras, rec.episode_count, tuple(left_out))
            for i in range(rec.episode_count):
                if progress is not None:
                    progress(i, rec.episode_count, f"episode {i}")
                episode = rec.episode(i)
                if episode_seed(origin, episode.index) in done:
                    result.skipped.append(episode.index)
                    continue
                result.imported.append(_import_episode(ds, rec, episode, table, origin, fps))
            if progress is not None:
                progress(rec.episode_count, rec.episode_count, "")
    return result


_DEFINITION = "commanded joint targets of a real robot's recording in x2's action layout (per arm joints in rad, " \
              "then the gripper's opening 0 closed .. 1 open), measured joints in observations/qpos"


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"x2": x2.__version__, "lerobot": version("lerobot"), "numpy": np.__version__}


def _same_recording(ds: Dataset, origin: dict[str, Any]) -> None:
    """A dataset takes the episodes of one recording: resuming it is allowed, mixing in another is not."""
    have = ds.manifest.extra.get(fmt.RECORDING_ATTR)
    if not isinstance(have, dict) or have.get("path") != origin["path"]:
        found = have.get("path") if isinstance(have, dict) else "a dataset that was not imported"
        raise DatasetError(f"{ds.root / fmt.MANIFEST_FILE}: extra.recording.path: found {found}; allowed: "
                           f"{origin['path']} (a dataset imports one recording: --dataset NEW writes elsewhere)")
    if have.get("info_sha256") != origin["info_sha256"]:
        raise DatasetError(f"{origin['path']}/{INFO_FILE}: info_sha256: found {origin['info_sha256'][:12]}; allowed: "
                           f"{str(have.get('info_sha256'))[:12]} (the recording changed since the dataset imported it: "
                           "--dataset NEW imports it afresh)")


def _drop_leftovers(ds: Dataset) -> None:
    """A killed import's episode in progress: every file it could have left is rebuilt from the recording, so it
    goes (under the lock, before the next index is taken), and the episode is imported again with the same index."""
    folder = ds.root / fmt.INPROGRESS_DIR
    for path in sorted(folder.glob(f"*{fmt.EPISODE_SUFFIX}")) if folder.is_dir() else []:
        path.unlink()


def _import_episode(ds: Dataset, rec: RecordingSource, episode: RecordedEpisode, table: RecordingTable,
                    origin: dict[str, Any], fps: float) -> ImportedEpisode:
    where = f"{rec.root} (episode {episode.index})"
    timing = examine(episode.timestamps, fps, TOLERANCE_S, where)
    action = table.convert(episode.action, rec.features[table.action_feature].names)
    qpos = table.convert(episode.state, rec.features[table.state_feature].names, measured=True)
    instruction = " / ".join(episode.tasks)
    recording = {**origin, "episode_index": episode.index, "fps": fps,
                 "features": {"action": table.action_feature, "qpos": table.state_feature,
                              **{f"images/{cam}": key for cam, key in sorted(rec.cameras.items())}},
                 "table": table.describe(), "timing": timing.to_json(), "tasks": list(episode.tasks),
                 "cameras": {cam: {"feature": key, "intrinsics": None} for cam, key in sorted(rec.cameras.items())}}
    start = fmt.EpisodeStart(source=fmt.REAL_SOURCE, seed=episode_seed(origin, episode.index), fps=fps,
                             versions=json.dumps(_versions(), sort_keys=True))
    camera_attrs = {cam: {"feature": key, "height": picture_size(rec.features[key])[0],
                          "width": picture_size(rec.features[key])[1], "intrinsics_known": False}
                    for cam, key in rec.cameras.items()}
    frames = len(episode.timestamps)
    with ds.begin_episode(start, camera_attrs=camera_attrs) as writer:
        cams = sorted(rec.cameras)
        for lo in range(0, frames, FRAMES_PER_READ):
            part = _slice(episode, lo, lo + FRAMES_PER_READ)
            images = {cam: rec.frames(part, cam) for cam in cams}
            for t in range(lo, min(frames, lo + FRAMES_PER_READ)):
                writer.append(fmt.Tick(timestamp=float(episode.timestamps[t]), action=action[t], state=None,
                                       qpos=qpos[t], images={cam: images[cam][t - lo] for cam in cams} or None))
        record = writer.finish({}, {}, success=False,
                               extra_attrs={fmt.INSTRUCTION_ATTR: instruction, fmt.RECORDING_ATTR: recording})
    return ImportedEpisode(episode.index, record.index, frames, timing, instruction)


def _slice(episode: RecordedEpisode, lo: int, hi: int) -> RecordedEpisode:
    return replace(episode, start=episode.start + lo, timestamps=episode.timestamps[lo:hi])
