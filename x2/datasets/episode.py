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
import io
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin  # noqa: F401  (registers the Zstd filter that image datasets use)
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets.index import EpisodeRecord, Segment
from x2.datasets.untrusted import as_int, check_backed, hdf5_errors, parse_events, parse_failure, parse_json
from x2.files.digest import file_digest


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

    def __init__(self, path: Path, swmr: bool = False, image: bytes | None = None) -> None:
        """The episode file at `path`; with `image`, that file's bytes already read (x2.datasets.verified): h5py
        opens them from memory and `path` only names them."""
        self.path = Path(path)
        try:
            if image is not None:
                self._file = h5py.File(io.BytesIO(image), "r")  # (BytesIO shares `image`'s buffer: no copy)
            elif swmr:
                self._file = h5py.File(self.path, "r", libver="latest", swmr=True)
            else:
                self._file = h5py.File(self.path, "r")
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
        value = self._attr(fmt.INDEX_ATTR, -1)
        if as_int(value) is None:
            raise DatasetError(f"{self.path}: episode_index: found {value!r:.60}; allowed: an integer")
        return int(value)

    @property
    def frames(self) -> int:
        shape = self._shapes.get(fmt.TIMESTAMPS)
        if not shape:
            raise DatasetError(f"{self.path}: timestamps: found missing; allowed: a (T,) dataset")
        return int(shape[0])

    @property
    def success(self) -> bool:
        value = self._attr(fmt.SUCCESS_ATTR, False)
        if not isinstance(value, bool | int):
            raise DatasetError(f"{self.path}: success: found {value!r:.60}; allowed: true or false")
        return bool(value)

    # Root attributes as readers use them: text (empty when absent) and numbers (None when absent).
    def text(self, name: str) -> str:
        """A root attr as text ("" when absent)."""
        value = self._attr(name)
        return "" if value is None else str(value)

    @property
    def task(self) -> str:
        return self.text(fmt.TASK_ATTR)

    @property
    def instruction(self) -> str:
        return self.text(fmt.INSTRUCTION_ATTR)

    @property
    def model_xml(self) -> str:
        return self.text(fmt.MODEL_XML_ATTR)

    @property
    def textures(self) -> dict[str, bytes]:
        """The images the world carries beside `model_xml` (/textures/<name>), by name; {} when the file has none
        (every world without an object made from a textured mesh, and every older file)."""
        names = sorted(n.split("/", 1)[1] for n in self._shapes if n.startswith(f"{fmt.TEXTURES}/"))
        out: dict[str, bytes] = {}
        for name in names:
            data = self[fmt.texture_path(name)]
            if data.dtype != np.uint8 or data.ndim != 1:
                raise DatasetError(f"{self.path}: {fmt.texture_path(name)}: found {data.dtype}{data.shape}; "
                                   "allowed: (n,) uint8, an image's bytes")
            out[name] = data.tobytes()
        return out

    @property
    def source(self) -> str:
        return self.text(fmt.SOURCE_ATTR)

    @property
    def is_real(self) -> bool:
        """A real robot's recording read in (source "real"): no world, no simulator state, no labels."""
        return self.source == fmt.REAL_SOURCE

    def refuse_real(self, what: str) -> None:
        """The one line for a command that needs the world a real recording does not have."""
        if self.is_real:
            raise DatasetError(f"{self.path}: source: found 'real' (episode {self.index}, a real recording without a "
                               f"world); allowed: an episode recorded in x2's simulator ({what} needs the world it "
                               "ran in)")

    @property
    def split(self) -> str:
        """The split it was recorded for; "train" when the file says nothing."""
        return self.text(fmt.SPLIT_ATTR) or "train"

    @property
    def fps(self) -> float | None:
        value = self._attr(fmt.FPS_ATTR)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def parent_episode(self) -> int:
        value = self._attr(fmt.PARENT_EPISODE_ATTR, -1)
        return int(value) if as_int(value) is not None else -1

    @property
    def cameras(self) -> list[str]:
        group = self._group(fmt.IMAGES)
        if group is None:
            return []
        with hdf5_errors(self.path, fmt.IMAGES):
            return sorted(group.keys())

    @property
    def subtask_names(self) -> list[str]:
        labels = self._group(fmt.LABELS)
        if labels is not None and fmt.SUBTASK_NAMES_ATTR in labels.attrs:
            with hdf5_errors(self.path, fmt.label_path(fmt.SUBTASK_NAMES_ATTR)):
                names = _plain(labels.attrs[fmt.SUBTASK_NAMES_ATTR])
            if not isinstance(names, list):
                raise DatasetError(f"{self.path}: labels/subtask_names: found {names!r:.60}; allowed: a list of names")
            return [str(n) for n in names]
        nodes = self.dag.get("nodes", [])
        if not isinstance(nodes, list):
            raise DatasetError(f"{self.path}: dag/nodes: found {json.dumps(nodes)[:60]}; allowed: a list of names")
        return [str(n) for n in nodes]

    @property
    def segments(self) -> list[Segment]:
        if fmt.SUBTASK_INDEX not in self:
            return []
        labels = self[fmt.SUBTASK_INDEX]
        if labels.dtype.kind not in "iu" or labels.ndim != 1:
            raise DatasetError(f"{self.path}: labels/subtask_index: found {labels.dtype}{labels.shape}; "
                               "allowed: a (T,) integer array")
        return segments_from_labels(labels, self.subtask_names)

    @property
    def arm_names(self) -> list[str]:
        """The arm of each arm_subtask_index column, in robot order ([] in an episode without per-arm labels)."""
        if fmt.ARM_SUBTASK_INDEX not in self:
            return []
        names = self.dataset_attrs(fmt.ARM_SUBTASK_INDEX).get(fmt.ARM_NAMES_ATTR)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise DatasetError(f"{self.path}: {fmt.ARM_SUBTASK_INDEX}: {fmt.ARM_NAMES_ATTR}: found {names!r:.60}; "
                               "allowed: a list of arm names")
        return names

    @property
    def arm_subtask_index(self) -> npt.NDArray[np.generic] | None:
        """(T, A) per arm, the subtask it works on (codes as subtask_index); None in an episode recorded before
        x2 kept per-arm labels (`x2 label` computes them for it, with every node on every arm)."""
        if fmt.ARM_SUBTASK_INDEX not in self:
            return None
        arr = self[fmt.ARM_SUBTASK_INDEX]
        names = self.arm_names
        if arr.dtype.kind not in "iu" or arr.ndim != 2 or arr.shape[1] != len(names):
            raise DatasetError(f"{self.path}: {fmt.ARM_SUBTASK_INDEX}: found {arr.dtype}{arr.shape}; "
                               f"allowed: a (T, {len(names)}) integer array, one column per arm of {names}")
        return arr

    @property
    def arm_segments(self) -> dict[str, list[Segment]]:
        """Per arm, the runs of its arm_subtask_index column ({} in an episode without per-arm labels)."""
        table = self.arm_subtask_index
        if table is None:
            return {}
        names = self.subtask_names
        return {arm: segments_from_labels(table[:, a], names) for a, arm in enumerate(self.arm_names)}

    @property
    def dag(self) -> dict[str, Any]:
        """nodes, edges and scores of the task DAG this episode was labelled with."""
        group = self._group(fmt.DAG)
        if group is None:
            return {"nodes": [], "edges": [], "scores": {}}
        return {key: _json_attr(group.attrs, key, default, self.path)
                for key, default in (("nodes", []), ("edges", []), ("scores", {}))}

    @property
    def node_arms(self) -> dict[str, list[str]] | None:
        """/dag `arms`: each node -> the arms it ran on. None in an episode recorded before x2 stored it: read
        that as every node on every arm."""
        raw, nodes = self._dag_map("arms")
        return None if raw is None else fmt.check_arms(raw, nodes, self.path)

    @property
    def node_starts(self) -> dict[str, int]:
        """/dag `starts`: the frame each node was started in by a collector that runs nodes (synthesis); {} when
        not recorded (teleoperation, older episodes)."""
        raw, nodes = self._dag_map("starts")
        return {} if raw is None else fmt.check_starts(raw, nodes, self.frames, self.path)

    @property
    def node_timeouts(self) -> bool:
        """/dag `timeouts`: whether the nodes' `timeout_s` could fail this episode (false: a teleoperated one,
        which a person ends; True when absent: synthesis, scripted, evaluated and every older episode)."""
        group = self._group(fmt.DAG)
        value = True if group is None else _json_attr(group.attrs, "timeouts", True, self.path)
        if not isinstance(value, bool):
            raise DatasetError(f"{self.path}: dag/timeouts: found {value!r:.40}; allowed: false, or absent")
        return value

    def _dag_map(self, name: str) -> tuple[Any, list[str]]:
        """A per-node /dag attr as stored (None when absent) and the DAG's nodes, for its check."""
        group = self._group(fmt.DAG)
        if group is None:
            return None, []
        nodes = _json_attr(group.attrs, "nodes", [], self.path)
        names = [str(n) for n in nodes] if isinstance(nodes, list) else []
        return _json_attr(group.attrs, name, None, self.path), names

    @property
    def events(self) -> list[tuple[str, int]]:
        group = self._group(fmt.DAG)
        return parse_events(_json_attr(group.attrs, "events", [], self.path) if group is not None else [], self.path)

    @property
    def failure(self) -> tuple[str, int, str] | None:
        group = self._group(fmt.DAG)
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
        required = fmt.required_datasets(self._attr(fmt.SOURCE_ATTR))
        for name in required:
            if name not in self:
                yield f"{self.path}: {name}: found missing; allowed: required datasets {list(required)}"
        if fmt.TIMESTAMPS not in self:
            return
        frames = self.frames
        for name, shape in sorted(self._shapes.items()):
            if name.split("/")[0] in fmt.UNTIMED_GROUPS:
                continue
            rows = shape[0] if shape else 0
            if rows != frames:
                yield f"{self.path}: {name}: found {rows} rows; allowed: {frames} (len of /timestamps)"

    def record(self, root: Path, digest: bool = True) -> EpisodeRecord:
        """The index line this file stands for (used to rebuild ``episodes.jsonl``); ``digest=False`` leaves
        the checksum out (a quick check that does not read every byte)."""
        seed, source = self._attr(fmt.SEED_ATTR), self._attr(fmt.SOURCE_ATTR)
        master_seed, slot = self._attr(fmt.MASTER_SEED_ATTR), self._attr(fmt.SLOT_ATTR)
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
        they started from (sha256 of model_xml and /states[0]). A real recording has neither: it is the same one
        when it was read from the same place (sha256 of its `recording` attr's source and episode, and /action)."""
        if self.is_real:
            origin = self.json_attr(fmt.RECORDING_ATTR, {})
            where = [origin.get("path"), origin.get("episode_index")] if isinstance(origin, dict) else [origin]
            h = hashlib.sha256(json.dumps(where, sort_keys=True).encode("utf-8"))
            with hdf5_errors(self.path, fmt.ACTION):
                h.update(np.ascontiguousarray(self.dataset(fmt.ACTION)[...], dtype=np.float32).tobytes())
            return h.hexdigest()
        h = hashlib.sha256(str(self._attr(fmt.MODEL_XML_ATTR, "")).encode("utf-8", errors="replace"))
        states = self.dataset(fmt.STATES)
        if len(states.shape) != 2 or states.shape[0] < 1 or states.dtype.kind not in "biuf":
            raise DatasetError(f"{self.path}: states: found {states.dtype}{states.shape}; "
                               "allowed: a (T, n) numeric array with T >= 1")
        with hdf5_errors(self.path, fmt.STATES):
            h.update(np.ascontiguousarray(states[0], dtype=np.float64).tobytes())
        return h.hexdigest()
