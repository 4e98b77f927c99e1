"""One episode as the zarr and HDF5 exporters read it: time-first arrays under export names, the DAG's
completion frames, and camera frames in batches at the export's image size.

Per-arm subtask labels (`labels/arm_subtask_index`, one column per arm) are exported as the low-dim key
`arm_subtask_index`, named by the arms, when the exported episodes have them for more than one arm
(x2.export.sources.labelled_arms): with one arm the column is `subtask_index` itself (docs/format.md), so
a single-arm robot's exports carry no per-arm copy, and a dataset recorded before x2 kept them exports
exactly as before. An older episode in a dataset that also holds newer ones (a synthesis resumed after an upgrade)
gets its columns by the format's rule for such an episode, every node on every arm (`arm_labels`).

Both exporters concatenate or group episodes that must agree on every array's per-row shape, so the
first exported episode fixes the layout and `check_row_layout` names the first episode that breaks it.
Episodes are read one at a time (x2.export.sources): nothing here holds more than the episode at hand.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image

from x2 import format as fmt
from x2.base.arrays import Image as Picture
from x2.base.errors import DatasetError, ExportError
from x2.datasets import Episode
from x2.envspec.action import GRIPPER_SUFFIX, ActionLayout
from x2.export.provenance import Json
from x2.export.sources import names_by_column
from x2.labeling import ARM_SUBTASK_INDEX_KEY, arm_label_arrays, arm_segment_owners
from x2.recorded.ee_actions import episode_ee_actions
from x2.recorded.frames import episode_frames, stored_cameras
from x2.sim.camera import ImageSize

# export name -> path in the episode file; the first three are in every x2 episode, the others optional.
LOW_DIM: dict[str, str] = {
    "action": fmt.ACTION,
    "timestamp": fmt.TIMESTAMPS,
    "state": fmt.QPOS,
    "qvel": fmt.QVEL,
    "ee_pose": fmt.EE_POSE,
    "object_poses": fmt.OBJECT_POSES,
    "subtask_index": fmt.SUBTASK_INDEX,
    "progress": fmt.PROGRESS,
}
ARM_SUBTASK = "arm_subtask_index"  # (T, A) per-arm labels, x2's codes as stored (see `arm_labels`)
_REQUIRED = ("action", "timestamp", "state")
# Pillow's bilinear filter widens its support by the scale factor when shrinking, so a downscale averages
# every source pixel (no aliasing) and an upscale interpolates linearly.
RESIZE_FILTER = Image.Resampling.BILINEAR
RESIZE_DESCRIPTION = "bilinear, antialiased when shrinking (Pillow)"


@dataclass(frozen=True)
class EpisodeFacts:
    """The root attributes exporters carry over: what the episode is and how it ended."""

    seed: int
    success: bool
    source: str
    instruction: str
    model_xml: str
    env_args: Json  # the root attr env_args as stored (an object, or {} when absent)


@dataclass(frozen=True)
class EpisodeArrays:
    """What the exporters take from one episode file (all arrays have `frames` rows)."""

    path: Path
    index: int
    frames: int
    low_dim: dict[str, npt.NDArray[np.generic]]  # as stored: floats, and integer labels
    names: dict[str, list[str]]  # per low-dim key, the names of its columns (joints, objects, arms)
    states: npt.NDArray[np.generic] | None  # the full MuJoCo integration state, as stored; None: a real recording
    nodes: list[str]
    completion: dict[str, int]  # node -> frame it was first completed (-1: never)
    active_mask: npt.NDArray[np.generic] | None
    arms: list[str]  # arm names in action-layout order (ee_pose's second axis)
    gripper_slots: list[int]  # each arm's gripper opening in `action`
    facts: EpisodeFacts
    arm_labels: ArmLabels | None = None  # per-arm labels of a robot with two or more arms, else None


@dataclass(frozen=True)
class ArmLabels:
    """An episode's per-arm subtask labels, as the exporters use them."""

    arms: list[str]  # the arm of each column, in robot order
    index: npt.NDArray[np.generic]  # (T, A) integers, x2's codes as stored: node index, len(nodes) done, -1 unfinished
    node_arms: dict[str, list[str]]  # node -> the arms it ran on (every arm for an episode without the map)

    def nodes_of(self, arm: str, nodes: Sequence[str]) -> list[str]:
        """The nodes that ran on `arm`, in declared order."""
        return [n for n in nodes if arm in self.node_arms.get(n, self.arms)]


