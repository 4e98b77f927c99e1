"""`x2 export zarr`: a diffusion-policy replay buffer (the layout diffusion_policy and UMI train from).

```
<name>.zarr/
  data/<key>       every exported episode's rows, concatenated in export order, time first:
                   action, timestamp, state (robot qpos), qvel, ee_pose, object_poses, subtask_index,
                   arm_subtask_index, progress, mujoco_state, and one (T, H, W, 3) uint8 array per camera;
                   with stored depth / segmentation (x2 render --streams): <cam>_depth (T, H, W) float32 metres,
                   <cam>_segmentation (T, H, W) uint16 ids, <cam>_extrinsics (T, 4, 4) float64
                   attrs: names (the column names: joints, arms, objects) where the episode names them; a depth or
                   segmentation array its K, pixel_origin, height, width; a segmentation names, kinds;
                   with --point-cloud N: point_cloud (T, N, 6) float32 xyz + rgb (x2/export/point_cloud.py)
  meta/episode_ends  (episodes,) int64, cumulative row counts: episode i is rows [ends[i-1], ends[i])
  .zattrs          x2_provenance: what the export was made from (x2.export.provenance)
```

`arm_subtask_index` (N, A) holds per arm the subtask it works on (labels/arm_subtask_index: x2's codes as
`subtask_index`, node index, len(nodes) done, -1 unfinished, same dtype), attr `names` the arm of each
column, as `ee_pose`'s: one array, so a ReplayBuffer user slices a column (`data["arm_subtask_index"][:, 0]`)
the way they slice an arm's pose. It is there when the episodes have per-arm labels for two or more arms
(a one-arm robot's column would be `subtask_index` again; older episodes have none).

Zarr format 2 by default: diffusion_policy and UMI open their buffers with zarr 2.x, which reads only
format 2 and only numcodecs compressors. Camera arrays hold one frame per chunk compressed with Blosc lz4
(clevel 5, no shuffle: diffusion_policy's default image compressor); low-dimensional arrays are stored
uncompressed in ~2 MB chunks. `meta/episode_ends` is written after everything else: a replay buffer
without it has no episodes. The whole tree is built beside the target, read back, and renamed into
place (x2.files.staging); `zip=True` packs the finished tree into one uncompressed ZIP (ZIP_STORED,
what zarr's ZipStore reads in place) instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numcodecs
import numpy as np
import numpy.typing as npt
import zarr
import zarr.codecs
import zarr.core.sync as zarr_sync
from zarr.abc.store import Store
from zarr.storage import LocalStore, ZipStore
from zarr.types import AnyArray

from x2 import format as fmt
from x2.base.errors import ExportError
from x2.datasets import Episode
from x2.export.episode_arrays import (
    EpisodeArrays,
    camera_batches,
    check_row_layout,
    read_episode,
    row_layout,
    taken_at,
)
from x2.export.point_cloud import (
    POINT_CLOUD_KEY,
    Crop,
    PointCloudOptions,
    base_origin,
    frame_points,
    sample_frame,
)
from x2.export.provenance import Json
from x2.export.request import ExportRequest, ProgressCallback, ProgressTracker, ignore_progress
from x2.export.sensor_streams import (
    DEPTH_SUFFIX,
    EXTRINSICS_SUFFIX,
    SEGMENTATION_SUFFIX,
    SensorStreams,
    blocks,
    check_streams,
    extrinsics,
    lens,
    stored_streams,
    table,
)
from x2.export.sources import ExportSources, Sizing, run_export
from x2.files.staging import clear_leftovers, staged
from x2.recorded.frames import DEFAULT_SIZE
from x2.recorded.shots import drawn_shots
from x2.recorded.world import recorded_env
from x2.sim.camera import ImageSize

if TYPE_CHECKING:
    from _hashlib import HASH

FORMATS = (2, 3)
LOW_DIM_CHUNK_BYTES = 2_000_000  # diffusion_policy's own target chunk size
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed entry times: the same export gives the same zip bytes


@dataclass(frozen=True)
class ZarrOptions:
    render_size: ImageSize = DEFAULT_SIZE  # for episodes without stored streams
    image_size: ImageSize | None = None  # resize every stream to this size
    zarr_format: int = 2
    zip: bool = False
    point_cloud: PointCloudOptions | None = None  # data/point_cloud, drawn from the states


@dataclass(frozen=True)
class ZarrSummary:
    path: Path
    episodes: int
    frames: int
    arrays: dict[str, tuple[tuple[int, ...], str]]  # data key -> (shape, dtype)
    episode_ends: list[int]
    image_sizes: dict[str, ImageSize] = field(default_factory=dict)
    bytes: int = 0


def _image_codec(zarr_format: int) -> numcodecs.Blosc | zarr.codecs.BloscCodec:
    if zarr_format == 2:
        return numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.NOSHUFFLE)
    return zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="noshuffle")


class _Writer:
    """The open replay buffer being filled, with a digest of every array's bytes in row order."""

    def __init__(self, root: zarr.Group, total: int, zarr_format: int) -> None:
        self.root, self.total, self.format = root, total, zarr_format
        self.data = root.create_group("data")
        self.digests: dict[str, HASH] = {}
        self.arrays: dict[str, AnyArray] = {}

    def create(self, key: str, row: tuple[int, ...], dtype: np.dtype[np.generic], image: bool,
               names: Sequence[str] = ()) -> None:
        row_bytes = max(1, int(np.prod(row, dtype=np.int64)) * dtype.itemsize)
        rows = 1 if image else max(1, min(self.total, LOW_DIM_CHUNK_BYTES // row_bytes))
        arr = self.data.create_array(key, shape=(self.total, *row), dtype=dtype, chunks=(rows, *row),
                                     compressors=_image_codec(self.format) if image else None,
                                     fill_value=0)
        if names:
            arr.attrs["names"] = list(names)
        self.arrays[key], self.digests[key] = arr, hashlib.sha256()

    def write(self, key: str, start: int, rows: npt.NDArray[np.generic]) -> None:
        rows = np.ascontiguousarray(rows, dtype=self.arrays[key].dtype)
        self.arrays[key][start:start + len(rows)] = rows
        self.digests[key].update(rows.tobytes())


def export_zarr(request: ExportRequest, options: ZarrOptions = ZarrOptions(),
                progress: ProgressCallback = ignore_progress) -> ZarrSummary:
    """Write the requested episodes as one replay buffer (a folder, or a .zip with options.zip)."""
    if options.zarr_format not in FORMATS:
        raise ExportError(f"--zarr-format: found {options.zarr_format}; allowed: {list(FORMATS)}")
    kind = "zarr zip" if options.zip else "zarr"
    return run_export(request, kind, lambda sources: _export(sources, options, progress),
                      Sizing(options.render_size, options.image_size))


def _export(sources: ExportSources, options: ZarrOptions, progress: ProgressCallback) -> ZarrSummary:
    target = sources.target
    sizes = sources.image_sizes
    total = sources.frames
    cameras = sources.cameras
    lenses: dict[str, Json] = {"camera_lenses": sources.camera_lenses(
        cameras, sizes, lambda ep: taken_at(ep, cameras, options.render_size))} if cameras else {}
    streams = stored_streams(sources.first_episode, cameras)
    if streams:  # (only then: an export without them keeps its provenance as it was)
        lenses["sensor_streams"] = streams.describe()
    if options.point_cloud is not None:
        lenses["point_cloud"] = _describe(options.point_cloud)
    meta = sources.provenance(format=f"diffusion_policy replay buffer (zarr {options.zarr_format})",
                              cameras={c: str(s) for c, s in sizes.items()}, **lenses)
    tracker = ProgressTracker(progress, len(sources.records), total)
    with staged(target, sources.request.overwrite) as tmp:
        build = _build_dir(target, tmp, options.zip)
        try:
            version: Literal[2, 3] = 3 if options.zarr_format == 3 else 2
            root = zarr.open_group(store=LocalStore(str(build)), mode="w", zarr_format=version)
            root.attrs["x2_provenance"] = meta
            tracker.enter("writing")
            ends, expected = _fill(root, sources, sizes, options, tracker, streams)
            tracker.enter("reading back")
            _read_back(LocalStore(str(build), read_only=True), expected, ends, target)
            if options.zip:
                tracker.enter("packing")
                _pack(build, tmp)
                _read_back(ZipStore(str(tmp), mode="r"), expected, ends, target)
        except BaseException:
            _settle_writes()  # before the partial tree is removed, or a late chunk write makes it again
            raise
        finally:
            if build != tmp:
                shutil.rmtree(build, ignore_errors=True)
    size = target.stat().st_size if target.is_file() else sum(p.stat().st_size for p in target.rglob("*")
                                                                if p.is_file())
    return ZarrSummary(target, len(sources.records), total, {k: (v[0], v[1]) for k, v in expected.items()}, ends,
                       sizes, size)


def _settle_writes() -> None:
    """Wait for the chunk writes zarr still has in flight. zarr writes an array's chunks as concurrent tasks
    on its own event loop; when one fails (a full disk) the assignment raises at once while the others go
    on writing, and each recreates its folders."""
    async def others() -> None:
        current = asyncio.current_task()
        await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not current), return_exceptions=True)

    with contextlib.suppress(Exception):
        zarr_sync.sync(others())


