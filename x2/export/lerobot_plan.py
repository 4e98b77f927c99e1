"""What a LeRobot export will contain (no LeRobot import here).

`plan_export` decides, before anything is written, what every frame holds: the features, from the manifest
and the export's prologue (x2.export.sources: the cameras, the arms with per-arm labels, the first episode's
stored size and objects), and how x2's subtask labels become LeRobot's int64 `subtask_index` (see
`SubtaskCodes`), per-arm labels (two or more arms, x2.export.episode_arrays.arm_labels) one int64
`subtask_index.<arm>` per arm, same codes. `plan_episode` then reads one episode when its turn comes and
refuses what LeRobot could not represent faithfully: an fps that is not a whole number, sim-time ticks that
are not `frame_index / fps`, labels outside the DAG. With `environment_state` asked for, every frame's object
poses become `observation.environment_state` (`environment_state`): the objects must be the same, in the same
order, in every exported episode. An exported camera whose depth the first episode stores (`x2 render --streams
...,depth`) also gets LeRobot 0.6's depth feature `observation.images.<cam>_depth` ((H, W, 1), `info.is_depth_map`,
float metres, encoded by LeRobot's depth encoder) and its per-frame extrinsics `observation.extrinsics.<cam>`
((16,) float32, the 4x4 camera (OpenCV axes) to world, row by row) (x2.export.sensor_streams).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Floats, Image
from x2.base.errors import ExportError
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.envspec.action import ActionLayout
from x2.envspec.ee_action import TCP_FIELDS, EELayout
from x2.export.episode_arrays import arm_labels, ee_action_column
from x2.export.lerobot_language import subtask_texts
from x2.export.provenance import Json
from x2.export.sensor_streams import (
    DEPTH_SUFFIX,
    SensorStreams,
    blocks,
    check_streams,
    extrinsics,
    lens,
    stored_streams,
)
from x2.export.sources import ExportSources
from x2.policy.protocol import OBS_EXTRINSICS_PREFIX, VELOCITY_SUFFIX
from x2.recorded.ee_actions import base_frame_poses
from x2.recorded.frames import DEFAULT_SIZE, episode_frames
from x2.sim.camera import ImageSize

# Sim time is accumulated in float64 (865 ticks drift ~1e-11 s); LeRobot's own sync tolerance is 1e-4 s.
TICK_TOLERANCE_S = 1e-4
STATE, ACTION, SUBTASK = "observation.state", "action", "subtask_index"
ENV_STATE = "observation.environment_state"  # LeRobot's name for low-dim world state (its policies read it)
POSE_FIELDS = TCP_FIELDS  # one object's 7 columns, as /observations/object_poses (a tool's pose's too)
IMAGE_PREFIX = "observation.images."
DONE, UNFINISHED = "done", "unfinished"
Codes = npt.NDArray[np.int64]  # exported subtask codes (SubtaskCodes)
Frame = dict[str, npt.NDArray[np.generic] | str]  # one `add_frame` dict: feature -> its row, "task" -> text


class DepthInfo(TypedDict):
    is_depth_map: bool


class Feature(TypedDict):
    """One entry of LeRobot's feature spec (`LeRobotDataset.create(features=...)`)."""

    dtype: str
    shape: tuple[int, ...]
    names: list[str] | None
    info: NotRequired[DepthInfo]  # a depth map's (LeRobot 0.6: `is_depth_map`)


EXTRINSICS_PREFIX = OBS_EXTRINSICS_PREFIX  # (what x2 eval sends a policy that reads it: x2/policy/protocol.py)
EXTRINSICS_NAMES = [f"T{r}{c}" for r in range(4) for c in range(4)]


def depth_feature(camera: str) -> str:
    """LeRobot 0.6's depth feature of a camera (its docs' `observation.images.<cam>_depth`)."""
    return f"{IMAGE_PREFIX}{camera}{DEPTH_SUFFIX}"


def arm_feature(arm: str) -> str:
    """The per-arm subtask feature: `subtask_index` namespaced by the arm, as `observation.images.<cam>`."""
    return f"{SUBTASK}.{arm}"


