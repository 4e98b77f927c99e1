"""The typed records of the x2 format: what an episode's root attributes say before its first tick
(`EpisodeStart`) and at its end (`EpisodeEnd`, `Rejection`, `TeleopEnd`), one tick of its streams (`Tick`), and a
dataset's `Manifest`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from x2.base.arrays import Image
from x2.base.errors import DatasetError
from x2.format.names import (
    ACTION,
    ASSETS_ATTR,
    AUGMENTATION_ATTR,
    DEVICE_ATTR,
    EE_POSE,
    END_REASON_ATTR,
    ENV_ARGS_ATTR,
    FORMAT_VERSION,
    FORMAT_VERSION_WITHOUT_WORLDS,
    INDEX_ATTR,
    INSTRUCTION_ATTR,
    LAYOUT_ATTR,
    MAX_PENETRATION_ATTR,
    MODEL_XML_ATTR,
    OBJECT_NAMES_ATTR,
    OBJECT_POSES,
    PARENT_EPISODE_ATTR,
    POLICY_ATTR,
    QPOS,
    QVEL,
    REJECTED_ATTR,
    REJECTION_DETAIL_ATTR,
    REJECTION_REASON_ATTR,
    RESET_EMBODIMENT_ATTR,
    RESET_LOOK_ATTR,
    RESET_ROLES_ATTR,
    SAFETY_CLAMPED_ATTR,
    SAFETY_REJECTED_ATTR,
    SCENE_VARIANT_ATTR,
    SEED_ATTR,
    SIM_DT_ATTR,
    SOURCE_ATTR,
    SPLIT_ATTR,
    STATES,
    SYNTHESIS_ATTR,
    TELEOP_END_ATTR,
    TIMESTAMPS,
    WORLD_ATTR,
    Array,
)


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
    calibration: str | None = None  # JSON {"name", "digest"} of the twin calibration (None: an uncalibrated twin)


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
    state: Array | None  # MuJoCo's integration state; None in a real recording (source "real"), which has none
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


