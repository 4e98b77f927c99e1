"""The writing side of the x2 format: what may go into an episode file, checked before its first byte is written
(attribute values, names, shapes, labels, the DAG record, timing, device streams)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from x2.base.errors import DatasetError
from x2.format.names import (
    ARM_NAMES_ATTR,
    ARM_SUBTASK_INDEX,
    CALIBRATION_ATTR,
    COMPLETION_FRAME,
    ENV_ARGS_ATTR,
    FORMAT_ATTR,
    FORMAT_VERSION,
    FPS_ATTR,
    INDEX_ATTR,
    INSTRUCTION_ATTR,
    MASTER_SEED_ATTR,
    MODEL_XML_ATTR,
    PARENT_EPISODE_ATTR,
    REAL_SOURCE,
    RESERVED_ATTRS,
    ROBOT_ATTR,
    SCENE_VARIANT_ATTR,
    SEED_ATTR,
    SEED_ORIGIN,
    SIM_DT_ATTR,
    SLOT_ATTR,
    SOURCE_ATTR,
    SOURCES,
    SPLIT_ATTR,
    SUBTASK_NAMES_ATTR,
    SUCCESS_ATTR,
    TASK_ATTR,
    VERSIONS_ATTR,
    Array,
    label_path,
)
from x2.format.records import (
    IMAGE_STREAM_PREFIX,
    TICK_STREAMS,
    EpisodeStart,
    Manifest,
)

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
             SLOT_ATTR: None if start.slot is None else int(start.slot), CALIBRATION_ATTR: start.calibration}
    root.update({k: v for k, v in given.items() if v is not None})
    if start.source == REAL_SOURCE:  # a real recording has no world: no model_xml, not even an empty one
        del root[MODEL_XML_ATTR]
    return {k: attr_value(v, f"{where}: attrs/{k}") for k, v in root.items()}


def check_shapes(shapes: Mapping[str, Any], where: object, real: bool = False) -> dict[str, tuple[int, ...]]:
    """Per-row shapes of one episode's streams: ``TICK_STREAMS`` names, and ``images/<cam>`` as (H, W, 3). A real
    recording (`real`) has no simulator state but its measured joints (qpos)."""
    out = {key: tuple(int(n) for n in shape) for key, shape in shapes.items()}
    required, allowed = (("action", "qpos"), "action and qpos") if real else (("action", "state"), "action and state")
    for name in required:
        if name not in out:
            raise DatasetError(f"{where}: {name}: found missing; allowed: every tick has timestamp, {allowed}")
    if real and "state" in out:
        raise DatasetError(f"{where}: state: found given for a real recording; allowed: none (no simulator state)")
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
    """Normalised /dag attrs (nodes, edges, scores, events, failure; arms, starts and timeouts when given) and
    completion_frame."""
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
    timeouts = dag.get("timeouts", True)
    if not isinstance(timeouts, bool):
        raise DatasetError(f"{where}: dag/timeouts: found {timeouts!r:.40}; allowed: false (the nodes' timeouts were "
                           "not applied), or absent")
    if not timeouts:  # (absent where they applied: every episode recorded before the attr, and all synthesis)
        attrs["timeouts"] = False
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