@dataclass(frozen=True)
class LeRobotOptions:
    size: ImageSize | None = None  # every stream's size; None: the stored size, else x2 render's default
    repo_id: str | None = None  # None: x2/<dataset>
    environment_state: bool = False  # add observation.environment_state (every object's pose, privileged)
    ee_state: bool = False  # observation.state gains each arm's tcp pose (base frame) after the joints
    velocity_state: bool = False  # observation.state gains the joints' velocities (qvel) after their positions
    # stored depth exported (LeRobot's depth feature); False leaves it out, as LeRobot's ACT and diffusion need: their
    # ResNets take every visual feature as RGB
    depth: bool = True


@dataclass(frozen=True)
class SubtaskCodes:
    """x2's `/labels/subtask_index` -> the exported int64 `subtask_index`.

    x2 numbers the DAG's nodes 0..N-1, uses N for "done" (after the task succeeded) and -1 for
    "unfinished" (after the last completion of an episode that did not succeed). The export keeps 0..N
    and maps -1 to N + 1, so every value indexes `names` (nodes, then "done", then "unfinished") and
    can be used as a class index or an embedding row without special-casing a negative value."""

    nodes: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.nodes, DONE, UNFINISHED)

    def encode(self, labels: npt.NDArray[np.generic], where: str, path: str = fmt.SUBTASK_INDEX) -> Codes:
        values = np.asarray(labels, dtype=np.int64)
        bad = values[(values < -1) | (values > len(self.nodes))]
        if bad.size:
            raise ExportError(f"{where}: {path}: found {int(bad.flat[0])}; allowed: -1 (unfinished), "
                              f"0..{len(self.nodes) - 1} ({', '.join(self.nodes)}) or {len(self.nodes)} (done)")
        return np.where(values == -1, len(self.nodes) + 1, values)

    def describe(self) -> dict[str, Json]:
        """For meta/x2.json: the names each exported value stands for and where x2's values went."""
        n = len(self.nodes)
        return {"names": list(self.names), "x2_to_export": {**{str(i): i for i in range(n + 1)}, "-1": n + 1},
                "note": f"{n} = done (after success), {n + 1} = unfinished (x2's -1: after the last "
                        "completion of an episode that did not succeed)"}


@dataclass(frozen=True)
class Images:
    """The camera streams of the export: which cameras, at which size, and why those."""

    cameras: tuple[str, ...]
    size: ImageSize | None
    reason: str

    def key(self, camera: str) -> str:
        return f"{IMAGE_PREFIX}{camera}"


@dataclass(frozen=True)
class EpisodePlan:
    """One episode's frames as they are written (read when its turn comes, let go after)."""

    record: EpisodeRecord
    frames: int
    task: str  # the episode's instruction, every frame's LeRobot "task"
    subtask_index: Codes  # (T,) int64, already encoded (SubtaskCodes)
    labels: tuple[str, ...]  # (T,) every frame's subtask text (lerobot_language.subtask_texts)
    state: Floats  # (T, J) float32 observations/qpos, as the file has it
    action: Floats  # (T, A) float32
    arm_subtask_index: Codes | None = None  # (T, arms) int64, encoded; None without per-arm labels
    environment_state: Floats | None = None  # (T, K * 7) float32 object poses; None unless asked for


