"""`x2 export lerobot`: the one module that imports LeRobot, always lazily (importing x2 imports no torch).

Everything goes through LeRobot 0.6.1's own writer and reader:

1. `LeRobotDataset.create` / `add_frame` / `save_episode` / `finalize` write the frames into the staged
   folder (`x2.files.staging.staged`): state, action, subtask_index (and subtask_index.<arm> per arm with
   per-arm labels), camera videos, task, and with --environment-state the object poses.
2. The subtask segments become the `language_persistent` column through LeRobot's own
   `LanguageColumnsWriter` (fed from a staging folder the way its annotation pipeline feeds it; our
   `subtask_index` column is kept), and info.json gets LeRobot's `language_feature_info()`.
3. meta/stats.json gets a floor under each state, environment-state and action channel's spread
   (`x2.export.lerobot_stats`: near-constant channels would otherwise normalise to noise), read and written
   with LeRobot's own `load_stats` / `write_stats`; `meta/x2.json` records where it all came from
   (`x2.export.provenance`) and which channels were raised.
4. `LeRobotDataset(root, video_backend="pyav")` reloads the folder; `x2.export.lerobot_check.compare`
   holds what it reads, one episode at a time, against what was written (`WrittenEpisode`: runs of the labels,
   digests of the float columns, the first and last source frames spilled beside: pictures within a few levels,
   depth maps within the depth encoder's quantisation, `x2.export.lerobot_check.depth_bound`). Only then is the
   folder renamed onto the target.

The episodes are read one at a time in export order (x2.export.sources) and planned as their turn comes
(`plan_episode`): no more than one episode's arrays are held, however many are exported.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from x2.base.errors import ExportError
from x2.base.scheduling import keeps_scheduling
from x2.datasets.untrusted import json_loads
from x2.export.lerobot_check import EdgeStore, EpisodeReadback, Pixels, Readback, WrittenEpisode, compare
from x2.export.lerobot_language import ARM_JOIN, SUBTASK_STYLE, subtask_rows
from x2.export.lerobot_plan import (
    ACTION,
    ENV_STATE,
    EXTRINSICS_PREFIX,
    POSE_FIELDS,
    STATE,
    SUBTASK,
    ExportPlan,
    LeRobotOptions,
    arm_feature,
    depth_feature,
    plan_episode,
    plan_export,
)
from x2.export.lerobot_stats import FLOOR as STATS_FLOOR
from x2.export.lerobot_stats import floor_spread
from x2.export.provenance import Json, Provenance
from x2.export.request import ExportRequest, ProgressCallback, ProgressTracker, ignore_progress
from x2.export.sources import ExportSources, run_export
from x2.files.atomic import write_text
from x2.files.hf_cache import hf_datasets_cache
from x2.files.staging import staged

if TYPE_CHECKING:
    from lerobot.configs.video import DepthEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

X2_META = "meta/x2.json"
# inside the staged folder, removed before it is renamed into place
_LANGUAGE_STAGING, _HF_CACHE, _EDGES = ".x2-language-staging", ".x2-hf-cache", ".x2-edges"


@dataclass(frozen=True)
class LeRobotExport:
    target: Path
    repo_id: str
    episodes: int
    frames: int
    images: str
    bytes: int
    plan: ExportPlan
    written: tuple[WrittenEpisode, ...] = ()  # what the read-back check held each episode to


@contextlib.contextmanager
def quiet_lerobot() -> Iterator[None]:
    """Keep the encoder's banner and HF's per-call bars off the user's terminal (our bar is the progress).

    SVT-AV1 prints its configuration to stderr unless SVT_LOG says otherwise (an SVT_LOG the user set is
    kept); HF datasets draws a "Map" bar per episode; LeRobot hands libav back its default stderr
    logger, which chats at INFO level ("moving the moov atom"), so libav is held at ERROR."""
    import av
    import datasets

    av.logging.set_libav_level(av.logging.ERROR)

    svt = os.environ.get("SVT_LOG")
    os.environ.setdefault("SVT_LOG", "1")
    bars = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if bars:
            datasets.enable_progress_bars()
        if svt is None:
            os.environ.pop("SVT_LOG", None)


def depth_encoder() -> DepthEncoderConfig:
    """LeRobot's depth encoder as its defaults have it (lossless HEVC of 12-bit log-quantised depth), with x265's
    own log held at errors (it prints its whole configuration to stderr for every video otherwise)."""
    from lerobot.configs.video import DepthEncoderConfig, depth_encoder_defaults

    enc = depth_encoder_defaults()
    params = enc.extra_options.get("x265-params", "")
    return DepthEncoderConfig(extra_options={**enc.extra_options, "x265-params": f"{params}:log-level=error"
                                             if params else "log-level=error"})


def _write_frames(plan: ExportPlan, sources: ExportSources, root: Path, repo_id: str, tracker: ProgressTracker,
                  edges: EdgeStore) -> list[WrittenEpisode]:
    """create / add_frame / save_episode / finalize, one episode read and planned at a time; returns what
    the check needs of each episode, and spills the source pixels of its first and last frame per camera
    (what the check compares the decoded videos with) to `edges`."""
    import datasets
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    # LeRobot logs each frame its image threads fail to write (a full disk: one line per frame) and raises
    # afterwards; x2's one error line says it once, and the read-back check judges the export.
    lerobot_log = logging.getLogger("lerobot")
    lerobot_log.addHandler(logging.NullHandler())
    lerobot_log.propagate = False
    images = plan.images
    ds: LeRobotDataset | None = None  # created once the first episode is planned
    written: list[WrittenEpisode] = []
    # Everything that may start the encoder (create checks it, save_episode encodes): SVT-AV1 would make its
    # threads and this one real-time (x2/base/scheduling.py).
    with keeps_scheduling():
        try:
            for source in sources.written():
                episode = plan_episode(source.episode, source.record, plan)  # (refused before any of it is written)
                if ds is None:
                    try:
                        depth = {"depth_encoder": depth_encoder()} if plan.depth else {}
                        ds = LeRobotDataset.create(repo_id, fps=plan.fps, features=plan.features(), root=root,
                                                   robot_type=plan.dataset.manifest.robot,
                                                   use_videos=bool(images.cameras), video_backend="pyav", **depth)
                    except ValueError as exc:  # LeRobot checks its default encoder (libsvtav1 in PyAV) right here
                        found = " ".join(str(exc).split())
                        raise ExportError(f"LeRobot writer (video encoder): found {found}; allowed: a PyAV with "
                                          "LeRobot's default codec (libsvtav1), or --state-only") from None
                ends: dict[int, dict[str, Pixels]] = {}  # the first and last frame's pictures and depth maps
                for t, frame in enumerate(plan.frames_of(source.episode, episode)):
                    if t in (0, episode.frames - 1):  # (a depth map without its channel, as LeRobot reads it back)
                        ends[t] = {**{c: np.array(frame[images.key(c)]) for c in images.cameras},
                                   **{depth_feature(c): np.array(frame[depth_feature(c)])[..., 0] for c in plan.depth}}
                    ds.add_frame(frame)
                    tracker.advance(1)
                # LeRobot's own loader turns HF's bars back on whenever it ran (SuppressProgressBars).
                datasets.disable_progress_bars()
                # One camera after the other: parallel encoding forks a process pool from this one, which
                # holds threads (the renderer's, torch's), and fork() with threads can deadlock the child.
                # SVT-AV1 spreads one video over the cores anyway.
                ds.save_episode(parallel_encoding=False)
                first, last = ends.get(0, {}), ends.get(episode.frames - 1, {})
                edges.append({c: (first[c], last[c]) for c in edges.cameras})
                written.append(WrittenEpisode.of(episode))
                tracker.episode_done()
        except BaseException:
            if ds is not None:
                with contextlib.suppress(Exception):  # close LeRobot's writers; the error that stopped us is the news
                    ds.finalize()
            raise
        assert ds is not None  # (the prologue refuses an export of no episodes)
        ds.finalize()
    return written


def _write_language(plan: ExportPlan, written: list[WrittenEpisode], root: Path) -> None:
    """The `language_persistent` (and empty `language_events`) columns, written by LeRobot's own writer."""
    from lerobot.annotations.steerable_pipeline.reader import iter_episodes
    from lerobot.annotations.steerable_pipeline.staging import EpisodeStaging
    from lerobot.annotations.steerable_pipeline.writer import LanguageColumnsWriter
    from lerobot.datasets.language import language_feature_info

    staging = root / _LANGUAGE_STAGING
    for i, episode in enumerate(written):
        EpisodeStaging(staging, i).write("plan", subtask_rows(episode.labels.expand(), plan.fps))
    records = list(iter_episodes(root))
    LanguageColumnsWriter(drop_existing_subtask_index=False).write_all(records, staging, root)
    shutil.rmtree(staging)
    info_path = root / "meta" / "info.json"
    info = json_loads(info_path.read_text(encoding="utf-8"))
    info["features"].update(language_feature_info())
    write_text(info_path, json.dumps(info, indent=4) + "\n")


