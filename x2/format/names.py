"""The on-disk names of the x2 format: folders and files of a dataset, every path inside an episode file, every
root attribute; the format version. No other module of x2 spells one of these (tests/test_format.py)."""

from __future__ import annotations

import re
from typing import Any

import numpy.typing as npt

Array = npt.NDArray[Any]  # a stream, label or device array of any dtype

# x2/2: the file rebuilds its world (model_xml as stepped, the world record), seeds carry their master
# seed and slot, and everything the wall clock decides lives under /timing.
FORMAT_VERSION = "x2/2"
FORMAT_VERSION_WITHOUT_WORLDS = "x2/1"  # an older x2's: its episodes cannot rebuild their worlds
POLICY_SOURCE = "policy"  # an x2 eval rollout's source
# a real robot's recording read in (`x2 import lerobot`): no world, no simulator state, no labels; its measured
# joints in /observations/qpos and where it came from in the root attr `recording` (docs/format.md)
REAL_SOURCE = "real"
SOURCES = ("teleop", "synth", "augment", "scripted", POLICY_SOURCE, REAL_SOURCE)

# ---- the dataset folder ------------------------------------------------------------------------------
MANIFEST_FILE = "manifest.json"  # dataset-level facts, written once
INDEX_FILE = "episodes.jsonl"  # the commit log, one line per committed episode
SLOTS_FILE = "slots.json"  # seed slots used per master seed
PARTITION_FILE = "partition.json"  # each episode's part (train, val, test, ...), assigned after recording
OLDER_PARTITION_FILE = "splits.json"  # the partition file's older name: read when PARTITION_FILE is absent
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
DEPTH = "observations/depth"  # /<cam>: (T, H, W) float32, metres along the optical axis
SEGMENTATION = "observations/segmentation"  # /<cam>: (T, H, W) uint16 ids, attrs `names` and `kinds` name them
SEGMENT_KINDS_ATTR = "kinds"  # attr of a segmentation: each id's kind (background, robot, object, scenery)
CAMERA_EXTRINSICS = "observations/camera_extrinsics"  # /<cam>: (T, 4, 4) float64 camera (OpenCV axes) to world
LABELS = "labels"
SUBTASK_INDEX = "labels/subtask_index"  # (T,) int16
ACTIVE_MASK = "labels/active_mask"  # (T, N) bool
PROGRESS = "labels/progress"  # (T,) float32
SUBTASK_NAMES_ATTR = "subtask_names"  # attr of LABELS
ARM_SUBTASK_INDEX = "labels/arm_subtask_index"  # (T, A) int16: per arm, the subtask it works on
ARM_NAMES_ATTR = "arm_names"  # attr of ARM_SUBTASK_INDEX: the arm of each column, in robot order
DAG = "dag"  # attrs nodes, edges, scores, events, failure, arms, starts, timeouts
COMPLETION_FRAME = "dag/completion_frame"  # (N,) int32
DEVICE = "device"  # /<kind>/<stream>: a teleoperated episode's raw device stream
TIMING = "timing"  # /<stage>_ms (T,) float32; attrs: the wall clock's other facts
CREATED_UTC_ATTR = "created_utc"  # attr of TIMING
MISSED_SLOTS_ATTR = "missed_slots"  # attr of TIMING
AUGMENTATION = "augmentation"
ENVELOPE = "augmentation/envelope"  # (N, 7) float64: an augmented episode's swept capsules
# /<name>: (n,) uint8, the PNG bytes of each image the world's `<texture file="name">` names (x2.sim.mujoco.textures);
# only in the files of worlds that carry images (objects made from textured meshes): other files have no such group
TEXTURES = "textures"
# an episode whose policy answered end-effector actions (x2/envspec/ee_action.py), one row per frame as /action:
EE_ACTION = "ee_action"  # the group
EE_ACTION_VALUES = "ee_action/action"  # (T, W) float32: the end-effector action as the policy answered it; attrs
# `ee_kind` (ee_pose | ee_delta) and `names` (one per column)
EE_COMMANDED = "ee_action/commanded"  # (T, arms, 7) float32: the pose commanded, base frame, position + quat w x y z
EE_REACHED = "ee_action/reached"  # (T, arms, 7) float32: the tcp pose of the joint targets applied (/action)
EE_UNREACHABLE = "ee_action/unreachable"  # (T, arms) bool: the IK could not reach the commanded pose
EE_KIND_ATTR = "ee_kind"  # attr of EE_ACTION_VALUES
REQUIRED_DATASETS = (TIMESTAMPS, ACTION, STATES)
REAL_REQUIRED_DATASETS = (TIMESTAMPS, ACTION, QPOS)  # a real recording's: its measured joints instead of states
UNTIMED_GROUPS = (DAG, DEVICE, AUGMENTATION, TEXTURES)  # per-episode constants, not one row per tick