@dataclass(frozen=True)
class ExportPlan:
    """What every frame of the export holds (the episodes themselves are planned one by one: `plan_episode`)."""

    dataset: Dataset
    fps: int
    joint_names: tuple[str, ...]
    action_names: tuple[str, ...]
    codes: SubtaskCodes
    images: Images
    arms: tuple[str, ...] = ()  # the arms of the subtask_index.<arm> features (none: no such features)
    objects: tuple[str, ...] = ()  # the objects of observation.environment_state (none: no such feature)
    # False for real recordings (source real): no task labelled them, so the export has no subtask_index feature
    # and no language rows (nothing is invented for them)
    labelled: bool = True
    depth: tuple[str, ...] = ()  # cameras whose stored depth is exported (x2.export.sensor_streams)
    depth_lens: dict[str, dict[str, Json]] = field(default_factory=dict)  # their K at the size, from the first episode
    # LeRobot's depth encoder's code step in log(d + depth_shift) (x2.export.lerobot sets both; the read-back bound)
    depth_step: float = 0.0
    depth_shift: float = 0.0
    # The encoder's range (m): a depth outside it is written as its bound, so a pixel that sees nothing (MuJoCo's far
    # clip, tens of metres) becomes depth_max. Clipped before add_frame, so the read-back compares the same values.
    depth_min: float = 0.0
    depth_max: float = math.inf
    action_kind: str = "joint"  # x2/export/request.py's ACTION_KINDS: `action` as end-effector actions, else joints
    ee_state: bool = False  # joint_names end with each arm's tcp pose (`<arm>.x` .. `<arm>.qz`, base frame)
    velocity_state: bool = False  # the joints are followed by their velocities (`<joint>.vel`), before any tcp pose

    @property
    def environment_state_names(self) -> list[str]:
        return [f"{obj}.{field}" for obj in self.objects for field in POSE_FIELDS]

    def features(self) -> dict[str, Feature]:
        """LeRobot's feature spec (`LeRobotDataset.create(features=...)`)."""
        out: dict[str, Feature] = {
            STATE: {"dtype": "float32", "shape": (len(self.joint_names),), "names": list(self.joint_names)},
            ACTION: {"dtype": "float32", "shape": (len(self.action_names),), "names": list(self.action_names)},
        }
        if self.labelled:
            out[SUBTASK] = {"dtype": "int64", "shape": (1,), "names": None}
        for arm in self.arms:
            out[arm_feature(arm)] = {"dtype": "int64", "shape": (1,), "names": None}
        if self.objects:
            names = self.environment_state_names
            out[ENV_STATE] = {"dtype": "float32", "shape": (len(names),), "names": names}
        size = self.images.size
        for cam in self.images.cameras:
            assert size is not None
            out[self.images.key(cam)] = {"dtype": "video", "shape": (size.height, size.width, 3),
                                         "names": ["height", "width", "channels"]}
        for cam in self.depth:
            assert size is not None
            out[depth_feature(cam)] = {"dtype": "video", "shape": (size.height, size.width, 1),
                                       "names": ["height", "width", "channels"], "info": {"is_depth_map": True}}
            out[EXTRINSICS_PREFIX + cam] = {"dtype": "float32", "shape": (16,), "names": EXTRINSICS_NAMES}
        return out

    def _depth_of(self, ep: Episode) -> Iterator[dict[str, npt.NDArray[np.generic]]]:
        """Per frame, each depth camera's (H, W, 1) float32 metres, clipped to [depth_min, depth_max], and (16,)
        float32 extrinsics."""
        size = self.images.size
        assert size is not None
        check_streams(ep, SensorStreams(self.depth))
        poses = {c: extrinsics(ep, c).reshape(-1, 16).astype(np.float32) for c in self.depth}
        reads = {c: blocks(ep, fmt.depth_path(c), size) for c in self.depth}
        t = 0
        while t < ep.frames:
            block = {c: next(reads[c]) for c in self.depth}
            for i in range(len(block[self.depth[0]])):
                yield {**{depth_feature(c): np.clip(np.asarray(block[c][i][..., None], np.float32),
                                                    self.depth_min, self.depth_max) for c in self.depth},
                       **{EXTRINSICS_PREFIX + c: poses[c][t + i] for c in self.depth}}
            t += len(block[self.depth[0]])

    def frames_of(self, ep: Episode, plan: EpisodePlan) -> Iterator[Frame]:
        """`add_frame` dicts of one episode, in order: every feature at its exact dtype and shape, + task."""
        qpos, action = plan.state, plan.action
        subtask = plan.subtask_index.reshape(-1, 1)
        pictures: Iterator[dict[str, Image]] | None = None
        if self.images.cameras:
            pictures = episode_frames(ep, self.images.cameras, self.images.size)
        depths = self._depth_of(ep) if self.depth else None
        for t in range(plan.frames):
            frame: Frame = {STATE: qpos[t], ACTION: action[t], "task": plan.task}
            if self.labelled:
                frame[SUBTASK] = subtask[t]
            if plan.arm_subtask_index is not None:
                for a, arm in enumerate(self.arms):
                    frame[arm_feature(arm)] = plan.arm_subtask_index[t, a:a + 1]
            if plan.environment_state is not None:
                frame[ENV_STATE] = plan.environment_state[t]
            if pictures is not None:
                shot = next(pictures)
                for cam in self.images.cameras:
                    frame[self.images.key(cam)] = shot[cam]
            if depths is not None:
                frame.update(next(depths))
            yield frame