def _floor_stats(plan: ExportPlan, root: Path) -> dict[str, list[int]]:
    from lerobot.datasets.io_utils import load_stats, write_stats

    stats = load_stats(root)
    assert stats is not None  # (finalize wrote them)
    raised = floor_spread(stats, [STATE, ACTION, *([ENV_STATE] if plan.objects else [])])
    write_stats(stats, root)
    return raised


def _write_x2_meta(plan: ExportPlan, sources: ExportSources, root: Path, repo_id: str,
                   raised: dict[str, list[int]]) -> None:
    import lerobot

    size = plan.images.size
    extra: dict[str, Json] = {}
    if plan.images.cameras:
        extra["camera_lenses"] = sources.camera_lenses(plan.images.cameras, {})  # (made before the frames)
    if plan.arms:  # only with per-arm features: an export without them keeps its meta/x2.json as it was
        extra["arm_subtask_index"] = {
            "features": {arm: arm_feature(arm) for arm in plan.arms},
            "codes": "as subtask_index (names above), per arm: the subtask that arm works on",
            "language": f"each frame's subtask text is the arms' distinct subtask names in arm order, joined "
                        f"{ARM_JOIN!r}; one name when the arms agree; a done arm left out while another works"}
    if plan.depth:  # only with stored depth: an export without it keeps its meta/x2.json as it was
        enc = depth_encoder()
        extra["depth"] = {
            "features": {c: depth_feature(c) for c in plan.depth},
            "extrinsics": {c: EXTRINSICS_PREFIX + c for c in plan.depth},
            "lens": dict(plan.depth_lens),
            "encoder": {"vcodec": enc.vcodec, "pix_fmt": enc.pix_fmt, "depth_min": enc.depth_min,
                        "depth_max": enc.depth_max, "shift": enc.shift, "use_log": enc.use_log},
            "source": "/observations/depth/<cam> (x2 render --streams), metres along the optical axis; extrinsics: "
                      "4x4 camera (OpenCV axes) to world, row by row, float32",
            "clipped": "depths clipped to [depth_min, depth_max] before encoding, as the encoder would: a pixel that "
                       "sees nothing (the renderer's far clip) reads back as depth_max"}
    if plan.objects:  # only when asked for: an export without it keeps its meta/x2.json as it was
        # Privileged: the simulator's exact object poses, which a deployed robot does not observe. A policy
        # trained on them is a low-dim (state-based) baseline; `x2 eval` gives them only to such a policy.
        extra["environment_state"] = {
            "feature": ENV_STATE, "privileged": True, "objects": list(plan.objects),
            "layout": f"per object: {' '.join(POSE_FIELDS)}", "frame": "world; quaternion w x y z",
            "source": "/observations/object_poses (float64, stored as float32)"}
    if plan.ee_state:  # only when asked for: an export without it keeps its meta/x2.json as it was
        extra["ee_state"] = {
            "feature": STATE, "layout": "the joints (observations/qpos), then per arm its tool centre point: "
                                        f"{' '.join(POSE_FIELDS)}",
            "frame": "the robot's base frame (x2/envspec/ee_action.py), quaternion w x y z",
            "source": "/observations/ee_pose moved to the base frame (x2/recorded/ee_actions.py, base_frame_poses)"}
    if plan.velocity_state:  # likewise
        extra["velocity_state"] = {
            "feature": STATE, "layout": "the joints (observations/qpos), then their velocities (<joint>.vel, rad/s or "
                                        "m/s)" + (", then the tool centre points" if plan.ee_state else ""),
            "source": "/observations/qvel (the velocities recorded with each frame, float32)"}
    facts = sources.provenance(
        format={"name": "lerobot", "codebase_version": "v3.0", "lerobot_version": lerobot.__version__,
                "repo_id": repo_id},
        images={"cameras": list(plan.images.cameras), "size": None if size is None else [size.height, size.width],
                "choice": plan.images.reason},
        subtask_index=plan.codes.describe() if plan.labelled else None,
        language={"column": "language_persistent", "style": SUBTASK_STYLE,
                  "rows": "one per segment start, content = the subtask name (names above)"} if plan.labelled
        else None,
        task="each episode's instruction (root attr instruction), else the dataset's task name",
        stats={"spread_floor": STATS_FLOOR, "raised": {feature: [*channels] for feature, channels in raised.items()},
               "rule": "in meta/stats.json, for state, environment state and action: a channel whose std was below "
                       "spread_floor (constant up to the simulator's jitter) has std = spread_floor and min/max, "
                       "q01/q99, q10/q90 at least spread_floor either side of their middle; raised: those channels' "
                       "indices per feature; every other channel is LeRobot's own"},
        timestamps="frame_index / fps; every source frame was recorded at that sim time" if plan.labelled else
        "frame_index / fps; every source frame was recorded at that time (a real recording's own timestamps, "
        "within 0.1 ms: one with gaps or jitter is refused)",
        **extra,
    )
    write_text(root / X2_META, json.dumps(facts, indent=1, sort_keys=True) + "\n")


