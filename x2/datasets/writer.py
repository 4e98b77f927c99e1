"""EpisodeWriter: record one episode tick by tick into ``.inprogress/`` and commit it atomically.

Appends only copy into preallocated block buffers; every ``flush_every`` ticks the block goes to the
SWMR file and the file is flushed, so a crash loses at most one block of an episode that was lost
anyway. Camera frames are zstd-compressed on a small thread pool and written chunk by chunk with
``write_direct_chunk``. ``finish`` writes labels, DAG and timing, fsyncs, renames the file into
``episodes/`` and only then appends the index line: a finished episode is never half-visible.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import h5py
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Image
from x2.base.errors import DatasetError
from x2.datasets.attrs import set_attr
from x2.datasets.commit import seal
from x2.datasets.episode import segments_from_labels
from x2.datasets.index import EpisodeRecord, append_record
from x2.datasets.zstd import compress_frame, image_filter, zstd_lib
from x2.files.disk import is_refusal, refused
from x2.files.hdf5_guard import check_writes, discard, kept_if_complete, watch
from x2.files.staging import move_into_place
from x2.format import (
    TICK_STREAMS,
    EpisodeStart,
    Manifest,
    Tick,
    attr_value,
    check_dag,
    check_device,
    check_extra,
    check_labels,
    check_shapes,
    check_timing,
    root_attrs,
    safe_name,
    string_array,
)

_CHUNK_BYTES = 16 * 1024  # low-dim chunks: a short episode wastes little, a long one reads in few chunks
_IMAGE_LAG = 2  # ticks a frame may spend in the compression pool before append writes it (66 ms at 30 Hz)


def _write_rows(ds: h5py.Dataset, start: int, rows: npt.NDArray[np.generic]) -> None:
    # The low-level call skips h5py's fancy-index parsing: ~3x cheaper per block (measured).
    space = ds.id.get_space()
    space.select_hyperslab((start,) + (0,) * (rows.ndim - 1), rows.shape)
    ds.id.write(h5py.h5s.create_simple(rows.shape), space, rows)


class _Column:
    """One time-first stream: its block buffer and, once created, its resizable dataset."""

    def __init__(self, path: str, dtype: type, row_shape: tuple[int, ...], block: int, image: bool = False):
        self.path, self.dtype, self.row_shape, self.image = path, np.dtype(dtype), tuple(row_shape), image
        self.buf = np.zeros((0 if image else block, *self.row_shape), self.dtype)  # frames queue elsewhere
        self.ds: h5py.Dataset | None = None

    def create(self, f: h5py.File, attrs: Mapping[str, Any]) -> None:
        if self.image:  # one compressed chunk per frame, so a frame is written (and read) on its own
            chunks, extra = (1, *self.row_shape), image_filter()
        else:
            rows = max(1, min(1024, _CHUNK_BYTES // max(1, self.buf[0].nbytes)))
            chunks, extra = (rows, *self.row_shape), {}
        self.ds = f.create_dataset(self.path, shape=(0, *self.row_shape), maxshape=(None, *self.row_shape),
                                   dtype=self.dtype, chunks=chunks, track_times=False, **extra)
        for key, value in attrs.items():
            set_attr(self.ds, key, attr_value(value))


class EpisodeWriter:
    """Writes one episode; made by ``Dataset.begin_episode``. Use as a context manager to abort on error."""

    def __init__(self, *, index: int, inprogress: Path, final: Path, index_path: Path,
                 start: EpisodeStart,
                 manifest: Manifest, shapes: Mapping[str, tuple[int, ...]] | None,
                 object_names: Sequence[str], camera_attrs: Mapping[str, Mapping[str, Any]],
                 flush_every: int, on_close: Callable[[EpisodeRecord | None], None],
                 safe_note: Callable[[], str] = lambda: "finished episodes are intact") -> None:
        self.index, self.path, self._final, self._index_path = index, inprogress, final, index_path
        self._safe_note = safe_note  # what a refused write leaves safe, in words (the dataset knows)
        self._manifest, self._object_names = manifest, list(object_names)
        self._camera_attrs, self._block, self._on_close = dict(camera_attrs), max(1, flush_every), on_close
        self._root = root_attrs(index, start, manifest, inprogress)
        # A real recording (x2 import): no simulator state, and no labels or DAG (no task ran it)
        self._real = start.source == fmt.REAL_SOURCE
        # Wall-clock facts go to /timing, apart from the data: same seed, same bytes everywhere else.
        self._created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._columns: list[tuple[int, _Column]] = []  # (position in append's values, column)
        self._present: tuple[bool, ...] | None = None
        self._cams: dict[str, _Column] = {}
        self._frames: dict[str, deque[Any]] = {}  # cam -> futures (or raw frames without zstd)
        self._images_written = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending = self._written = 0
        self._last_t = -math.inf
        self._lateness: list[float] = []
        self._stages: dict[str, list[float]] = {}
        self._closed = False
        self._write_failed = False
        self._file: h5py.File | None = None
        self._swmr = False  # the file is open for SWMR writing (`_live`)
        self._shapes = dict(shapes) if shapes is not None else None

    def start(self) -> EpisodeWriter:
        watch()
        self._file = h5py.File(self.path, "w", libver="latest")
        for key, value in self._root.items():  # encoded and checked by root_attrs
            set_attr(self._file, key, value)
        if self._shapes is not None:
            self._setup_from_shapes(self._shapes)
            self._live()
        return self

    @property
    def frames(self) -> int:
        return self._written + self._pending

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, *rest: object) -> None:
        if self._closed:
            return
        self._write_failed |= exc is not None and is_refusal(exc)
        self.abort()
        if exc_type is None:
            raise DatasetError(f"{self.path}: finish: found context exited without finish(); "
                               "allowed: call finish() or abort() (the episode was discarded)")

    # ---- per tick -------------------------------------------------------------------------------
    def append(self, tick: Tick) -> None:
        """Record one tick. The set of streams (and image cameras) is fixed by the first tick."""
        if self._closed:
            raise DatasetError(f"{self.path}: append: found a closed writer; "
                               "allowed: append before finish/abort")
        timestamp, images = tick.timestamp, tick.images
        # In TICK_STREAMS order: the timestamp (a number), then the arrays (None where the tick has none).
        values: tuple[Any, ...] = (timestamp, tick.action, tick.qpos, tick.qvel, tick.ee_pose, tick.object_poses,
                                   tick.state)
        present = tuple(v is not None for v in values)
        if self._present is None:
            self._setup_once(values, images)
        if not self._swmr:
            self._live()
        if present != self._present or bool(images) != bool(self._cams):
            self._mismatch(values, images)
        if not timestamp > self._last_t:  # also refuses NaN
            raise DatasetError(f"{self.path}: timestamp: found {timestamp} after {self._last_t}; "
                               "allowed: strictly increasing sim time")
        row = self._pending
        for pos, col in self._columns:
            value = values[pos]
            if np.shape(value) != col.row_shape:
                raise DatasetError(f"{self.path}: {col.path}: found shape {np.shape(value)}; "
                                   f"allowed: {col.row_shape} (fixed by the first tick)")
            col.buf[row] = value
        if images:
            self._add_images(images)
        self._last_t = timestamp
        row_index = self.frames
        self._lateness.append(math.nan if tick.lateness_ms is None else float(tick.lateness_ms))
        if tick.stage_ms:
            for name, ms in tick.stage_ms.items():
                times = self._stages.get(name)
                if times is None:
                    times = self._stages[safe_name(name, "stage_ms", self.path)] = [math.nan] * row_index
                times.append(float(ms))
        for times in self._stages.values():
            if len(times) <= row_index:
                times.append(math.nan)
        self._pending += 1
        try:
            if self._cams:
                self._drain_images(keep=_IMAGE_LAG if self._pool else 0)
            if self._pending == self._block:
                self._flush()
        except (OSError, RuntimeError) as exc:  # full disk, I/O error: this episode is lost, finished ones are not
            self._refused(exc)

    def extend(self, columns: Mapping[str, npt.NDArray[np.generic]]) -> None:
        """Record many ticks at once: `columns` maps the streams' Tick field names (TICK_STREAMS; no images, no
        stage_ms) and optionally `lateness_ms` to arrays of one row per tick. What `append` would store tick by
        tick, with one write per stream: for ticks recorded elsewhere first (a synthesis worker's), where
        per-block flushes protect nothing."""
        if self._closed:
            raise DatasetError(f"{self.path}: extend: found a closed writer; allowed: extend before finish/abort")
        unknown = sorted(set(columns) - set(TICK_STREAMS) - {"lateness_ms"})
        if unknown:
            raise DatasetError(f"{self.path}: extend: found {unknown}; allowed: {list(TICK_STREAMS)}, lateness_ms "
                               "(images go through append)")
        timestamps = np.asarray(columns["timestamp"], dtype=np.float64)
        count = len(timestamps)
        if count == 0:
            return
        values = tuple(None if columns.get(name) is None else np.asarray(columns[name])[0] for name in TICK_STREAMS)
        if self._present is None:
            self._setup_once(values, None)
        if tuple(v is not None for v in values) != self._present or self._cams:
            self._mismatch(values, None)
        steps = np.diff(np.concatenate([[self._last_t], timestamps]))
        if not np.all(steps > 0):  # also refuses NaN
            bad = int(np.flatnonzero(~(steps > 0))[0])
            before = self._last_t if bad == 0 else timestamps[bad - 1]
            raise DatasetError(f"{self.path}: timestamp: found {timestamps[bad]} after {before}; "
                               "allowed: strictly increasing sim time")
        rows: list[tuple[_Column, npt.NDArray[np.generic]]] = []
        names = tuple(TICK_STREAMS)
        for pos, col in self._columns:
            value = timestamps if pos == 0 else np.asarray(columns[names[pos]])
            if value.shape != (count, *col.row_shape):
                raise DatasetError(f"{self.path}: {col.path}: found shape {value.shape}; allowed: "
                                   f"{(count, *col.row_shape)} (a row per timestamp, shaped by the first tick)")
            rows.append((col, np.ascontiguousarray(value, dtype=col.dtype)))
        late = columns.get("lateness_ms")
        lateness = [math.nan] * count if late is None else [float(v) for v in np.asarray(late, dtype=np.float64)]
        try:
            self._flush()  # what `append` buffered goes first
            start = self._written
            for col, value in rows:
                assert col.ds is not None
                col.ds.resize(start + count, axis=0)
                _write_rows(col.ds, start, value)
            assert self._file is not None
            if self._swmr:  # (a file that is not live is written at its close)
                self._file.flush()
            check_writes(self.path)
        except (OSError, RuntimeError) as exc:
            self._refused(exc)
        self._written += count
        self._last_t = float(timestamps[-1])
        self._lateness += lateness
        for times in self._stages.values():
            times += [math.nan] * count

    def _add_images(self, images: Mapping[str, npt.NDArray[np.generic]]) -> None:
        if images.keys() != self._cams.keys():
            raise DatasetError(f"{self.path}: images: found cameras {sorted(images)}; "
                               f"allowed: {sorted(self._cams)} (fixed by the first tick)")
        frames = {cam: np.asarray(frame) for cam, frame in images.items()}
        for cam, frame in frames.items():  # check all before queueing any: a refused tick leaves no trace
            shape = self._cams[cam].row_shape
            if frame.shape != shape or frame.dtype != np.uint8:
                raise DatasetError(f"{self.path}: images/{cam}: found {frame.dtype}{frame.shape}; "
                                   f"allowed: uint8{shape}")
        for cam, frame in frames.items():
            # The caller may reuse its render buffer after append returns: compress a private copy.
            copy = np.ascontiguousarray(frame).copy()
            self._frames[cam].append(self._pool.submit(compress_frame, copy) if self._pool else copy)

    # ---- setup ----------------------------------------------------------------------------------
    def _setup_once(self, values: tuple[Any, ...], images: Mapping[str, Image] | None) -> None:
        """The streams of the first tick, or the episode aborted: a half-set-up writer must not take more ticks."""
        try:
            self._setup_from_tick(values, images)
        except BaseException as exc:
            if is_refusal(exc):
                self._refused(exc)
            self.abort()
            raise

    def _setup_from_tick(self, values: tuple[Any, ...], images: Mapping[str, Image] | None) -> None:
        shapes = {name: np.shape(v) for name, v in zip(TICK_STREAMS, values, strict=True) if v is not None}
        shapes.update({fmt.IMAGE_STREAM_PREFIX + cam: np.shape(frame) for cam, frame in (images or {}).items()})
        self._setup_from_shapes(shapes)

    def _setup_from_shapes(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        shapes = check_shapes(shapes, self.path, real=self._real)
        self._present = tuple(name == "timestamp" or name in shapes for name in TICK_STREAMS)
        for pos, (name, (path, dtype)) in enumerate(TICK_STREAMS.items()):
            if self._present[pos]:
                shape = () if name == "timestamp" else shapes[name]
                self._columns.append((pos, _Column(path, dtype, shape, self._block)))
        for key, shape in shapes.items():
            if key.startswith(fmt.IMAGE_STREAM_PREFIX):
                cam = key.removeprefix(fmt.IMAGE_STREAM_PREFIX)
                self._cams[cam] = _Column(fmt.image_path(cam), np.uint8, shape, 0, image=True)
                self._frames[cam] = deque()
        if self._cams and zstd_lib() is not None:
            workers = min(2, os.cpu_count() or 1)
            self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="x2-zstd")
        self._create_datasets()

    def _create_datasets(self) -> None:
        assert self._file is not None
        names = self._manifest.stream_names()
        for _, col in self._columns:
            attrs: dict[str, Any] = {}
            wanted = names.get(col.path, [])
            if wanted and col.row_shape == (len(wanted),):
                attrs[fmt.NAMES_ATTR] = string_array(wanted)
            if col.path == fmt.OBJECT_POSES:
                if len(self._object_names) != col.row_shape[0]:
                    raise DatasetError(f"{self.path}: object_names: found {len(self._object_names)} names; "
                                       f"allowed: {col.row_shape[0]}, one per object_poses row "
                                       "(begin_episode(object_names=...))")
                attrs[fmt.NAMES_ATTR] = string_array(self._object_names)
            col.create(self._file, attrs)
        for cam, col in self._cams.items():
            col.create(self._file, self._camera_attrs.get(cam, {}))

    def _live(self) -> None:
        """From here on the file only grows datasets: a crash leaves it readable by an SWMR reader (and
        `x2 datasets validate --repair` salvages its frames). For ticks written as they come; an episode given
        whole to `extend` skips it, and the rest of the file goes in without closing and reopening it."""
        assert self._file is not None and not self._swmr
        self._file.swmr_mode = self._swmr = True

    def _mismatch(self, values: tuple[Any, ...], images: Mapping[str, npt.NDArray[np.generic]] | None) -> None:
        assert self._present is not None
        for name, value, expected in zip(TICK_STREAMS, values, self._present, strict=True):
            if (value is not None) != expected:
                found = "missing" if value is None else "given"
                raise DatasetError(f"{self.path}: {name}: found {found} at tick {self.frames}; "
                                   "allowed: the same streams every tick (fixed by the first tick)")
        raise DatasetError(f"{self.path}: images: found {sorted(images or {})} at tick {self.frames}; "
                           f"allowed: {sorted(self._cams)} every tick")

    # ---- flush / finish -------------------------------------------------------------------------
    def _flush(self) -> None:
        rows, start = self._pending, self._written
        if rows == 0 or self._file is None:
            return
        for _, col in self._columns:
            assert col.ds is not None
            col.ds.resize(start + rows, axis=0)
            _write_rows(col.ds, start, col.buf[:rows])
        self._file.flush()
        check_writes(self.path)
        self._written, self._pending = start + rows, 0

    def _drain_images(self, keep: int) -> None:
        """Write every queued frame but the newest ``keep`` per camera, in tick order.

        A fixed lag rather than "whatever has finished compressing" keeps the write order, hence the
        file's bytes, independent of timing, while the pool gets ``keep`` ticks to compress each frame.
        """
        count = self.frames - keep - self._images_written
        if count <= 0:
            return
        start = self._images_written
        for cam, col in self._cams.items():
            assert col.ds is not None
            col.ds.resize(start + count, axis=0)
            queue = self._frames[cam]
            for j in range(count):
                item = queue.popleft()
                if self._pool is None:
                    col.ds[start + j] = item  # the HDF5 filter compresses, on this thread
                else:
                    col.ds.id.write_direct_chunk((start + j, 0, 0, 0), item.result(), 0)
        self._images_written += count

    def finish(self, labels: Mapping[str, Any], dag: Mapping[str, Any], success: bool,
               extra_attrs: Mapping[str, Any] | None = None,
               device: Mapping[str, Mapping[str, Any]] | None = None,
               timing: Mapping[str, Any] | None = None,
               device_attrs: Mapping[str, Mapping[str, Any]] | None = None,
               timing_attrs: Mapping[str, Any] | None = None,
               textures: Mapping[str, bytes] | None = None,
               ee_arrays: Mapping[str, npt.NDArray[np.generic]] | None = None,
               ee_attrs: Mapping[str, Any] | None = None) -> EpisodeRecord:
        """Write the rest, commit the file into ``episodes/`` and append its index line.

        ``timing`` adds per-stage (T,) arrays in ms for callers that time stages outside ``append``, and
        ``timing_attrs`` other wall-clock facts (missed control slots, ...) as /timing attrs;
        ``device`` raw device streams as /device/<name>/<key> arrays, ``device_attrs`` their group attrs;
        ``textures`` the images the world carries beside its ``model_xml`` as /textures/<name> (none: no group);
        ``ee_arrays`` an end-effector policy's per-frame arrays as /ee_action/<key> (one row a frame), with
        ``ee_attrs`` on its first array (/ee_action/action: the action's kind and names).
        """
        if self._closed:
            raise DatasetError(f"{self.path}: finish: found a closed writer; allowed: finish once")
        frames = self.frames
        if frames == 0:
            self.abort()
            raise DatasetError(f"{self.path}: frames: found 0; allowed: at least one appended tick "
                               "(the empty episode was discarded)")
        if self._real and (labels or dag):
            self.abort()
            raise DatasetError(f"{self.path}: labels/dag: found {sorted({*labels, *dag})}; allowed: none for a real "
                               "recording (no task labelled it; the episode was discarded)")
        label_arrays, names, arm_names = check_labels(labels, dag, frames, self.path)
        dag_attrs, completion = check_dag(dag, frames, self.path)
        extra = check_extra(extra_attrs or {}, self.path)
        device_arrays = check_device(device or {}, self.path)
        group_attrs = {name: {k: attr_value(v, f"{self.path}: device/{name}") for k, v in attrs.items()}
                       for name, attrs in (device_attrs or {}).items() if name in device_arrays}
        per_tick = dict(self._stages)
        if any(not math.isnan(v) for v in self._lateness):
            per_tick["lateness"] = self._lateness
        timing_arrays = check_timing(per_tick, timing or {}, frames, self.path)
        for key, arr in (ee_arrays or {}).items():
            if len(arr) != frames:
                self.abort()
                raise DatasetError(f"{self.path}: {fmt.EE_ACTION}/{key}: found {len(arr)} rows; allowed: {frames}")
        clock = {safe_name(k, "timing_attrs", self.path): attr_value(v, f"{self.path}: timing/{k}")
                 for k, v in (timing_attrs or {}).items()}
        images = {safe_name(k, fmt.TEXTURES, self.path): _image_bytes(v, k, self.path)
                  for k, v in sorted((textures or {}).items())}
        try:
            self._write_rest(success, extra, label_arrays, (names, arm_names), dag_attrs, completion,
                             device_arrays, timing_arrays, group_attrs, clock, images,
                             (ee_arrays or {}, ee_attrs or {}))
            digest = seal(self.path)
            move_into_place(self.path, self._final)
        except (OSError, RuntimeError) as exc:
            self._refused(exc)
        failure = dag_attrs["failure"]
        record = EpisodeRecord(
            index=self.index, file=f"{self._final.parent.name}/{self._final.name}", frames=frames,
            success=bool(success), seed=int(self._root[fmt.SEED_ATTR]),
            source=str(self._root[fmt.SOURCE_ATTR]), master_seed=self._root.get(fmt.MASTER_SEED_ATTR),
            slot=self._root.get(fmt.SLOT_ATTR),
            segments=tuple(segments_from_labels(label_arrays.get("subtask_index", np.zeros(0)), names)),
            bytes=self._final.stat().st_size, digest=digest,
            failure=None if failure is None else (str(failure[0]), int(failure[1]), str(failure[2])),
        )
        self._close(record)
        try:
            append_record(self._index_path, record)
        except OSError as exc:
            raise refused(exc, self._index_path, f"episode {self.index} is committed in {self._final.parent} (the "
                                                 "next writer or `x2 datasets validate --repair` lists it)") from None
        return record

    def _refused(self, exc: BaseException) -> NoReturn:
        """Discard the episode after a failed write and say what happened; a bug is re-raised as it is."""
        self._write_failed = is_refusal(exc)
        self.abort()
        if not is_refusal(exc):
            raise exc
        raise refused(exc, self.path, f"the episode in progress was discarded, {self._safe_note()}") from None

    def _write_rest(self, success: bool, extra: Mapping[str, Any], label_arrays: Mapping[str, npt.NDArray[np.generic]],
                    names: tuple[Sequence[str], Sequence[str]], dag_attrs: Mapping[str, Any],
                    completion: npt.NDArray[np.generic],
                    device_arrays: Mapping[str, Mapping[str, npt.NDArray[np.generic]]],
                    timing_arrays: Mapping[str, npt.NDArray[np.generic]],
                    device_attrs: Mapping[str, Mapping[str, Any]], timing_attrs: Mapping[str, Any],
                    textures: Mapping[str, npt.NDArray[np.uint8]],
                    ee: tuple[Mapping[str, npt.NDArray[np.generic]], Mapping[str, Any]]) -> None:
        """Last frames, then labels, DAG, timing, device (SWMR allows no new objects: a live file is reopened)."""
        self._drain_images(keep=0)
        self._flush()
        self._shutdown_pool()
        assert self._file is not None
        if self._swmr:
            self._file.flush()  # a failure here leaves the file open, for abort() to discard without a crash
            file, self._file = self._file, None
            file.close()
        else:
            file, self._file = self._file, None  # kept_if_complete discards it on a failure
        with kept_if_complete(self.path, "r+", libver="latest", opened=None if self._swmr else file) as f:
            set_attr(f, fmt.SUCCESS_ATTR, bool(success))
            for key, value in extra.items():  # encoded and checked by check_extra
                set_attr(f, key, value)
            if not self._real:
                self._write_labels(f, label_arrays, names, dag_attrs, completion)
            group = f.create_group(fmt.TIMING)
            set_attr(group, fmt.CREATED_UTC_ATTR, self._created)
            for key, value in timing_attrs.items():
                set_attr(group, key, value)
            for stage, times in sorted(timing_arrays.items()):
                f.create_dataset(fmt.timing_path(stage), data=times, track_times=False)
            for name, streams in device_arrays.items():
                group = f.create_group(fmt.device_path(name))
                for key, arr in streams.items():
                    group.create_dataset(key, data=arr, track_times=False)
                for key, value in device_attrs.get(name, {}).items():
                    set_attr(group, key, value)
            for name, data in textures.items():  # (PNG bytes: compressed already)
                f.create_dataset(fmt.texture_path(name), data=data, track_times=False)
            if ee[0]:
                group = f.create_group(fmt.EE_ACTION)
                for i, (key, arr) in enumerate(ee[0].items()):
                    ds = group.create_dataset(key, data=arr, track_times=False)
                    for name, value in ee[1].items() if i == 0 else ():
                        set_attr(ds, name, value)

    @staticmethod
    def _write_labels(f: h5py.File, label_arrays: Mapping[str, npt.NDArray[np.generic]],
                      names: tuple[Sequence[str], Sequence[str]], dag_attrs: Mapping[str, Any],
                      completion: npt.NDArray[np.generic]) -> None:
        group = f.create_group(fmt.LABELS)
        subtask_names, arm_names = names
        set_attr(group, fmt.SUBTASK_NAMES_ATTR, string_array(subtask_names))
        for key, arr in label_arrays.items():
            ds = group.create_dataset(key, data=arr, track_times=False)
            if fmt.label_path(key) == fmt.ARM_SUBTASK_INDEX:
                set_attr(ds, fmt.ARM_NAMES_ATTR, string_array(arm_names))
        group = f.create_group(fmt.DAG)
        for key, value in dag_attrs.items():
            set_attr(group, key, json.dumps(value, sort_keys=True))
        f.create_dataset(fmt.COMPLETION_FRAME, data=completion, track_times=False)

    def abort(self) -> None:
        """Discard the episode: close and remove the in-progress file. Safe to call twice."""
        if self._closed:
            return
        with contextlib.suppress(Exception):  # a compression thread's failure must not stop the discard
            self._shutdown_pool()
        file, self._file = self._file, None
        # Called while a refused write is being handled (from any caller's except block): the file is suspect.
        failed = self._write_failed or is_refusal(sys.exc_info()[1] or Exception())
        discard(file, self.path, failed=failed)
        self._close()

    def _shutdown_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _close(self, committed: EpisodeRecord | None = None) -> None:
        self._closed = True
        self._on_close(committed)


def _image_bytes(data: object, name: str, path: Path) -> npt.NDArray[np.uint8]:
    if not isinstance(data, bytes) or not data:
        raise DatasetError(f"{path}: {fmt.texture_path(name)}: found {type(data).__name__}; allowed: the image's bytes")
    return np.frombuffer(data, dtype=np.uint8)