def choose_images(sources: ExportSources, size: ImageSize | None) -> Images:
    """The cameras the prologue chose (what was asked, else what `x2 render` already stored: no second
    rendering, else the render pass's defaults), at one size: --size, else the stored one, else x2
    render's default."""
    request = sources.request
    if request.state_only:
        if request.cameras:
            raise ExportError(f"--cameras: found {','.join(request.cameras)} with --state-only; "
                              "allowed: one of them (state-only exports have no images)")
        return Images((), None, "state only")
    stored = sources.first.stored
    chosen, why = sources.cameras, sources.cameras_reason
    if size is not None:
        pick, size_why = size, "--size"
    elif (stored_size := next((stored[c] for c in chosen if c in stored), None)) is not None:
        pick, size_why = stored_size, "stored in the episodes"
    else:
        pick, size_why = DEFAULT_SIZE, "x2 render's default"
    if pick.height % 2 or pick.width % 2:
        raise ExportError(f"--size: found {pick}; allowed: an even height and width (LeRobot's videos are "
                          "yuv420p, which halves both)")
    duplicates = sorted({c for c in chosen if chosen.count(c) > 1})
    if duplicates:
        raise ExportError(f"--cameras: found {', '.join(duplicates)} more than once; allowed: each camera once")
    return Images(chosen, pick, f"cameras {', '.join(chosen)} ({why}) at {pick} ({size_why})")


def check_ticks(ep: Episode, fps: int) -> None:
    """Refuse an episode whose frame t was not recorded at sim time t / fps (LeRobot's timestamps are)."""
    ts = np.asarray(ep[fmt.TIMESTAMPS], dtype=np.float64)
    expected = np.arange(ts.size, dtype=np.float64) / fps
    if ts.size == 0:
        raise ExportError(f"{ep.path}: timestamps: found 0 frames; allowed: at least one")
    late = np.flatnonzero(np.abs(ts - expected) > TICK_TOLERANCE_S)
    if late.size:
        t = int(late[0])
        raise ExportError(f"{ep.path}: timestamps: found frame {t} at {ts[t]:.6f} s; allowed: frame_index / fps "
                          f"= {expected[t]:.6f} s at {fps} fps (within {TICK_TOLERANCE_S:g} s)")


def dataset_fps(ds: Dataset) -> int:
    fps = float(ds.manifest.fps)
    if not fps.is_integer():
        raise ExportError(f"{ds.root / fmt.MANIFEST_FILE}: fps: found {fps:g}; allowed: a whole number "
                          "(LeRobot stores an integer fps)")
    return int(fps)


def object_names(ep: Episode) -> tuple[str, ...]:
    """The objects of the episode's pose rows: the column's own `names`, else the root `object_names`."""
    names = ep.dataset_attrs(fmt.OBJECT_POSES).get(fmt.NAMES_ATTR)
    if names is None:
        names = ep.json_attr(fmt.OBJECT_NAMES_ATTR, None)
    return tuple(str(n) for n in names) if isinstance(names, list) else ()