def _build_dir(target: Path, tmp: Path, zip_: bool) -> Path:
    """Where the tree is built: the staged temp itself, or (for a zip) a hidden folder beside it that a
    later run clears if this one is killed (same naming as x2.files.staging's partials)."""
    if not zip_:
        return tmp
    pseudo = target.with_name(f"{target.name}.tree")
    clear_leftovers(pseudo)
    return pseudo.with_name(f".{pseudo.name}{tmp.name.removeprefix(f'.{target.name}')}")


def _fill(root: zarr.Group, sources: ExportSources, sizes: dict[str, ImageSize], options: ZarrOptions,
          tracker: ProgressTracker, streams: SensorStreams
          ) -> tuple[list[int], dict[str, tuple[tuple[int, ...], str, str]]]:
    cameras, total = sources.cameras, sources.frames
    writer = _Writer(root, total, options.zarr_format)
    layout: dict[str, tuple[tuple[int, ...], str]] | None = None
    names = sources.column_names()
    start, ends = 0, []
    for source in sources.written():
        ep, record = source.episode, source.record
        arrays = read_episode(ep, names, sources.arms, sources.request.action)
        if arrays.frames != record.frames:
            raise ExportError(f"{ep.path}: frames: found {arrays.frames}, the index says {record.frames}; "
                              "allowed: an index that matches its files (x2 datasets validate --repair)")
        if layout is None:
            layout = row_layout(arrays)
            _create_arrays(writer, arrays, cameras, sizes)
            _create_streams(writer, ep, streams, sizes)
        check_row_layout(arrays, layout)
        check_streams(ep, streams)
        _write_streams(writer, ep, streams, sizes, start)
        for key, values in _low_dim(arrays).items():
            writer.write(key, start, values)
        if options.point_cloud is not None:
            _write_point_clouds(writer, ep, options.point_cloud, start, first=start == 0)
        done = 0
        for batch in (camera_batches(ep, cameras, options.render_size, sizes) if cameras else ()):
            n = len(batch[cameras[0]])
            for cam in cameras:
                writer.write(cam, start + done, batch[cam])
            done += n
            tracker.advance(n)
        if not cameras:
            tracker.advance(arrays.frames)
        start += arrays.frames
        ends.append(start)
        tracker.episode_done()
    # The commit point: written last, so a tree without it has no episodes to a replay-buffer reader.
    meta = root.create_group("meta")
    meta.create_array("episode_ends", shape=(len(ends),), dtype=np.int64, chunks=(max(1, len(ends)),),
                      compressors=None, fill_value=0)[:] = np.asarray(ends, np.int64)
    expected = {k: ((total, *a.shape[1:]), a.dtype.str, writer.digests[k].hexdigest())
                for k, a in writer.arrays.items()}
    return ends, expected


