"""Reading one episode file: attrs, arrays by name, segments, events and failure.

Contract: an episode is one HDF5 file whose time-first datasets all have ``T`` rows, with at least
``/timestamps``, ``/action`` and ``/states``; everything the index needs is in its own attrs. Nothing
read here is evaluated, imported or unpickled: attrs are numbers, strings or JSON text parsed with
``json``, and every value read is bounded and typed first (x2.datasets.untrusted), so a corrupted or
hostile file ends in one DatasetError line naming it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin  # noqa: F401  (registers the Zstd filter that image datasets use)
import numpy as np
import numpy.typing as npt

from x2.datasets.digest import file_digest
from x2.datasets.index import EpisodeRecord, Segment
from x2.datasets.untrusted import as_int, check_backed, hdf5_errors, parse_events, parse_failure, parse_json
from x2.errors import DatasetError

# x2/2: the file rebuilds its world (model_xml as stepped, the world record), seeds carry their master
# seed and slot, and everything the wall clock decides lives under /timing.
EPISODE_FORMAT = "x2/2"
SOURCES = ("teleop", "synth", "augment", "scripted")
RESERVED_ATTRS = ("x2_format", "episode_index", "success")  # set by the writer, never by the caller
SEED_ORIGIN = ("master_seed", "slot")  # optional root attrs: where the seed came from (see EpisodeRecord)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
REQUIRED_DATASETS = ("timestamps", "action", "states")
# append keyword -> (dataset path, stored dtype), in append's argument order.
FIELDS: dict[str, tuple[str, type]] = {
    "timestamp": ("timestamps", np.float64),
    "action": ("action", np.float32),
    "qpos": ("observations/qpos", np.float32),
    "qvel": ("observations/qvel", np.float32),
    "ee_pose": ("observations/ee_pose", np.float32),
    "object_poses": ("observations/object_poses", np.float64),
    "state": ("states", np.float64),
}
# Groups whose datasets are per-episode constants, not one row per tick.
_UNTIMED = ("dag", "device", "augmentation")
_NAME = re.compile(r"^episode_(\d{6,})\.h5$")


def episode_filename(index: int) -> str:
    return f"episode_{index:06d}.h5"


def parse_episode_filename(name: str) -> int | None:
    match = _NAME.match(name)
    return int(match.group(1)) if match else None


def segments_from_labels(subtask_index: npt.NDArray[np.generic], names: Sequence[str]) -> list[Segment]:
    """Runs of equal ``subtask_index``; -1 is "unfinished", ``len(names)`` is "done" (frames after the
    task succeeded, e.g. a teleop episode's success hold), anything else past ``names`` keeps its number."""
    values = np.asarray(subtask_index)
    if values.size == 0:
        return []
    cuts = np.flatnonzero(np.diff(values)) + 1
    starts = [0, *cuts.tolist()]
    ends = [*cuts.tolist(), int(values.size)]
    return [Segment(_label_name(int(values[s]), names), s, e) for s, e in zip(starts, ends, strict=True)]


def _label_name(value: int, names: Sequence[str]) -> str:
    if 0 <= value < len(names):
        return str(names[value])
    if value == len(names):
        return "done"
    return "unfinished" if value == -1 else str(value)


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
            return np.array([str(v) for v in value.ravel()], dtype=h5py.string_dtype())
        if value.dtype.kind in "biuf":
            return value
    elif isinstance(value, str | bool | int | float | np.bool_ | np.integer | np.floating):
        return value
    raise DatasetError(f"{where}: found {type(value).__name__}; "
                       "allowed: str, number, bool, numeric array, or JSON (dict/list/None)")


def string_array(values: Sequence[str]) -> npt.NDArray[np.generic]:
    return np.array([str(v) for v in values], dtype=h5py.string_dtype())


def safe_name(name: str, what: str, where: Path) -> str:
    if not _SAFE_NAME.match(name):
        raise DatasetError(f"{where}: {what}: found {name!r}; allowed: letters, digits, '_', '.', '-'")
    return name


# ---- writing side: what may go into a file (checked before the first byte is written) --------------
def root_attrs(index: int, attrs: Mapping[str, Any], manifest: Mapping[str, Any],
               where: Path) -> dict[str, Any]:
    bad = [k for k in attrs if k in RESERVED_ATTRS]
    if bad:
        raise DatasetError(f"{where}: attrs: found reserved {bad}; "
                           f"allowed: anything but {list(RESERVED_ATTRS)}")
    source = attrs.get("source")
    if source not in SOURCES:
        raise DatasetError(f"{where}: source: found {source!r}; allowed: {list(SOURCES)}")
    for key in ("seed", *SEED_ORIGIN):
        value = attrs.get(key)
        if key in SEED_ORIGIN and value is None:
            continue
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or (key == "slot" and value < 0):
            bound = " >= 0" if key == "slot" else ""
            raise DatasetError(f"{where}: {key}: found {value!r}; allowed: an integer{bound}")
    root: dict[str, Any] = {
        "x2_format": EPISODE_FORMAT, "episode_index": index, "task": manifest.get("task", ""),
        "instruction": "", "robot": manifest.get("robot", ""), "fps": manifest.get("fps", 0.0),
        "sim_dt": 0.0, "scene_variant": "", "split": "train", "parent_episode": -1,
        "versions": {}, "env_args": {}, "model_xml": "", "success": False,
    }
    root.update(attrs)
    for key in ("seed", *SEED_ORIGIN):
        if root.get(key) is not None:
            root[key] = int(root[key])
        else:
            root.pop(key, None)
    return {safe_name(k, "attrs", where): attr_value(v, f"{where}: attrs/{k}") for k, v in root.items()}


def check_shapes(shapes: Mapping[str, Any], where: Path) -> dict[str, tuple[int, ...]]:
    """Per-row shapes of one episode's streams: ``FIELDS`` names, and ``images/<cam>`` as (H, W, 3)."""
    out = {key: tuple(int(n) for n in shape) for key, shape in shapes.items()}
    for required in ("action", "state"):
        if required not in out:
            raise DatasetError(f"{where}: {required}: found missing; "
                               "allowed: every tick has timestamp, action and state")
    for key, shape in out.items():
        if key.startswith("images/"):
            safe_name(key.removeprefix("images/"), "images", where)
            if len(shape) != 3 or shape[2] != 3:
                raise DatasetError(f"{where}: {key}: found shape {shape}; allowed: (H, W, 3) uint8")
        elif key not in FIELDS:
            raise DatasetError(f"{where}: {key}: found an unknown stream; "
                               f"allowed: {list(FIELDS)} or images/<cam>")
        elif key in ("ee_pose", "object_poses") and (len(shape) != 2 or shape[1] != 7):
            raise DatasetError(f"{where}: {key}: found shape {shape}; "
                               "allowed: (n, 7) position + wxyz quaternion per row")
    return out


def check_labels(labels: Mapping[str, Any], dag: Mapping[str, Any], frames: int,
                 where: Path) -> tuple[dict[str, npt.NDArray[np.generic]], list[str]]:
    names = [str(n) for n in labels.get("subtask_names", dag.get("nodes", []))]
    dtypes = {"subtask_index": np.int16, "active_mask": np.bool_, "progress": np.float32}
    out: dict[str, npt.NDArray[np.generic]] = {}
    for key, value in labels.items():
        if key == "subtask_names":
            continue
        try:
            arr = np.asarray(value, dtype=dtypes.get(safe_name(key, "labels", where)))
        except (TypeError, ValueError):
            arr = np.asarray(value, dtype=object)
        rows_ok = arr.ndim >= 1 and arr.shape[0] == frames and (key != "active_mask" or arr.ndim == 2)
        if arr.dtype.kind not in "biuf" or not rows_ok:
            raise DatasetError(f"{where}: labels/{key}: found {arr.dtype}{arr.shape}; "
                               f"allowed: a numeric array with {frames} rows")
        out[key] = arr
    return out, names


def check_dag(dag: Mapping[str, Any], frames: int, where: Path) -> tuple[dict[str, Any], npt.NDArray[np.generic]]:
    """Normalised /dag attrs (nodes, edges, scores, events, failure) and completion_frame."""
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
    for node, frame in events + ([failure[:2]] if failure else []):
        if node not in nodes or not 0 <= frame < frames:
            raise DatasetError(f"{where}: dag/events: found [{node!r}, {frame}]; "
                               f"allowed: a node of {nodes} and a frame in [0, {frames})")
    if completion.shape != (len(nodes),):
        raise DatasetError(f"{where}: dag/completion_frame: found {completion.dtype}{completion.shape}; "
                           f"allowed: ({len(nodes)},), one frame per node (-1 never)")
    attrs = {"nodes": nodes, "edges": edges, "scores": scores, "events": events, "failure": failure}
    return attrs, completion.astype(np.int32)


def check_timing(per_tick: Mapping[str, Sequence[float]], given: Mapping[str, Any], frames: int,
                 where: Path) -> dict[str, npt.NDArray[np.float32]]:
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


def check_extra(extra: Mapping[str, Any], where: Path) -> dict[str, Any]:
    """Encoded extra root attrs; the writer's own and the indexed ones (seed, source) are refused."""
    fixed = (*RESERVED_ATTRS, "seed", "source", *SEED_ORIGIN)
    bad = [k for k in extra if k in fixed]
    if bad:
        raise DatasetError(f"{where}: extra_attrs: found {bad}; allowed: anything but {list(fixed)}")
    return {safe_name(k, "extra_attrs", where): attr_value(v, f"{where}: extra_attrs/{k}")
            for k, v in extra.items()}


def check_device(device: Mapping[str, Mapping[str, Any]], where: Path) -> dict[str, dict[str, npt.NDArray[np.generic]]]:
    out: dict[str, dict[str, npt.NDArray[np.generic]]] = {}
    for name, streams in device.items():
        out[safe_name(name, "device", where)] = {}
        for key, value in streams.items():
            arr = np.asarray(value)
            if arr.dtype.kind not in "biuf":  # object arrays would need pickling: refused (principle 8)
                raise DatasetError(f"{where}: device/{name}/{key}: found dtype {arr.dtype}; allowed: numeric")
            out[name][safe_name(key, "device stream", where)] = arr
    return out


def _plain(value: Any) -> Any:
    """h5py attr value -> plain Python (str, int, float, bool, list)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype.kind == "O" else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _json_attr(attrs: h5py.AttributeManager, name: str, default: Any, path: Path) -> Any:
    """The attr parsed as JSON; `default` when it is absent, one DatasetError line when it is not JSON."""
    with hdf5_errors(path, name):
        raw = attrs.get(name)
    if raw is None:
        return default
    return parse_json(_plain(raw), path, name)


class Episode:
    """An open episode file. Arrays are read on first access and cached; images stay lazy via
    :meth:`dataset`. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path, swmr: bool = False) -> None:
        self.path = Path(path)
        try:
            self._file = h5py.File(self.path, "r", libver="latest", swmr=True) if swmr else \
                h5py.File(self.path, "r")
        except (OSError, ValueError, RuntimeError) as exc:
            raise DatasetError(f"{self.path}: file: found unreadable HDF5 ({exc}); "
                               "allowed: an x2 episode file (x2 datasets validate --repair)") from None
        self._cache: dict[str, npt.NDArray[np.generic]] = {}

    # lifecycle
    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # arrays
    @functools.cached_property
    def _shapes(self) -> dict[str, tuple[int, ...]]:
        # One walk of the file; h5py lookups cost ~0.1 ms each, and validate asks about every dataset.
        shapes: dict[str, tuple[int, ...]] = {}
        with hdf5_errors(self.path, "file"):
            self._file.visititems(
                lambda n, o: shapes.__setitem__(n, o.shape) if isinstance(o, h5py.Dataset) else None)
        return shapes

    def keys(self) -> list[str]:
        """Every dataset path in the file, e.g. "action", "observations/qpos", "labels/progress"."""
        return sorted(self._shapes)

    def __contains__(self, name: str) -> bool:
        return name in self._shapes

    def __getitem__(self, name: str) -> npt.NDArray[np.generic]:
        if name not in self._cache:
            ds = self.dataset(name)
            check_backed(ds, self.path, name)
            with hdf5_errors(self.path, name):
                self._cache[name] = ds[()]
        return self._cache[name]

    def dataset(self, name: str) -> h5py.Dataset:
        """The lazy HDF5 dataset (slice it to read part of a large image stream)."""
        if name not in self._shapes:
            raise DatasetError(f"{self.path}: {name}: found missing; allowed: {', '.join(self.keys())}")
        with hdf5_errors(self.path, name):
            return self._file[name]

    def numeric(self, name: str, ndim: int, min_rows: int = 0, bound: float | None = None) -> npt.NDArray[np.generic]:
        """Dataset `name` read whole, refused unless it is a real-valued array of `ndim` dimensions with at
        least `min_rows` rows (what arithmetic on it needs) and, with `bound`, every value finite and within
        +-bound (what a simulator may be given)."""
        arr = self[name]
        if arr.dtype.kind not in "biuf" or arr.ndim != ndim or (arr.shape[0] if arr.ndim else 0) < min_rows:
            rows = f" and at least {min_rows} rows" if min_rows else ""
            raise DatasetError(f"{self.path}: {name}: found {arr.dtype}{arr.shape}; "
                               f"allowed: a numeric array of {ndim} dimension(s){rows}")
        if bound is not None and arr.size:
            bad = ~(np.abs(arr.astype(np.float64, copy=False)) <= bound)  # NaN fails the comparison too
            if bad.any():
                where = np.argwhere(bad)[0]
                at = tuple(int(i) for i in where)
                raise DatasetError(f"{self.path}: {name}: found {float(arr[at])!r} at {at}; "
                                   f"allowed: finite values within +-{bound:g}")
        return arr

    def dataset_attrs(self, name: str) -> dict[str, Any]:
        ds = self.dataset(name)
        with hdf5_errors(self.path, f"{name} attrs"):
            return {k: _plain(v) for k, v in ds.attrs.items()}

    @functools.cached_property
    def attrs(self) -> dict[str, Any]:
        """Root attributes as plain Python values (JSON-valued ones stay text: see :meth:`json_attr`)."""
        with hdf5_errors(self.path, "attrs"):
            return {k: _plain(v) for k, v in self._file.attrs.items()}

    def _attr(self, name: str, default: Any = None) -> Any:
        with hdf5_errors(self.path, name):
            raw = self._file.attrs.get(name)
        return default if raw is None else _plain(raw)

    def _group(self, name: str) -> h5py.Group | None:
        with hdf5_errors(self.path, name):
            group = self._file.get(name)
        return group if isinstance(group, h5py.Group) else None

    # facts
    @property
    def index(self) -> int:
        value = self._attr("episode_index", -1)
        if as_int(value) is None:
            raise DatasetError(f"{self.path}: episode_index: found {value!r:.60}; allowed: an integer")
        return int(value)

    @property
    def frames(self) -> int:
        shape = self._shapes.get("timestamps")
        if not shape:
            raise DatasetError(f"{self.path}: timestamps: found missing; allowed: a (T,) dataset")
        return int(shape[0])

    @property
    def success(self) -> bool:
        value = self._attr("success", False)
        if not isinstance(value, bool | int):
            raise DatasetError(f"{self.path}: success: found {value!r:.60}; allowed: true or false")
        return bool(value)

    @property
    def cameras(self) -> list[str]:
        group = self._group("observations/images")
        if group is None:
            return []
        with hdf5_errors(self.path, "observations/images"):
            return sorted(group.keys())

    @property
    def subtask_names(self) -> list[str]:
        labels = self._group("labels")
        if labels is not None and "subtask_names" in labels.attrs:
            with hdf5_errors(self.path, "labels/subtask_names"):
                names = _plain(labels.attrs["subtask_names"])
            if not isinstance(names, list):
                raise DatasetError(f"{self.path}: labels/subtask_names: found {names!r:.60}; allowed: a list of names")
            return [str(n) for n in names]
        nodes = self.dag.get("nodes", [])
        if not isinstance(nodes, list):
            raise DatasetError(f"{self.path}: dag/nodes: found {json.dumps(nodes)[:60]}; allowed: a list of names")
        return [str(n) for n in nodes]

    @property
    def segments(self) -> list[Segment]:
        if "labels/subtask_index" not in self:
            return []
        labels = self["labels/subtask_index"]
        if labels.dtype.kind not in "iu" or labels.ndim != 1:
            raise DatasetError(f"{self.path}: labels/subtask_index: found {labels.dtype}{labels.shape}; "
                               "allowed: a (T,) integer array")
        return segments_from_labels(labels, self.subtask_names)

    @property
    def dag(self) -> dict[str, Any]:
        """nodes, edges and scores of the task DAG this episode was labelled with."""
        group = self._group("dag")
        if group is None:
            return {"nodes": [], "edges": [], "scores": {}}
        return {key: _json_attr(group.attrs, key, default, self.path)
                for key, default in (("nodes", []), ("edges", []), ("scores", {}))}

    @property
    def events(self) -> list[tuple[str, int]]:
        group = self._group("dag")
        return parse_events(_json_attr(group.attrs, "events", [], self.path) if group is not None else [], self.path)

    @property
    def failure(self) -> tuple[str, int, str] | None:
        group = self._group("dag")
        return parse_failure(_json_attr(group.attrs, "failure", None, self.path) if group is not None else None,
                        self.path)

    @property
    def outcome(self) -> str:
        """success, failure (a node failed or timed out) or unfinished (ended before every sink was done)."""
        return "success" if self.success else ("failure" if self.failure is not None else "unfinished")

    def json_attr(self, name: str, default: Any = None) -> Any:
        """A root attr stored as JSON text (versions, env_args, layout, ...), parsed."""
        return _json_attr(self._file.attrs, name, default, self.path)

    def problems(self) -> Iterator[str]:
        """Breaches of the file contract: missing required datasets, inconsistent T."""
        for name in REQUIRED_DATASETS:
            if name not in self:
                yield (f"{self.path}: {name}: found missing; "
                       f"allowed: required datasets {list(REQUIRED_DATASETS)}")
        if "timestamps" not in self:
            return
        frames = self.frames
        for name, shape in sorted(self._shapes.items()):
            if name.split("/")[0] in _UNTIMED:
                continue
            rows = shape[0] if shape else 0
            if rows != frames:
                yield f"{self.path}: {name}: found {rows} rows; allowed: {frames} (len of /timestamps)"

    def record(self, root: Path, digest: bool = True) -> EpisodeRecord:
        """The index line this file stands for (used to rebuild ``episodes.jsonl``); ``digest=False`` leaves
        the checksum out (a quick check that does not read every byte)."""
        seed, source = self._attr("seed"), self._attr("source")
        master_seed, slot = self._attr("master_seed"), self._attr("slot")
        if not isinstance(seed, int) or not isinstance(source, str) or \
                not all(v is None or isinstance(v, int) for v in (master_seed, slot)):
            raise DatasetError(f"{self.path}: seed/source/master_seed/slot: found {seed!r}/{source!r}/"
                               f"{master_seed!r}/{slot!r}; allowed: integer seeds and slot, a source name")
        return EpisodeRecord(
            index=self.index, file=os.path.relpath(self.path, root), frames=self.frames, success=self.success,
            seed=seed, source=source, segments=tuple(self.segments), bytes=self.path.stat().st_size,
            failure=self.failure, master_seed=master_seed, slot=slot,
            digest=file_digest(self.path) if digest else None,
        )

    def initial_digest(self) -> str:
        """What makes two episodes the same demonstration: the world they were stepped in and the state
        they started from (sha256 of model_xml and /states[0])."""
        h = hashlib.sha256(str(self._attr("model_xml", "")).encode("utf-8", errors="replace"))
        states = self.dataset("states")
        if len(states.shape) != 2 or states.shape[0] < 1 or states.dtype.kind not in "biuf":
            raise DatasetError(f"{self.path}: states: found {states.dtype}{states.shape}; "
                               "allowed: a (T, n) numeric array with T >= 1")
        with hdf5_errors(self.path, "states"):
            h.update(np.ascontiguousarray(states[0], dtype=np.float64).tobytes())
        return h.hexdigest()