def environment_state(ep: Episode, objects: Sequence[str] | None) -> tuple[tuple[str, ...], Floats]:
    """(objects, (T, K * 7) float32) from /observations/object_poses; `objects`: what an earlier episode of
    the export had (every frame of a LeRobot dataset has the same features), None for the first."""
    where, path = str(ep.path), fmt.OBJECT_POSES
    flag = "--environment-state"
    if path not in ep:
        raise ExportError(f"{where}: {path}: found missing; allowed: episodes that record object poses "
                          f"({flag} exports them)")
    shape = ep.dataset(path).shape
    if len(shape) != 3 or shape[0] != ep.frames or shape[2] != 7:
        raise ExportError(f"{where}: {path}: found shape {shape}; allowed: ({ep.frames}, K, 7)")
    if shape[1] == 0:
        raise ExportError(f"{where}: {path}: found no objects; allowed: at least one ({flag} exports object "
                          "poses, and this scene has none)")
    names = object_names(ep)
    if len(names) != shape[1] or len(set(names)) != len(names):
        raise ExportError(f"{where}: {path}: names: found {list(names)}; allowed: {shape[1]} distinct object names "
                          f"({flag} names every column by its object)")
    if objects is not None and names != tuple(objects):
        raise ExportError(f"{where}: {path}: names: found {list(names)}; allowed: {list(objects)}, as in the first "
                          f"exported episode ({flag} needs one object layout: export episodes of one world, "
                          "--episodes)")
    poses = ep[path]
    bad = ~np.isfinite(poses)
    if bad.any():
        t, k, _ = (int(i) for i in np.argwhere(bad)[0])
        raise ExportError(f"{where}: {path}: found a non-finite pose of {names[k]} at frame {t}; allowed: finite")
    return names, poses.astype(np.float32).reshape(shape[0], shape[1] * 7)


def velocities(ep: Episode, joints: int) -> npt.NDArray[np.float32]:
    """The episode's joint velocities (T, J) float32, as `/observations/qvel` stores them; refused (one line) where
    they are not there, as in a real recording that stored none."""
    if fmt.QVEL not in ep:
        raise ExportError(f"{ep.path}: {fmt.QVEL}: found missing; allowed: episodes that store the joints' velocities "
                          "(--velocity-state)")
    shape = ep.dataset(fmt.QVEL).shape
    if tuple(shape) != (ep.frames, joints):
        raise ExportError(f"{ep.path}: {fmt.QVEL}: found shape {shape}; allowed: ({ep.frames}, {joints}) "
                          "(one per joint, as qpos)")
    return np.asarray(ep[fmt.QVEL], np.float32)


def plan_episode(ep: Episode, record: EpisodeRecord, plan: ExportPlan) -> EpisodePlan:
    """One episode's frames, refused (one line) where LeRobot could not hold them faithfully; with the plan's
    objects, their poses too (`environment_state`)."""
    where, fps, ds, codes = str(ep.path), plan.fps, plan.dataset, plan.codes
    own_fps = ep.fps if fmt.FPS_ATTR in ep.attrs else fps
    if own_fps is None or float(own_fps) != fps:
        raise ExportError(f"{where}: fps: found {own_fps}; allowed: the dataset's {fps}")
    check_ticks(ep, fps)
    joints = len(ds.manifest.joint_names)
    for name, width in ((fmt.QPOS, joints), (fmt.ACTION, len(ds.manifest.action_names))):
        if name not in ep:
            raise ExportError(f"{where}: {name}: found missing; allowed: episodes recorded by x2's loop")
        shape = ep.dataset(name).shape
        if len(shape) != 2 or shape[1] != width:
            raise ExportError(f"{where}: {name}: found shape {shape}; allowed: ({ep.frames}, {width}) "
                              "(the manifest's names)")
    if ep.is_real != (not plan.labelled):
        first = "real recordings" if not plan.labelled else "labelled episodes"
        raise ExportError(f"{where}: source: found {ep.source!r}; allowed: episodes like the first exported one "
                          f"({first}: export real recordings and simulated episodes apart, --source)")
    if not plan.labelled:  # a real recording: its stored streams, no labels
        task = ep.instruction or ds.manifest.task
        return EpisodePlan(record, ep.frames, task, np.zeros(0, np.int64), (),
                           state=ep[fmt.QPOS].astype(np.float32, copy=False),
                           action=ep[fmt.ACTION].astype(np.float32, copy=False))
    if fmt.SUBTASK_INDEX not in ep:
        raise ExportError(f"{where}: {fmt.SUBTASK_INDEX}: found missing; allowed: episodes labelled by a task DAG")
    if tuple(ep.subtask_names) != codes.nodes:
        raise ExportError(f"{where}: labels/subtask_names: found {ep.subtask_names}; allowed: the dataset's DAG "
                          f"nodes {list(codes.nodes)}")
    raw = ep[fmt.SUBTASK_INDEX]
    encoded = codes.encode(raw, where)
    per_arm = arm_labels(ep, plan.arms)
    arm_index = None if per_arm is None else codes.encode(per_arm.index, where, fmt.ARM_SUBTASK_INDEX)
    if arm_index is None:
        labels = tuple(codes.names[int(v)] for v in encoded)
    else:
        labels = subtask_texts([[codes.names[int(v)] for v in column] for column in arm_index.T])
    task = ep.instruction or ds.manifest.task
    poses = environment_state(ep, plan.objects)[1] if plan.objects else None
    state = ep[fmt.QPOS].astype(np.float32, copy=False)
    if plan.velocity_state:
        state = np.concatenate([state, velocities(ep, len(ds.manifest.joint_names))], axis=1)
    if plan.ee_state:
        if fmt.EE_POSE not in ep:
            raise ExportError(f"{where}: {fmt.EE_POSE}: found missing; allowed: episodes recorded by x2's loop "
                              "(--ee-state)")
        tcp = base_frame_poses(ep).reshape(ep.frames, -1).astype(np.float32)
        state = np.concatenate([state, tcp], axis=1)
    action = ep[fmt.ACTION].astype(np.float32, copy=False) if plan.action_kind == "joint" else \
        ee_action_column(ep, plan.action_kind)[0]
    return EpisodePlan(record, ep.frames, task, encoded, labels, state=state, action=action,
                       arm_subtask_index=arm_index, environment_state=poses)