def required_datasets(source: object) -> tuple[str, ...]:
    """The datasets every episode of `source` has: a simulated one its states, a real recording its measured joints."""
    return REAL_REQUIRED_DATASETS if source == REAL_SOURCE else REQUIRED_DATASETS


def image_path(camera: str) -> str:
    return f"{IMAGES}/{camera}"


def camera_pose_path(camera: str) -> str:
    return f"{CAMERA_POSES}/{camera}"


def depth_path(camera: str) -> str:
    return f"{DEPTH}/{camera}"


def segmentation_path(camera: str) -> str:
    return f"{SEGMENTATION}/{camera}"


def camera_extrinsics_path(camera: str) -> str:
    return f"{CAMERA_EXTRINSICS}/{camera}"


def label_path(name: str) -> str:
    return f"{LABELS}/{name}"


def timing_path(stage: str) -> str:
    return f"{TIMING}/{stage}_ms"


def texture_path(name: str) -> str:
    return f"{TEXTURES}/{name}"


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
# a real recording's origin (source "real"), JSON {"format", "path", "episode_index", "fps", "features", "table",
# "timing": {"gaps", "irregular", ...}, "cameras"}: what was read from where, the unit table used, the gaps found
RECORDING_ATTR = "recording"
# the twin calibration the robot was named with (ROBOT@NAME, x2/envspec/calibration.py), JSON {"name", "digest"};
# absent when none
CALIBRATION_ATTR = "calibration"
ROOT_ATTRS = (
    FORMAT_ATTR, INDEX_ATTR, TASK_ATTR, INSTRUCTION_ATTR, ROBOT_ATTR, FPS_ATTR, SIM_DT_ATTR, SCENE_VARIANT_ATTR,
    SPLIT_ATTR, PARENT_EPISODE_ATTR, VERSIONS_ATTR, ENV_ARGS_ATTR, MODEL_XML_ATTR, SUCCESS_ATTR, SEED_ATTR,
    SOURCE_ATTR, MASTER_SEED_ATTR, SLOT_ATTR, WORLD_ATTR, LAYOUT_ATTR, ASSETS_ATTR, END_REASON_ATTR,
    MAX_PENETRATION_ATTR, OBJECT_NAMES_ATTR, AUGMENTATION_ATTR, MERGED_FROM_ATTR, FILTERED_FROM_ATTR,
    REJECTED_ATTR, REJECTION_REASON_ATTR, REJECTION_DETAIL_ATTR, TELEOP_END_ATTR, DEVICE_ATTR,
    SAFETY_CLAMPED_ATTR, SAFETY_REJECTED_ATTR, SYNTHESIS_ATTR, RESET_LOOK_ATTR, RESET_EMBODIMENT_ATTR,
    RESET_ROLES_ATTR, POLICY_ATTR, RECORDING_ATTR, CALIBRATION_ATTR,
)
NAMES_ATTR = "names"  # attr of action, qpos, qvel, object_poses: one name per column or row