def arm_labels(ep: Episode, arms: Sequence[str]) -> ArmLabels | None:
    """The episode's per-arm labels for the export's `arms` (x2.export.sources.labelled_arms; None when there
    are fewer than two): as stored, or, for an episode recorded before x2 kept them, derived from its events by the rule
    of docs/format.md with every node on every arm (so each column is its subtask_index)."""
    if len(arms) < 2:
        return None
    nodes = [str(n) for n in ep.dag.get("nodes", [])]
    table = ep.arm_subtask_index
    stored = ep.node_arms
    if table is None:
        failure = ep.failure
        owners = arm_segment_owners(ep.events, nodes, {}, list(arms), 0, ep.frames,
                                    None if failure is None else failure[0])
        table, stored = arm_label_arrays(nodes, owners, ep.frames)[ARM_SUBTASK_INDEX_KEY], None
    node_arms = {n: list(arms) for n in nodes} if stored is None else {n: list(stored.get(n, arms)) for n in nodes}
    return ArmLabels(list(arms), table, node_arms)


def read_episode(ep: Episode, manifest_names: Mapping[str, Sequence[str]],
                 labelled: Sequence[str] = (), action: str = "joint") -> EpisodeArrays:
    """The episode's arrays; action, state and qvel named by `manifest_names` (episode column path ->
    names, `x2.export.sources.ExportSources.column_names`), the other columns by the file; per-arm labels
    for the `labelled` arms (`x2.export.sources.ExportSources.arms`); `action` "ee_pose" or "ee_delta": the action
    column as end-effector actions (`ee_action_column`)."""
    missing = [LOW_DIM[k] for k in _REQUIRED if LOW_DIM[k] not in ep]
    if missing:
        raise DatasetError(f"{ep.path}: {missing[0]}: found missing; allowed: an x2 episode with "
                           f"{[LOW_DIM[k] for k in _REQUIRED]}")
    low_dim = {key: ep[path] for key, path in LOW_DIM.items() if path in ep}
    given = names_by_column(ep, manifest_names)
    names = {key: list(given[path]) if path in given else [str(n) for n in ep.dataset_attrs(path).get("names", [])]
             for key, path in LOW_DIM.items() if path in ep}
    layout = ActionLayout.from_names(names["action"])
    arms = [a.name for a in layout.arms] if layout else []
    gripper_slots = [a.gripper for a in layout.arms] if layout else []
    if action != "joint":
        low_dim["action"], ee_names = ee_action_column(ep, action)
        names["action"] = list(ee_names)
        gripper_slots = [i for i, n in enumerate(ee_names) if n.endswith(GRIPPER_SUFFIX)]
    if "ee_pose" in low_dim:
        if len(arms) != low_dim["ee_pose"].shape[1]:
            arms = [f"arm{i}" for i in range(low_dim["ee_pose"].shape[1])]
        names["ee_pose"] = arms
    per_arm = arm_labels(ep, labelled)
    if per_arm is not None:
        low_dim[ARM_SUBTASK], names[ARM_SUBTASK] = per_arm.index, list(per_arm.arms)
    nodes = [str(n) for n in ep.dag.get("nodes", [])]
    completion = {node: -1 for node in nodes}
    for node, frame in ep.events:  # the first event of a node is its completion (a latch may re-fire)
        if node in completion and completion[node] < 0:
            completion[node] = frame
    facts = EpisodeFacts(seed=int(ep.attrs.get(fmt.SEED_ATTR) or 0), success=bool(ep.attrs.get(fmt.SUCCESS_ATTR)),
                         source=ep.source, instruction=ep.instruction, model_xml=ep.model_xml,
                         env_args=ep.json_attr(fmt.ENV_ARGS_ATTR, {}) or {})
    return EpisodeArrays(
        path=ep.path, index=ep.index, frames=ep.frames, low_dim=low_dim, names=names,
        states=None if ep.is_real else ep[fmt.STATES], nodes=nodes, completion=completion,
        active_mask=_optional(ep, fmt.ACTIVE_MASK),
        arms=arms, gripper_slots=gripper_slots, facts=facts,
        arm_labels=per_arm)