def _low_dim(arrays: EpisodeArrays) -> dict[str, npt.NDArray[np.generic]]:
    # (a real recording has no simulator state: its export has no mujoco_state)
    return {**arrays.low_dim} if arrays.states is None else {**arrays.low_dim, "mujoco_state": arrays.states}


def _create_arrays(writer: _Writer, arrays: EpisodeArrays, cameras: Sequence[str],
                   sizes: dict[str, ImageSize]) -> None:
    for key, values in _low_dim(arrays).items():
        writer.create(key, tuple(values.shape[1:]), values.dtype, image=False, names=arrays.names.get(key, ()))
    for cam in cameras:
        writer.create(cam, (sizes[cam].height, sizes[cam].width, 3), np.dtype(np.uint8), image=True)


def _create_streams(writer: _Writer, ep: Episode, streams: SensorStreams, sizes: dict[str, ImageSize]) -> None:
    for cam in streams.depth:
        h, w = sizes[cam].height, sizes[cam].width
        writer.create(cam + DEPTH_SUFFIX, (h, w), np.dtype(np.float32), image=True)
        writer.arrays[cam + DEPTH_SUFFIX].attrs.update({**lens(ep, fmt.depth_path(cam), sizes[cam]), "unit": "m"})
    for cam in streams.segmentation:
        h, w = sizes[cam].height, sizes[cam].width
        writer.create(cam + SEGMENTATION_SUFFIX, (h, w), np.dtype(np.uint16), image=True)
        writer.arrays[cam + SEGMENTATION_SUFFIX].attrs.update({**lens(ep, fmt.segmentation_path(cam), sizes[cam]),
                                                               **table(ep, cam)})
    for cam in streams.cameras:
        writer.create(cam + EXTRINSICS_SUFFIX, (4, 4), np.dtype(np.float64), image=False)


