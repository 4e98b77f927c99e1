"""One episode's new version with camera streams: what to draw, and building the file.

The new file is a copy of the old one (every object copied as stored, raw chunks included) without the
streams being replaced, plus, per camera, the streams asked for (x2.sim.streams): ``/observations/images/<cam>``
(T, H, W, 3) uint8 with the intrinsics as attrs, ``/observations/depth/<cam>`` (T, H, W) float32 metres and
``/observations/segmentation/<cam>`` (T, H, W) uint16 ids with their table as attrs, each one Zstd chunk a frame;
``/observations/camera_poses/<cam>`` (T, 7), and with depth or segmentation ``/observations/camera_extrinsics/<cam>``
(T, 4, 4) (docs/format.md, "Camera streams"). Copying
into a fresh file rather than editing a copy in place keeps a re-render (``--overwrite``) as small as a
first one. Nothing here knows about the dataset: x2.render.dataset stages and commits the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import h5py
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.datasets.zstd import compress_frame, image_filter, zstd_lib
from x2.files.hdf5_guard import kept_if_complete
from x2.files.staging import fsync_file
from x2.recorded.frames import stored_cameras
from x2.recorded.world import SIM_BOUND, open_world
from x2.sim.camera import CENTRE, ImageSize, StateRenderer, opencv_matrix, optical_to_world
from x2.sim.streams import DEFAULT_STREAMS, DEPTH, RGB, SEGMENTATION

POSE_CONVENTION = "x y z (m), quaternion w x y z; MuJoCo camera axes: looking along -z, image up +y"
EXTRINSICS_CONVENTION = "4x4 camera to world; camera axes OpenCV's: x right, y down, z forward (looking along +z)"
DEPTH_CONVENTION = ("metres along the camera's optical axis (z, not the ray's length); a pixel that sees nothing "
                    "holds the far clipping distance")
_PATHS = {RGB: fmt.image_path, DEPTH: fmt.depth_path, SEGMENTATION: fmt.segmentation_path}


def _stored_size(ep: Episode, path: str) -> ImageSize | None:
    if path not in ep:
        return None
    shape = ep.dataset(path).shape
    return ImageSize(int(shape[1]), int(shape[2])) if len(shape) >= 3 and shape[0] == ep.frames else None


def cameras_to_draw(ep: Episode, cameras: Sequence[str], size: ImageSize, overwrite: bool,
                    streams: Sequence[str] = DEFAULT_STREAMS) -> tuple[str, ...]:
    """The requested cameras this episode still needs. A camera is done when each of its `streams` is stored at
    `size` with its poses (and, with depth or segmentation, its extrinsics); a stream stored at another size is
    refused unless `overwrite`."""
    stored = stored_cameras(ep)
    todo: list[str] = []
    for cam in cameras:
        done = fmt.camera_pose_path(cam) in ep and (
            streams == (RGB,) or fmt.camera_extrinsics_path(cam) in ep)
        for stream in streams:
            path = _PATHS[stream](cam)
            have = stored.get(cam) if stream == RGB else _stored_size(ep, path)
            done = done and have == size
            if have is not None and have != size and not overwrite:
                raise DatasetError(f"{ep.path}: {path}: found {have}; allowed: {size} as asked "
                                   f"(--size {have} keeps it, --overwrite renders it again at {size})")
        if not done:
            todo.append(cam)
    return tuple(todo)


def _untimed_gcpl() -> h5py.h5p.PropGCID:
    # Groups without modification times: the same episode renders to the same bytes at any hour.
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    return gcpl


def _group(parent: h5py.Group, path: str) -> h5py.Group:
    """The group at `path` under `parent`, each missing part of it created without times."""
    for name in path.split("/"):
        if name not in parent:
            h5py.h5g.create(parent.id, name.encode(), gcpl=_untimed_gcpl())
        parent = parent[name]
    return parent


def _copy_attrs(src: h5py.AttributeManager, dst: h5py.AttributeManager) -> None:
    for key in src:
        dst.create(key, src[key], dtype=src.get_id(key).dtype)  # the stored type, not h5py's guess


def _copy_without(src: h5py.Group, dst: h5py.Group, drop: set[str]) -> None:
    """Copy `src` into `dst` minus the objects at the paths in `drop` (relative to the file root)."""
    _copy_attrs(src.attrs, dst.attrs)
    for name in src:  # h5py lists links by name: the same order whatever order they were made in
        path = f"{src.name.rstrip('/')}/{name}".lstrip("/")
        if path in drop:
            continue
        obj = src.get(name, getclass=True)
        if obj is h5py.Group and any(d.startswith(path + "/") for d in drop):
            _copy_without(src[name], _group(dst, name), drop)
        else:
            src.copy(name, dst, name=name)  # H5Ocopy: stored bytes, filters and chunks as they are


def _shuffled(frame: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
    """HDF5's shuffle filter done by hand, for a chunk written direct: byte k of every value, for k in order. Depth
    and ids are stored shuffled, then Zstd: a third smaller than Zstd alone (bench/bench_render_streams.py)."""
    out: npt.NDArray[np.uint8] = np.ascontiguousarray(
        np.ascontiguousarray(frame).view(np.uint8).reshape(-1, frame.itemsize).T)
    return out


def _lens_attrs(ds: h5py.Dataset, renderer: StateRenderer, cam: str) -> None:
    """A depth or segmentation stream's camera: K in OpenCV's convention at its size, where its poses are."""
    intrinsics = renderer.intrinsics(cam)
    ds.attrs["K"] = opencv_matrix(intrinsics)
    ds.attrs["pixel_origin"] = CENTRE
    ds.attrs["height"], ds.attrs["width"] = intrinsics["height"], intrinsics["width"]
    if "distortion" in intrinsics:
        ds.attrs["distortion"] = intrinsics["distortion"]
    ds.attrs["body"] = renderer.camera_body(cam)
    ds.attrs["extrinsics"] = fmt.camera_extrinsics_path(cam)
    ds.attrs["renderer"] = renderer.description


def _create_streams(new: h5py.File, renderer: StateRenderer, cam: str, streams: Sequence[str], frames: int,
                    size: ImageSize) -> dict[str, h5py.Dataset]:
    out: dict[str, h5py.Dataset] = {}
    h, w = size.height, size.width
    if RGB in streams:
        ds = _group(new, fmt.IMAGES).create_dataset(cam, shape=(frames, h, w, 3), dtype=np.uint8, chunks=(1, h, w, 3),
                                                    track_times=False, **image_filter())
        for key, value in renderer.intrinsics(cam).items():
            ds.attrs[key] = value
        ds.attrs["body"] = renderer.camera_body(cam)
        ds.attrs["poses"] = fmt.camera_pose_path(cam)
        ds.attrs["renderer"] = renderer.description
        out[RGB] = ds
    if DEPTH in streams:
        ds = _group(new, fmt.DEPTH).create_dataset(cam, shape=(frames, h, w), dtype=np.float32, chunks=(1, h, w),
                                                   track_times=False, shuffle=True, **image_filter())
        ds.attrs["unit"] = "m"
        ds.attrs["convention"] = DEPTH_CONVENTION
        _lens_attrs(ds, renderer, cam)
        out[DEPTH] = ds
    if SEGMENTATION in streams:
        ds = _group(new, fmt.SEGMENTATION).create_dataset(cam, shape=(frames, h, w), dtype=np.uint16,
                                                          chunks=(1, h, w), track_times=False, shuffle=True,
                                                          **image_filter())
        table = renderer.segment_table
        ds.attrs[fmt.NAMES_ATTR] = list(table.names)
        ds.attrs[fmt.SEGMENT_KINDS_ATTR] = list(table.kinds)
        _lens_attrs(ds, renderer, cam)
        out[SEGMENTATION] = ds
    return out


def write_rendered(src: Path, dst: Path, cameras: Sequence[str], size: ImageSize,
                   on_frames: Callable[[int], None] | None = None, report_every: int = 16,
                   streams: Sequence[str] = DEFAULT_STREAMS) -> int:
    """Build `dst`: the episode at `src` with the `streams` of `cameras` (re)drawn at `size`; fsynced. Returns the
    frames rendered. `on_frames(n)` is told every `report_every` frames how many are done."""
    streams = tuple(streams)
    lensed = DEPTH in streams or SEGMENTATION in streams
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    drop = {_PATHS[s](cam) for cam in cameras for s in streams} | {fmt.camera_pose_path(cam) for cam in cameras}
    if lensed:
        drop |= {fmt.camera_extrinsics_path(cam) for cam in cameras}
    with Episode(src) as ep, open_world(ep) as world, world.backend.renderer(cameras, size) as renderer, \
            h5py.File(src, "r") as old, kept_if_complete(dst, "w", libver="latest") as new:
        _copy_without(old, new, drop)
        states = ep.numeric(fmt.STATES, 2, 1, bound=SIM_BOUND)
        frames = int(states.shape[0])
        for group in ([fmt.IMAGES] if RGB in streams else []) + [fmt.CAMERA_POSES]:
            _group(new, group)  # made in the order x2 always made them: the same bytes for the same streams
        datasets = {cam: _create_streams(new, renderer, cam, streams, frames, size) for cam in cameras}
        poses = {cam: np.empty((frames, 7), np.float64) for cam in cameras}
        extrinsics = {cam: np.empty((frames, 4, 4), np.float64) for cam in cameras} if lensed else {}
        direct = zstd_lib() is not None
        for t in range(frames):
            renderer.set_state(states[t])
            for cam in cameras:
                shot: dict[str, npt.NDArray[np.generic] | None]
                if streams == (RGB,):  # the picture alone: as x2 always drew it
                    shot = {RGB: renderer.render(cam)}
                else:
                    s = renderer.shot(cam, streams)
                    shot = {RGB: s.rgb, DEPTH: s.depth, SEGMENTATION: s.segmentation}
                for stream, ds in datasets[cam].items():
                    frame = shot[stream]
                    assert frame is not None
                    if direct:
                        data = frame if stream == RGB else _shuffled(frame)
                        ds.id.write_direct_chunk((t,) + (0,) * (ds.ndim - 1), compress_frame(data), 0)
                    else:
                        ds[t] = frame  # the HDF5 filter compresses
                poses[cam][t] = renderer.camera_pose(cam)
                if lensed:
                    extrinsics[cam][t] = optical_to_world(*renderer.camera_frame(cam))
            if on_frames is not None and ((t + 1) % report_every == 0 or t + 1 == frames):
                on_frames(t + 1)
        for cam in cameras:
            ds = _group(new, fmt.CAMERA_POSES).create_dataset(cam, data=poses[cam], track_times=False)
            ds.attrs["convention"] = POSE_CONVENTION
            ds.attrs["body"] = renderer.camera_body(cam)
            if lensed:
                ds = _group(new, fmt.CAMERA_EXTRINSICS).create_dataset(cam, data=extrinsics[cam], track_times=False)
                ds.attrs["convention"] = EXTRINSICS_CONVENTION
                ds.attrs["body"] = renderer.camera_body(cam)
    fsync_file(dst)
    return frames