def ee_action_column(ep: Episode, kind: str) -> tuple[npt.NDArray[np.float32], tuple[str, ...]]:
    """The episode's actions as end-effector actions of `kind` (x2/recorded/ee_actions.py: the poses of the commanded
    joint targets, in the robot's base frame), float32, and their names; a real recording has no world to compute
    them in: one line."""
    if ep.is_real:
        raise ExportError(f"{ep.path}: --action: found {kind}; allowed: joint for a real recording (it has no "
                          "world to compute its end-effector poses in)")
    converted = episode_ee_actions(ep, kind)
    return np.asarray(converted.values, dtype=np.float32), converted.names


def _optional(ep: Episode, name: str) -> npt.NDArray[np.generic] | None:
    if name not in ep:
        return None
    return ep[name]


def row_layout(arrays: EpisodeArrays) -> dict[str, tuple[tuple[int, ...], str]]:
    """key -> (per-row shape, dtype) of every array an exporter writes (low-dim and the states)."""
    out = {k: (tuple(v.shape[1:]), v.dtype.str) for k, v in arrays.low_dim.items()}
    if arrays.states is not None:
        out["states"] = (tuple(arrays.states.shape[1:]), arrays.states.dtype.str)
    return out


def check_row_layout(arrays: EpisodeArrays, first: Mapping[str, tuple[tuple[int, ...], str]]) -> None:
    """Refuse an episode whose arrays differ from the first exported episode's (one line, first key)."""
    have = row_layout(arrays)
    for key in sorted(set(first) | set(have)):
        if have.get(key) != first.get(key):
            found = "missing" if key not in have else f"rows of {have[key][0]} {have[key][1]}"
            allowed = "absent" if key not in first else f"rows of {first[key][0]} {first[key][1]}"
            raise ExportError(f"{arrays.path}: {key}: found {found}; allowed: {allowed}, as in the first "
                              "exported episode (export episodes of one world: --episodes)")


def resize(frame: Picture, size: ImageSize) -> Picture:
    if frame.shape[:2] == (size.height, size.width):
        return frame
    return np.asarray(Image.fromarray(frame).resize((size.width, size.height), RESIZE_FILTER))


def taken_at(ep: Episode, cameras: Sequence[str], render_size: ImageSize) -> ImageSize | None:
    """The size camera_batches takes an episode's frames at (x2.recorded.frames.frames_at's `size`): the stored
    streams when every camera has one (None: at their own sizes), else every camera drawn at `render_size`."""
    stored = stored_cameras(ep)
    return None if all(c in stored for c in cameras) else render_size


def camera_batches(ep: Episode, cameras: Sequence[str], render_size: ImageSize, sizes: Mapping[str, ImageSize],
                   batch: int = 32) -> Iterator[dict[str, Picture]]:
    """{camera: (n, H, W, 3) uint8} for consecutive runs of at most `batch` frames, at `sizes`.
    Stored streams are read when every camera has one, otherwise frames are rendered at `render_size`
    (x2.recorded.frames); either way each frame is then resized to its camera's export size."""
    source_size = taken_at(ep, cameras, render_size)
    pending: dict[str, list[Picture]] = {c: [] for c in cameras}
    try:
        for frame in episode_frames(ep, cameras, source_size):
            for cam in cameras:
                pending[cam].append(resize(frame[cam], sizes[cam]))
            if len(pending[cameras[0]]) == batch:
                yield {c: np.stack(v) for c, v in pending.items()}
                pending = {c: [] for c in cameras}
    except DatasetError as exc:  # the renderer's message names the camera, not the file
        text = str(exc)
        raise ExportError(text if text.startswith(str(ep.path)) else f"{ep.path}: {text}") from None
    if pending[cameras[0]]:
        yield {c: np.stack(v) for c, v in pending.items()}