def plan_export(sources: ExportSources, options: LeRobotOptions) -> ExportPlan:
    """The export's features, from the manifest and the prologue; the first episode fixes the objects (with
    `environment_state`: `plan_episode` holds the others to them)."""
    ds = sources.dataset
    fps = dataset_fps(ds)
    codes = SubtaskCodes(tuple(str(n) for n in ds.manifest.dag.get("nodes", [])))
    objects = environment_state(sources.first_episode, None)[0] if options.environment_state else ()
    images = choose_images(sources, options.size)
    names = sources.column_names()
    labelled = not sources.first_episode.is_real
    first = sources.first_episode
    depth = stored_streams(first, images.cameras).depth if options.depth else ()
    lenses = {c: lens(first, fmt.depth_path(c), images.size) for c in depth if images.size is not None}
    kind = sources.request.action
    action_names = names[fmt.ACTION]
    if kind != "joint":
        if not labelled:
            ee_action_column(sources.first_episode, kind)  # (refused: a real recording has no world)
        layout = ActionLayout.from_names(action_names)
        if layout is None:
            raise ExportError(f"{ds.root}: action names: found {list(action_names)}; allowed: x2's action layout "
                              f"(per arm its joints, then <arm>_gripper) for --action {kind}")
        action_names = EELayout(kind, tuple(a.name for a in layout.arms), layout.base is not None).names
    joint_names = names[fmt.QPOS]
    if options.velocity_state:
        if not labelled:
            velocities(first, len(joint_names))  # (refused when a real recording stored none)
        joint_names = (*joint_names, *(n + VELOCITY_SUFFIX for n in joint_names))
    if options.ee_state:
        if not labelled:
            raise ExportError(f"{sources.first_episode.path}: --ee-state: found a real recording; allowed: simulated "
                              "episodes (a real recording has no world to place its tool centre points in)")
        arms = ActionLayout.from_names(names[fmt.ACTION])
        if arms is None:
            raise ExportError(f"{ds.root}: action names: found {list(names[fmt.ACTION])}; allowed: x2's action "
                              "layout (per arm its joints, then <arm>_gripper) for --ee-state")
        joint_names = (*joint_names, *(f"{a.name}.{f}" for a in arms.arms for f in TCP_FIELDS))
    return ExportPlan(ds, fps, joint_names, action_names, codes, images, sources.arms, objects, labelled,
                      depth=depth, depth_lens=lenses, action_kind=kind, ee_state=options.ee_state,
                      velocity_state=options.velocity_state)