def _tidy(root: Path) -> None:
    """Videos readable by everyone (LeRobot encodes into mkdtemp folders, 0700/0600); LeRobot's emptied
    PNG staging folders go."""
    for mp4 in (root / "videos").rglob("*.mp4") if (root / "videos").is_dir() else ():
        mp4.chmod(0o644)
    images = root / "images"
    if images.is_dir() and not any(p.is_file() for p in images.rglob("*")):
        shutil.rmtree(images)


@contextlib.contextmanager
def reading_back(plan: ExportPlan, root: Path, repo_id: str) -> Iterator[Readback]:
    """What LeRobot's `LeRobotDataset` reads from `root`, one episode at a time (`Readback.per_episode`, read
    while this is open): per frame the columns and the subtask `language_render.active_at` finds, per
    episode its first and last frames decoded (pyav)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root = Path(root)
    with hf_datasets_cache(root / _HF_CACHE):
        # (depth in float metres, as x2 wrote it; LeRobot's default gives whole millimetres)
        ds = LeRobotDataset(repo_id, root=root, video_backend="pyav", return_uint8=True, depth_output_unit="m")
        yield Readback(ds.meta.total_episodes, ds.meta.total_frames, int(ds.meta.fps), _episodes_back(plan, ds))


def _episodes_back(plan: ExportPlan, ds: LeRobotDataset) -> Iterator[EpisodeReadback]:
    """Each episode's rows (the range LeRobot's episode metadata gives it) and edge frames, in order."""
    from lerobot.datasets import language_render

    per_arm = [arm_feature(arm) for arm in plan.arms if arm_feature(arm) in ds.meta.features]
    env = [ENV_STATE] if plan.objects and ENV_STATE in ds.meta.features else []
    labels = [SUBTASK] if plan.labelled else []
    numbers = ds.select_columns(["episode_index", "frame_index", "timestamp", "task_index", *labels, STATE,
                                 ACTION, *per_arm, *env]).with_format("numpy")
    language = ds.select_columns(["language_persistent"]).with_format(None) if plan.labelled else None
    task_names = [str(name) for name in ds.meta.tasks.index]
    for i in range(ds.meta.total_episodes):
        meta = ds.meta.episodes[i]
        start, stop = int(meta["dataset_from_index"]), int(meta["dataset_to_index"])
        rows = numbers[start:stop]
        stamps = rows["timestamp"]
        subtasks: list[str | None] = []
        if language is not None:
            persistent = language[start:stop]["language_persistent"]
            for r, t in enumerate(stamps.tolist()):
                row = language_render.active_at(float(t), persistent=persistent[r], style=SUBTASK_STYLE)
                subtasks.append(None if row is None else row["content"])
        back = EpisodeReadback(
            length=int(meta["length"]), episode_index=rows["episode_index"], frame_index=rows["frame_index"],
            timestamp=stamps, task=[task_names[int(k)] for k in rows["task_index"]], subtask=subtasks,
            subtask_index=rows[SUBTASK] if plan.labelled else np.zeros(0, np.int64), state=rows[STATE],
            action=rows[ACTION],
            arm_subtask_index={key: rows[key] for key in per_arm}, environment_state=rows[ENV_STATE] if env else None)
        if stop > start:
            first, last = ds[start], ds[stop - 1]
            back.edge_task = (str(first["task"]), str(last["task"]))
            for cam in plan.images.cameras:
                key = plan.images.key(cam)
                back.edges[cam] = (first[key].permute(1, 2, 0).numpy(), last[key].permute(1, 2, 0).numpy())
            for cam in plan.depth:
                key = depth_feature(cam)
                back.edges[key] = (first[key].numpy().reshape(first[key].shape[-2:]),
                                   last[key].numpy().reshape(last[key].shape[-2:]))
        yield back


def _folder_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def export_lerobot(request: ExportRequest, options: LeRobotOptions = LeRobotOptions(),
                   progress: ProgressCallback = ignore_progress) -> LeRobotExport:
    """Write the requested episodes as a LeRobot v3.0 dataset, read it back with LeRobot, then rename it
    into place. The first progress report ("planned") carries what the export will contain."""
    repo_id = options.repo_id or f"x2/{request.dataset.name}"
    if "/" not in repo_id or repo_id.startswith("/") or repo_id.endswith("/"):
        raise ExportError(f"--repo-id: found {repo_id!r}; allowed: owner/name, e.g. x2/{request.dataset.name}")
    return run_export(request, "lerobot", lambda sources: _export(sources, options, repo_id, progress))


def _export(sources: ExportSources, options: LeRobotOptions, repo_id: str,
            progress: ProgressCallback) -> LeRobotExport:
    plan = plan_export(sources, options)
    if plan.depth:
        from lerobot.configs.video import DEPTH_QMAX

        enc = depth_encoder()
        assert enc.use_log  # (LeRobot's default, which depth_bound's rule is for)
        step = math.log((enc.depth_max + enc.shift) / (enc.depth_min + enc.shift)) / DEPTH_QMAX
        plan = replace(plan, depth_step=step, depth_shift=enc.shift, depth_min=enc.depth_min,
                       depth_max=enc.depth_max)
    target = sources.target
    tracker = ProgressTracker(progress, len(sources.records), sources.frames)
    tracker.enter("planned", plan.images.reason)
    if plan.images.cameras:  # (asked of the first episode before the writer takes it)
        shape = plan.images.size
        sources.camera_lenses(plan.images.cameras, {} if shape is None else {c: shape for c in plan.images.cameras},
                              lambda ep: shape)  # (episode_frames reads or draws every camera at that size)
    with quiet_lerobot(), staged(target, sources.request.overwrite) as tmp:
        tracker.enter("writing")
        edges = EdgeStore(tmp / _EDGES, (*plan.images.cameras, *(depth_feature(c) for c in plan.depth)))
        written = _write_frames(plan, sources, tmp, repo_id, tracker, edges)
        if plan.labelled:  # (a real recording has no subtasks to write)
            tracker.enter("language columns")
            _write_language(plan, written, tmp)
        raised = _floor_stats(plan, tmp)
        _write_x2_meta(plan, sources, tmp, repo_id, raised)
        _tidy(tmp)
        tracker.enter("reading back with LeRobot")
        with reading_back(plan, tmp, repo_id) as back:
            compare(plan, written, edges, back, str(target))
        shutil.rmtree(edges.folder, ignore_errors=True)
        tracker.enter("renaming into place")
        size = _folder_bytes(tmp)
    return LeRobotExport(target, repo_id, len(written), sum(w.frames for w in written), plan.images.reason, size,
                         plan, tuple(written))


def read_x2_meta(root: str | Path) -> Provenance:
    """An export's provenance (meta/x2.json)."""
    meta = json_loads((Path(root) / X2_META).read_text(encoding="utf-8"))
    if not isinstance(meta, dict):
        raise ExportError(f"{Path(root) / X2_META}: provenance: found {type(meta).__name__}; allowed: a JSON object")
    return meta
