"""The x2 dataset format in one place: names on disk, paths inside an episode, typed records, checks.

One sentence: a dataset is a folder with ``manifest.json``, the commit log ``episodes.jsonl`` and one
self-contained HDF5 file per finished episode under ``episodes/``, whose time-first datasets all have
``T`` rows. docs/format.md describes it for people; tests/test_format_module.py checks that every name
defined here is described there, and that no other module of x2 spells one of them.

Everything else in x2 reads and writes datasets through these names, the typed records (``Tick``,
``EpisodeStart``, ``EpisodeEnd``, ``Manifest``) and the writer-side checks at the bottom, which refuse
what may not go into a file before its first byte is written. A leaf: it imports nothing from x2 but
its error type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from x2.base.arrays import Image
from x2.base.errors import DatasetError

Array = npt.NDArray[Any]  # a stream, label or device array of any dtype

# x2/2: the file rebuilds its world (model_xml as stepped, the world record), seeds carry their master
# seed and slot, and everything the wall clock decides lives under /timing.
FORMAT_VERSION = "x2/2"
FORMAT_VERSION_WITHOUT_WORLDS = "x2/1"  # an older x2's: its episodes cannot rebuild their worlds
POLICY_SOURCE = "policy"  # an x2 eval rollout's source
SOURCES = ("teleop", "synth", "augment", "scripted", POLICY_SOURCE)

# ---- the dataset folder ------------------------------------------------------------------------------
MANIFEST_FILE = "manifest.json"  # dataset-level facts, written once
INDEX_FILE = "episodes.jsonl"  # the commit log, one line per committed episode
SLOTS_FILE = "slots.json"  # seed slots used per master seed
SPLITS_FILE = "splits.json"  # splits assigned after recording
LOCK_FILE = ".lock"  # held by the one writing process
SYNTH_REPORT_FILE = "synth_report.json"  # the last synthesis run's report (not data)
AUGMENTATION_REPORT_FILE = "augmentation.json"  # an augmented dataset's variants, made and rejected
EPISODES_DIR = "episodes"  # finished episodes
INPROGRESS_DIR = ".inprogress"  # the episode being recorded
RENDERING_DIR = ".rendering"  # new versions of finished episodes being rendered
STAGING_DIR = ".staging"  # episodes being built whole from finished ones
QUARANTINE_DIR = ".quarantine"  # files that no longer match their checksum (validate --repair)
SALVAGED_DIR = ".salvaged"  # unreadable or unfinished files set aside (validate --repair)
REMOVED_DIR = ".removed"  # episodes taken out by `x2 datasets rm`
REMOVAL_JOURNAL_FILE = "removing.json"  # inside REMOVED_DIR while a removal is under way
EPISODE_SUFFIX = ".h5"

_EPISODE_FILE = re.compile(r"^episode_(\d{6,})\.h5$")
# Also matches quarantined or salvaged copies, which carry suffixes after the index.
ANY_EPISODE_FILE = re.compile(r"^episode_(\d+)")


def episode_filename(index: int) -> str:
    return f"episode_{index:06d}{EPISODE_SUFFIX}"


def parse_episode_filename(name: str) -> int | None:
    match = _EPISODE_FILE.match(name)
    return int(match.group(1)) if match else None


# ---- paths inside an episode file ---------------------------------------------------------------------
TIMESTAMPS = "timestamps"  # (T,) float64 simulation time
ACTION = "action"  # (T, A) float32, the action layout of x2/envspec/action.py
STATES = "states"  # (T, D) float64, MuJoCo's integration state
OBSERVATIONS = "observations"
QPOS = "observations/qpos"  # (T, J) float32
QVEL = "observations/qvel"  # (T, J) float32
EE_POSE = "observations/ee_pose"  # (T, arms, 7) float32
OBJECT_POSES = "observations/object_poses"  # (T, K, 7) float64
IMAGES = "observations/images"  # /<cam>: (T, H, W, 3) uint8
CAMERA_POSES = "observations/camera_poses"  # /<cam>: (T, 7) float64
LABELS = "labels"
SUBTASK_INDEX = "labels/subtask_index"  # (T,) int16
ACTIVE_MASK = "labels/active_mask"  # (T, N) bool
PROGRESS = "labels/progress"  # (T,) float32
SUBTASK_NAMES_ATTR = "subtask_names"  # attr of LABELS
ARM_SUBTASK_INDEX = "labels/arm_subtask_index"  # (T, A) int16: per arm, the subtask it works on
ARM_NAMES_ATTR = "arm_names"  # attr of ARM_SUBTASK_INDEX: the arm of each column, in robot order
DAG = "dag"  # attrs nodes, edges, scores, events, failure, arms, starts
COMPLETION_FRAME = "dag/completion_frame"  # (N,) int32
DEVICE = "device"  # /<kind>/<stream>: a teleoperated episode's raw device stream
TIMING = "timing"  # /<stage>_ms (T,) float32; attrs: the wall clock's other facts
CREATED_UTC_ATTR = "created_utc"  # attr of TIMING
MISSED_SLOTS_ATTR = "missed_slots"  # attr of TIMING
AUGMENTATION = "augmentation"
ENVELOPE = "augmentation/envelope"  # (N, 7) float64: an augmented episode's swept capsules
REQUIRED_DATASETS = (TIMESTAMPS, ACTION, STATES)
UNTIMED_GROUPS = (DAG, DEVICE, AUGMENTATION)  # per-episode constants, not one row per tick


def image_path(camera: str) -> str:
    return f"{IMAGES}/{camera}"


def camera_pose_path(camera: str) -> str:
    return f"{CAMERA_POSES}/{camera}"


def label_path(name: str) -> str:
    return f"{LABELS}/{name}"


def timing_path(stage: str) -> str:
    return f"{TIMING}/{stage}_ms"


def device_path(kind: str) -> str:
    return f"{DEVICE}/{kind}"


# ---- root attributes ---------------------------------------------------------------------------------
# Every root attribute x2 writes, by name; ``EpisodeStart``/``EpisodeEnd`` below are the typed records
# behind most of them. The writer sets the first three itself.
FORMAT_ATTR, INDEX_ATTR, SUCCESS_ATTR = "x2_format", "episode_index", "success"
RESERVED_ATTRS = (FORMAT_ATTR, INDEX_ATTR, SUCCESS_ATTR)
SEED_ATTR, SOURCE_ATTR, MASTER_SEED_ATTR, SLOT_ATTR = "seed", "source", "master_seed", "slot"
SEED_ORIGIN = (MASTER_SEED_ATTR, SLOT_ATTR)  # optional: where the seed came from (see EpisodeRecord)
TASK_ATTR, ROBOT_ATTR, FPS_ATTR, SIM_DT_ATTR = "task", "robot", "fps", "sim_dt"
SCENE_VARIANT_ATTR, SPLIT_ATTR, VERSIONS_ATTR = "scene_variant", "split", "versions"
INSTRUCTION_ATTR, MODEL_XML_ATTR, WORLD_ATTR = "instruction", "model_xml", "world"
LAYOUT_ATTR, ASSETS_ATTR, ENV_ARGS_ATTR, OBJECT_NAMES_ATTR = "layout", "assets", "env_args", "object_names"
END_REASON_ATTR, MAX_PENETRATION_ATTR = "end_reason", "max_penetration_m"
PARENT_EPISODE_ATTR, AUGMENTATION_ATTR = "parent_episode", "augmentation"
MERGED_FROM_ATTR, FILTERED_FROM_ATTR = "merged_from", "filtered_from"
REJECTED_ATTR, REJECTION_REASON_ATTR, REJECTION_DETAIL_ATTR = "rejected", "rejection_reason", "rejection_detail"
TELEOP_END_ATTR, DEVICE_ATTR = "teleop_end", "device"
SAFETY_CLAMPED_ATTR, SAFETY_REJECTED_ATTR = "safety_clamped_ticks", "safety_rejected_ticks"
SYNTHESIS_ATTR = "synthesis"
RESET_LOOK_ATTR = "reset_look"  # the look a reset drew, JSON {"scenery", "look"}, when the scene draws one
# what a reset drew of the embodiment, JSON {"cameras": ..., "table_height": m} (each when drawn), when it draws any
RESET_EMBODIMENT_ATTR = "reset_embodiment"
RESET_ROLES_ATTR = "reset_roles"  # the object each role was bound to, JSON {role: object}, when the scene has roles
# an evaluated policy's rollout (source "policy"): JSON {"kind", "identity", "digest", "url", "privileged",
# "chunk_exec", "ended", "fault"}: which policy drove it and how the policy ended it, when it did
POLICY_ATTR = "policy"
ROOT_ATTRS = (
    FORMAT_ATTR, INDEX_ATTR, TASK_ATTR, INSTRUCTION_ATTR, ROBOT_ATTR, FPS_ATTR, SIM_DT_ATTR, SCENE_VARIANT_ATTR,
    SPLIT_ATTR, PARENT_EPISODE_ATTR, VERSIONS_ATTR, ENV_ARGS_ATTR, MODEL_XML_ATTR, SUCCESS_ATTR, SEED_ATTR,
    SOURCE_ATTR, MASTER_SEED_ATTR, SLOT_ATTR, WORLD_ATTR, LAYOUT_ATTR, ASSETS_ATTR, END_REASON_ATTR,
    MAX_PENETRATION_ATTR, OBJECT_NAMES_ATTR, AUGMENTATION_ATTR, MERGED_FROM_ATTR, FILTERED_FROM_ATTR,
    REJECTED_ATTR, REJECTION_REASON_ATTR, REJECTION_DETAIL_ATTR, TELEOP_END_ATTR, DEVICE_ATTR,
    SAFETY_CLAMPED_ATTR, SAFETY_REJECTED_ATTR, SYNTHESIS_ATTR, RESET_LOOK_ATTR, RESET_EMBODIMENT_ATTR,
    RESET_ROLES_ATTR, POLICY_ATTR,
)
NAMES_ATTR = "names"  # attr of action, qpos, qvel, object_poses: one name per column or row


@dataclass(frozen=True)
class EpisodeStart:
    """Root attributes known before an episode's first tick. Those left empty take the manifest's
    values (task, robot, fps). ``versions`` is JSON text, stored as given."""

    source: str
    seed: int
    task: str | None = None
    robot: str | None = None
    fps: float | None = None
    sim_dt: float = 0.0
    scene_variant: str = ""
    split: str = "train"
    versions: str | None = None
    master_seed: int | None = None
    slot: int | None = None


@dataclass(frozen=True)
class Rejection:
    """Why synthesis rejected an attempt it stores anyway (``x2 synth --keep-failed``)."""

    reason: str
    detail: str


@dataclass(frozen=True)
class TeleopEnd:
    """How a teleoperated episode ended and what the safety filter did."""

    ending: str
    device: str
    safety_clamped_ticks: int
    safety_rejected_ticks: int


@dataclass(frozen=True)
class EpisodeEnd:
    """Root attributes known once an episode has ended: the world it ran in, what was drawn, how it
    ended. JSON-valued ones are JSON text, written as given (so their bytes are the collector's)."""

    instruction: str
    model_xml: str
    world: str
    layout: str
    assets: str
    env_args: str
    end_reason: str
    max_penetration_m: float
    object_names: str
    rejection: Rejection | None = None
    teleop: TeleopEnd | None = None
    # synthesis only: JSON {"schedule", "motion"}, how its motions were made (a run may resume another's
    # dataset with other settings, so each episode says so itself)
    synthesis: str | None = None
    reset_look: str | None = None  # JSON {"scenery", "look"}: the look drawn at the reset, when one was
    reset_embodiment: str | None = None  # JSON {"cameras": ..., "table_height": m}: the reset's embodiment draw
    reset_roles: str | None = None  # JSON {role: object}: what the reset bound the scene's roles to, when it has any
    policy: str | None = None  # JSON: the evaluated policy that drove the episode (POLICY_ATTR)

    def attrs(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            INSTRUCTION_ATTR: self.instruction, MODEL_XML_ATTR: self.model_xml, WORLD_ATTR: self.world,
            LAYOUT_ATTR: self.layout, ASSETS_ATTR: self.assets, ENV_ARGS_ATTR: self.env_args,
            END_REASON_ATTR: self.end_reason, MAX_PENETRATION_ATTR: self.max_penetration_m,
            OBJECT_NAMES_ATTR: self.object_names,
        }
        if self.reset_look is not None:
            out[RESET_LOOK_ATTR] = self.reset_look
        if self.reset_embodiment is not None:
            out[RESET_EMBODIMENT_ATTR] = self.reset_embodiment
        if self.reset_roles is not None:
            out[RESET_ROLES_ATTR] = self.reset_roles
        if self.rejection is not None:
            out.update({REJECTED_ATTR: True, REJECTION_REASON_ATTR: self.rejection.reason,
                        REJECTION_DETAIL_ATTR: self.rejection.detail})
        if self.teleop is not None:
            out.update({TELEOP_END_ATTR: self.teleop.ending, DEVICE_ATTR: self.teleop.device,
                        SAFETY_CLAMPED_ATTR: self.teleop.safety_clamped_ticks,
                        SAFETY_REJECTED_ATTR: self.teleop.safety_rejected_ticks})
        if self.synthesis is not None:
            out[SYNTHESIS_ATTR] = self.synthesis
        if self.policy is not None:
            out[POLICY_ATTR] = self.policy
        return out


def derived_attrs(*, index: int, parent_episode: int, scene_variant: str, split: str, seed: int,
                  model_xml: str, augmentation: Mapping[str, Any]) -> dict[str, Any]:
    """Root attributes an augmented copy replaces in its parent's set (the parent's seed origin goes)."""
    return {INDEX_ATTR: index, SOURCE_ATTR: "augment", PARENT_EPISODE_ATTR: parent_episode,
            SCENE_VARIANT_ATTR: scene_variant, SPLIT_ATTR: split, SEED_ATTR: seed, MODEL_XML_ATTR: model_xml,
            AUGMENTATION_ATTR: json.dumps(augmentation, sort_keys=True)}


# ---- one tick ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Tick:
    """What the loop records at one control tick. The set of streams (and cameras) given is fixed by an
    episode's first tick; ``lateness_ms`` and ``stage_ms`` go to /timing, apart from the data."""

    timestamp: float
    action: Array
    state: Array
    qpos: Array | None = None
    qvel: Array | None = None
    ee_pose: Array | None = None
    object_poses: Array | None = None
    lateness_ms: float | None = None
    stage_ms: Mapping[str, float] | None = None
    images: Mapping[str, Image] | None = None


# Tick field -> (dataset path, stored dtype), in the order the writer creates them.
TICK_STREAMS: dict[str, tuple[str, type]] = {
    "timestamp": (TIMESTAMPS, np.float64),
    "action": (ACTION, np.float32),
    "qpos": (QPOS, np.float32),
    "qvel": (QVEL, np.float32),
    "ee_pose": (EE_POSE, np.float32),
    "object_poses": (OBJECT_POSES, np.float64),
    "state": (STATES, np.float64),
}
IMAGE_STREAM_PREFIX = "images/"  # a writer's stream name for a camera: images/<cam>


# ---- the manifest ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Manifest:
    """Dataset-level facts (``manifest.json``). ``extra`` is the caller's free-form JSON object."""

    robot: str
    task: str
    fps: float
    joint_names: tuple[str, ...] = ()
    action_names: tuple[str, ...] = ()
    cameras: Any = field(default_factory=list)  # names, or {name: {width, height, intrinsics, ...}}
    dag: dict[str, Any] = field(default_factory=dict)  # nodes, edges, scores
    world: dict[str, Any] = field(default_factory=dict)  # everything the specs decided (x2.envspec.record)
    versions: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    schema: str = FORMAT_VERSION

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Manifest:
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise DatasetError(f"{where}: {unknown[0]}: found an unknown key; allowed: {allowed} "
                               "(put free-form facts under 'extra')")
        for key in ("robot", "task", "fps"):
            if key not in data:
                raise DatasetError(f"{where}: {key}: found missing; allowed: required keys robot, task, fps")
        checks: dict[str, tuple[type | tuple[type, ...], str]] = {
            "robot": (str, "a string"), "task": (str, "a string"), "fps": ((int, float), "a positive number"),
            "joint_names": ((list, tuple), "a list of strings"),
            "action_names": ((list, tuple), "a list of strings"),
            "cameras": ((list, tuple, dict), "a list or an object"), "dag": (dict, "an object"),
            "world": (dict, "an object"),
            "versions": (dict, "an object"), "created": (str, "a string"), "extra": (dict, "an object"),
            "schema": (str, f"{FORMAT_VERSION!r}"),
        }
        for key, value in data.items():
            kind, text = checks[key]
            if not isinstance(value, kind) or isinstance(value, bool):
                raise DatasetError(f"{where}: {key}: found {value!r:.60}; allowed: {text}")
        if data.get("schema", FORMAT_VERSION) != FORMAT_VERSION:
            older = " (an older x2's dataset: its episodes cannot rebuild their worlds; record it again)" \
                if data["schema"] == FORMAT_VERSION_WITHOUT_WORLDS else ""
            raise DatasetError(f"{where}: schema: found {data['schema']!r}; allowed: {FORMAT_VERSION!r}{older}")
        if data["fps"] <= 0:
            raise DatasetError(f"{where}: fps: found {data['fps']!r}; allowed: a positive number")
        values = dict(data)
        for key in ("joint_names", "action_names"):
            values[key] = tuple(str(n) for n in values.get(key, ()))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("joint_names", "action_names"):
            data[key] = list(data[key])
        return data

    def stream_names(self) -> dict[str, list[str]]:
        """The ``names`` attr of each stream whose columns the manifest names."""
        return {path: list(getattr(self, field)) for path, field in NAMED_STREAMS.items()}


# Streams whose columns the manifest names: stream path -> the manifest field with the names. The writer
# gives a stream these names when its row width matches; readers name the columns under the same rule.
NAMED_STREAMS = {ACTION: "action_names", QPOS: "joint_names", QVEL: "joint_names"}


def manifest_extra(*, action_definition: str, object_names: Sequence[str], substeps: int, sim_dt: float,
                   scene: str, variant: str, spec_sources: Sequence[str]) -> dict[str, Any]:
    """A collector's ``extra`` in the manifest: how actions and the physics are defined, what was loaded."""
    return {"action_definition": action_definition, OBJECT_NAMES_ATTR: list(object_names), "substeps": substeps,
            SIM_DT_ATTR: sim_dt, "scene": scene, "variant": variant, "spec_sources": list(spec_sources)}


# Facts that must agree when a run appends to an existing dataset: mixing them would corrupt training.
# `world` is the compiled task, scene, robot description, control rate and action layout (x2.envspec.record).
MANIFEST_MUST_MATCH = ("robot", "task", "fps", "joint_names", "action_names", "world")


# ---- writing side: what may go into a file (checked before the first byte is written) ----------------
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def attr_value(value: Any, where: str = "attr") -> Any:
    """Python value -> HDF5 attr: dicts, lists and None become JSON text; numbers, strings and numeric
    or string arrays stay as they are. Anything else (which HDF5 could only pickle) is refused."""
    if isinstance(value, dict | list | tuple) or value is None:
        try:
            return json.dumps(value, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise DatasetError(f"{where}: found {exc}; allowed: JSON-serialisable values "
                               "(pass arrays as numpy arrays, not inside dicts)") from None
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OUS":
            return string_array(value.ravel())
        if value.dtype.kind in "biuf":
            return value
    elif isinstance(value, str | bool | int | float | np.bool_ | np.integer | np.floating):
        return value
    raise DatasetError(f"{where}: found {type(value).__name__}; "
                       "allowed: str, number, bool, numeric array, or JSON (dict/list/None)")


def string_array(values: Sequence[str] | Array) -> Array:
    import h5py  # (here: the loop names this module's records in processes that never open a file)

    return np.array([str(v) for v in values], dtype=h5py.string_dtype())


def safe_name(name: str, what: str, where: object) -> str:
    if not _SAFE_NAME.match(name):
        raise DatasetError(f"{where}: {what}: found {name!r}; allowed: letters, digits, '_', '.', '-'")
    return name


def root_attrs(index: int, start: EpisodeStart, manifest: Manifest, where: object) -> dict[str, Any]:
    """The encoded root attributes written when an episode file is created."""
    if start.source not in SOURCES:
        raise DatasetError(f"{where}: source: found {start.source!r}; allowed: {list(SOURCES)}")
    for key in (SEED_ATTR, *SEED_ORIGIN):
        value = getattr(start, key)
        if key in SEED_ORIGIN and value is None:
            continue
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or (key == SLOT_ATTR and value < 0):
            bound = " >= 0" if key == SLOT_ATTR else ""
            raise DatasetError(f"{where}: {key}: found {value!r}; allowed: an integer{bound}")
    # The order of creation is part of the file's bytes: the writer's defaults first, then the start's.
    root: dict[str, Any] = {
        FORMAT_ATTR: FORMAT_VERSION, INDEX_ATTR: index, TASK_ATTR: manifest.task, INSTRUCTION_ATTR: "",
        ROBOT_ATTR: manifest.robot, FPS_ATTR: manifest.fps, SIM_DT_ATTR: 0.0, SCENE_VARIANT_ATTR: "",
        SPLIT_ATTR: "train", PARENT_EPISODE_ATTR: -1, VERSIONS_ATTR: {}, ENV_ARGS_ATTR: {}, MODEL_XML_ATTR: "",
        SUCCESS_ATTR: False,
    }
    given = {TASK_ATTR: start.task, ROBOT_ATTR: start.robot, SEED_ATTR: int(start.seed),
             SOURCE_ATTR: start.source, FPS_ATTR: start.fps, SIM_DT_ATTR: start.sim_dt,
             SCENE_VARIANT_ATTR: start.scene_variant, SPLIT_ATTR: start.split, VERSIONS_ATTR: start.versions,
             MASTER_SEED_ATTR: None if start.master_seed is None else int(start.master_seed),
             SLOT_ATTR: None if start.slot is None else int(start.slot)}
    root.update({k: v for k, v in given.items() if v is not None})
    return {k: attr_value(v, f"{where}: attrs/{k}") for k, v in root.items()}


def check_shapes(shapes: Mapping[str, Any], where: object) -> dict[str, tuple[int, ...]]:
    """Per-row shapes of one episode's streams: ``TICK_STREAMS`` names, and ``images/<cam>`` as (H, W, 3)."""
    out = {key: tuple(int(n) for n in shape) for key, shape in shapes.items()}
    for required in ("action", "state"):
        if required not in out:
            raise DatasetError(f"{where}: {required}: found missing; "
                               "allowed: every tick has timestamp, action and state")
    for key, shape in out.items():
        if key.startswith(IMAGE_STREAM_PREFIX):
            safe_name(key.removeprefix(IMAGE_STREAM_PREFIX), "images", where)
            if len(shape) != 3 or shape[2] != 3:
                raise DatasetError(f"{where}: {key}: found shape {shape}; allowed: (H, W, 3) uint8")
        elif key not in TICK_STREAMS:
            raise DatasetError(f"{where}: {key}: found an unknown stream; "
                               f"allowed: {list(TICK_STREAMS)} or images/<cam>")
        elif key in ("ee_pose", "object_poses") and (len(shape) != 2 or shape[1] != 7):
            raise DatasetError(f"{where}: {key}: found shape {shape}; "
                               "allowed: (n, 7) position + wxyz quaternion per row")
    return out


def check_labels(labels: Mapping[str, Any], dag: Mapping[str, Any], frames: int,
                 where: object) -> tuple[dict[str, Array], list[str], list[str]]:
    """Label arrays as stored, the subtask names and the arm names (``dag[ARM_NAMES_ATTR]``, the arm of each
    arm_subtask_index column)."""
    names = [str(n) for n in labels.get(SUBTASK_NAMES_ATTR, dag.get("nodes", []))]
    arm_names = dag.get(ARM_NAMES_ATTR, [])
    if isinstance(arm_names, str) or not isinstance(arm_names, Sequence) or \
            not all(isinstance(a, str) for a in arm_names) or len(set(arm_names)) != len(arm_names):
        raise DatasetError(f"{where}: {ARM_SUBTASK_INDEX}: {ARM_NAMES_ATTR}: found {arm_names!r:.60}; "
                           "allowed: a list of distinct arm names")
    dtypes = {"subtask_index": np.int16, "active_mask": np.bool_, "progress": np.float32}
    out: dict[str, Array] = {}
    for key, value in labels.items():
        if key == SUBTASK_NAMES_ATTR:
            continue
        if label_path(key) == ARM_SUBTASK_INDEX:
            out[key] = _check_arm_labels(value, len(names), list(arm_names), frames, where)
            continue
        try:
            arr = np.asarray(value, dtype=dtypes.get(safe_name(key, "labels", where)))
        except (TypeError, ValueError):
            arr = np.asarray(value, dtype=object)
        rows_ok = arr.ndim >= 1 and arr.shape[0] == frames and (key != "active_mask" or arr.ndim == 2)
        if arr.dtype.kind not in "biuf" or not rows_ok:
            raise DatasetError(f"{where}: {label_path(key)}: found {arr.dtype}{arr.shape}; "
                               f"allowed: a numeric array with {frames} rows")
        out[key] = arr
    return out, names, list(arm_names)


def _check_arm_labels(value: Any, n_nodes: int, arm_names: Sequence[str], frames: int, where: object) -> Array:
    arr = np.asarray(value)
    shape = (frames, len(arm_names))
    if arr.dtype.kind not in "iu" or arr.shape != shape or not arm_names:
        raise DatasetError(f"{where}: {ARM_SUBTASK_INDEX}: found {arr.dtype}{arr.shape} for arms {list(arm_names)}; "
                           f"allowed: an integer array of shape {shape}, one column per arm (at least one)")
    bad = (arr < -1) | (arr > n_nodes)
    if bad.any():
        t, a = (int(i) for i in np.argwhere(bad)[0])
        raise DatasetError(f"{where}: {ARM_SUBTASK_INDEX}: found {int(arr[t, a])} at frame {t}, arm "
                           f"{arm_names[a]!r}; allowed: -1 (unfinished) to {n_nodes} (done)")
    return arr.astype(np.int16)


def check_dag(dag: Mapping[str, Any], frames: int, where: object) -> tuple[dict[str, Any], Array]:
    """Normalised /dag attrs (nodes, edges, scores, events, failure, and arms when given) and completion_frame."""
    try:
        nodes = [str(n) for n in dag.get("nodes", [])]
        events = [[str(node), int(frame)] for node, frame in dag.get("events", [])]
        failure = dag.get("failure")
        failure = None if failure is None else [str(failure[0]), int(failure[1]), str(failure[2])]
        edges = [[str(u), str(v)] for u, v in dag.get("edges", [])]
        scores = json.loads(json.dumps(dag.get("scores", {})))
        first = {node: frame for node, frame in reversed(events)}
        completion = np.asarray(dag.get("completion_frame", [first.get(n, -1) for n in nodes]), np.int64)
    except (TypeError, ValueError, IndexError):
        raise DatasetError(f"{where}: dag: found malformed nodes/edges/events/failure/scores; allowed: "
                           "nodes [str], edges [[u, v]], events [[node, frame]], failure null or "
                           "[node, frame, reason], scores JSON, completion_frame [int]") from None
    arms = check_arms(dag["arms"], nodes, where, dag.get(ARM_NAMES_ATTR)) if "arms" in dag else None
    starts = check_starts(dag["starts"], nodes, frames, where) if "starts" in dag else None
    for node, frame in events + ([failure[:2]] if failure else []):
        if node not in nodes or not 0 <= frame < frames:
            raise DatasetError(f"{where}: dag/events: found [{node!r}, {frame}]; "
                               f"allowed: a node of {nodes} and a frame in [0, {frames})")
    if completion.shape != (len(nodes),):
        raise DatasetError(f"{where}: {COMPLETION_FRAME}: found {completion.dtype}{completion.shape}; "
                           f"allowed: ({len(nodes)},), one frame per node (-1 never)")
    attrs = {"nodes": nodes, "edges": edges, "scores": scores, "events": events, "failure": failure}
    if arms is not None:  # last, so the attrs an episode had before it are created as they were
        attrs["arms"] = arms
    if starts is not None:
        attrs["starts"] = starts
    return attrs, completion.astype(np.int32)


def check_starts(starts: Any, nodes: Sequence[str], frames: int, where: object) -> dict[str, int]:
    """/dag `starts`: node -> the frame a collector started running it (synthesis; nodes never run are absent). A
    node may start on the frame the episode ends in, when its skill fails before that frame's action (a rejected
    attempt kept with --keep-failed): so frames run to `frames` inclusive."""
    allowed = f"allowed: {{node: frame}} with nodes of {list(nodes)} and frames in [0, {frames}]"
    if not isinstance(starts, Mapping):
        raise DatasetError(f"{where}: dag/starts: found {starts!r:.60}; {allowed}")
    for node, frame in starts.items():
        if node not in nodes or isinstance(frame, bool) or not isinstance(frame, int) or not 0 <= frame <= frames:
            raise DatasetError(f"{where}: dag/starts: found {node!r}: {frame!r:.20}; {allowed}")
    return {n: int(starts[n]) for n in nodes if n in starts}


def check_arms(arms: Any, nodes: Sequence[str], where: object,
               arm_names: Sequence[str] | None = None) -> dict[str, list[str]]:
    """/dag `arms`: every node -> the arms it ran on (a list of arm names, possibly empty; with `arm_names`,
    each one of those)."""
    allowed = f"allowed: {{node: [arm name, ...]}} for every node of {list(nodes)}"
    if not isinstance(arms, Mapping):
        raise DatasetError(f"{where}: dag/arms: found {arms!r:.60}; {allowed}")
    for node, names in arms.items():
        if node not in nodes:
            raise DatasetError(f"{where}: dag/arms: found node {node!r}; {allowed}")
        if isinstance(names, str) or not isinstance(names, Sequence) or \
                not all(isinstance(a, str) for a in names):
            raise DatasetError(f"{where}: dag/arms/{node}: found {names!r:.60}; allowed: a list of arm names")
        unknown = [a for a in names if arm_names is not None and a not in arm_names]
        if unknown:
            raise DatasetError(f"{where}: dag/arms/{node}: found arm {unknown[0]!r}; "
                               f"allowed: arms of the robot {list(arm_names or [])}")
    missing = [n for n in nodes if n not in arms]
    if missing:
        raise DatasetError(f"{where}: dag/arms: found no arms for node {missing[0]!r}; {allowed}")
    return {n: list(arms[n]) for n in nodes}


def check_timing(per_tick: Mapping[str, Sequence[float]], given: Mapping[str, Any], frames: int,
                 where: object) -> dict[str, Array]:
    """/timing/<name>_ms arrays: stages appended tick by tick plus (T,) arrays handed to finish."""
    out = {name: np.asarray(times, np.float32) for name, times in per_tick.items()}
    for name, values in given.items():
        if safe_name(name, "timing", where) in out:
            raise DatasetError(f"{where}: timing/{name}: found it given per tick and at finish; allowed: one")
        arr = np.asarray(values, dtype=np.float32)
        if arr.shape != (frames,):
            raise DatasetError(f"{where}: timing/{name}: found shape {arr.shape}; allowed: ({frames},) in ms")
        out[name] = arr
    return out


def check_extra(extra: Mapping[str, Any], where: object) -> dict[str, Any]:
    """Encoded extra root attrs; the writer's own and the indexed ones (seed, source) are refused."""
    fixed = (*RESERVED_ATTRS, SEED_ATTR, SOURCE_ATTR, *SEED_ORIGIN)
    bad = [k for k in extra if k in fixed]
    if bad:
        raise DatasetError(f"{where}: extra_attrs: found {bad}; allowed: anything but {list(fixed)}")
    return {safe_name(k, "extra_attrs", where): attr_value(v, f"{where}: extra_attrs/{k}")
            for k, v in extra.items()}


def check_device(device: Mapping[str, Mapping[str, Any]], where: object) -> dict[str, dict[str, Array]]:
    out: dict[str, dict[str, Array]] = {}
    for name, streams in device.items():
        out[safe_name(name, "device", where)] = {}
        for key, value in streams.items():
            arr = np.asarray(value)
            if arr.dtype.kind not in "biuf":  # object arrays would need pickling: refused
                raise DatasetError(f"{where}: device/{name}/{key}: found dtype {arr.dtype}; allowed: numeric")
            out[name][safe_name(key, "device stream", where)] = arr
    return out