def _write_streams(writer: _Writer, ep: Episode, streams: SensorStreams, sizes: dict[str, ImageSize],
                   start: int) -> None:
    for suffix, cams, path in ((DEPTH_SUFFIX, streams.depth, fmt.depth_path),
                               (SEGMENTATION_SUFFIX, streams.segmentation, fmt.segmentation_path)):
        for cam in cams:
            done = 0
            for block in blocks(ep, path(cam), sizes[cam]):
                writer.write(cam + suffix, start + done, block)
                done += len(block)
    for cam in streams.cameras:
        writer.write(cam + EXTRINSICS_SUFFIX, start, extrinsics(ep, cam))


def _describe(pc: PointCloudOptions) -> dict[str, Json]:
    return {"points": pc.points, "cameras": list(pc.cameras), "size": str(pc.size), "seed": pc.seed,
            "crop": "the recorded booth's table top" if pc.crop is None else str(pc.crop), "frame": pc.frame,
            "layout": "x, y, z (m), r, g, b (0..255)", "source": "drawn from /states (x2/export/point_cloud.py)"}


def _write_point_clouds(writer: _Writer, ep: Episode, pc: PointCloudOptions, start: int, first: bool) -> None:
    """The episode's rows of data/point_cloud, drawn from its states, fused, cropped and sampled."""
    if first:
        writer.create(POINT_CLOUD_KEY, (pc.points, 6), np.dtype(np.float32), image=False)
    env = recorded_env(ep)
    crop = pc.crop if pc.crop is not None else Crop.table_top(env.booth)
    origin = base_origin(ep, env) if pc.frame == "base" else None
    rows = np.empty((ep.frames, pc.points, 6), np.float32)
    for t, (shots, _) in enumerate(drawn_shots(ep, pc.cameras, pc.size, where="--point-cloud-cameras")):
        xyz, rgb = frame_points([shots[c] for c in pc.cameras])
        rows[t] = sample_frame(xyz, rgb, crop, pc.points, (pc.seed, start + t), f"{ep.path}: frame {t}", origin)
    writer.write(POINT_CLOUD_KEY, start, rows)


def _read_back(store: Store, expected: dict[str, tuple[tuple[int, ...], str, str]], ends: list[int],
               target: Path) -> None:
    """Open what was written with zarr and compare every array's shape, dtype and bytes, and the ends."""
    where = f"{target}: read back"
    root = zarr.open_group(store=store, mode="r")
    ends_array, data = root["meta/episode_ends"], root["data"]
    if not isinstance(ends_array, zarr.Array) or not isinstance(data, zarr.Group):
        raise ExportError(f"{where}: found meta/episode_ends or data of another kind; allowed: an array and a group")
    got_ends = [int(e) for e in np.asarray(ends_array[:])]
    if got_ends != ends:
        raise ExportError(f"{where}: meta/episode_ends: found {got_ends[:5]}...; allowed: {ends[:5]}...")
    have = sorted(data.array_keys())
    if have != sorted(expected):
        raise ExportError(f"{where}: data: found keys {have}; allowed: {sorted(expected)}")
    for key, (shape, dtype, digest) in expected.items():
        arr = root[f"data/{key}"]
        assert isinstance(arr, zarr.Array)  # one of data's array keys
        if tuple(arr.shape) != shape or arr.dtype.str != dtype:
            raise ExportError(f"{where}: data/{key}: found {arr.dtype}{arr.shape}; allowed: {dtype}{shape}")
        h = hashlib.sha256()
        step = max(1, arr.chunks[0]) * max(1, 64 // max(1, arr.chunks[0]))
        for lo in range(0, shape[0], step):
            h.update(np.ascontiguousarray(arr[lo:lo + step]).tobytes())
        if h.hexdigest() != digest:
            raise ExportError(f"{where}: data/{key}: found other bytes than were written; allowed: identical")
    if hasattr(store, "close"):
        store.close()


def _pack(tree: Path, zip_path: Path) -> None:
    """The finished tree as one ZIP_STORED archive, entries sorted, fixed times (deterministic bytes)."""
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for path in files:
            info = zipfile.ZipInfo(path.relative_to(tree).as_posix(), date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
