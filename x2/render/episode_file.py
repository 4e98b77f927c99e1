"""One episode's new version with camera streams: what to draw, and building the file.

The new file is a copy of the old one (every object copied as stored, raw chunks included) without the
streams being replaced, plus, per camera, ``/observations/images/<cam>`` (T, H, W, 3) uint8, one Zstd
chunk a frame, with the intrinsics as attrs, and ``/observations/camera_poses/<cam>`` (T, 7). Copying
into a fresh file rather than editing a copy in place keeps a re-render (``--overwrite``) as small as a
first one. Nothing here knows about the dataset: x2.render.dataset stages and commits the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import h5py
import numpy as np

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.datasets.zstd import compress_frame, image_filter, zstd_lib
from x2.files.hdf5_guard import kept_if_complete
from x2.files.staging import fsync_file
from x2.recorded.frames import stored_cameras
from x2.recorded.world import SIM_BOUND, open_world
from x2.sim.camera import ImageSize

POSE_CONVENTION = "x y z (m), quaternion w x y z; MuJoCo camera axes: looking along -z, image up +y"


def cameras_to_draw(ep: Episode, cameras: Sequence[str], size: ImageSize, overwrite: bool) -> tuple[str, ...]:
    """The requested cameras this episode still needs. A camera is done when its stream is stored at
    `size` with its poses; stored at another size it is refused unless `overwrite`."""
    stored = stored_cameras(ep)
    todo: list[str] = []
    for cam in cameras:
        have = stored.get(cam)
        if have == size and fmt.camera_pose_path(cam) in ep:
            continue
        if have is not None and have != size and not overwrite:
            raise DatasetError(f"{ep.path}: {fmt.image_path(cam)}: found {have}; allowed: {size} as asked "
                               f"(--size {have} keeps it, --overwrite renders it again at {size})")
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


def write_rendered(src: Path, dst: Path, cameras: Sequence[str], size: ImageSize,
                   on_frames: Callable[[int], None] | None = None, report_every: int = 16) -> int:
    """Build `dst`: the episode at `src` with `cameras` (re)drawn at `size`; fsynced. Returns the frames
    rendered. `on_frames(n)` is told every `report_every` frames how many are done."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    drop = {f"{root}/{cam}" for cam in cameras for root in (fmt.IMAGES, fmt.CAMERA_POSES)}
    with Episode(src) as ep, open_world(ep) as world, world.backend.renderer(cameras, size) as renderer, \
            h5py.File(src, "r") as old, kept_if_complete(dst, "w", libver="latest") as new:
        _copy_without(old, new, drop)
        states = ep.numeric(fmt.STATES, 2, 1, bound=SIM_BOUND)
        frames = int(states.shape[0])
        images = _group(new, fmt.IMAGES)
        poses_group = _group(new, fmt.CAMERA_POSES)
        streams: dict[str, h5py.Dataset] = {}
        for cam in cameras:
            ds = images.create_dataset(cam, shape=(frames, size.height, size.width, 3), dtype=np.uint8,
                                       chunks=(1, size.height, size.width, 3), track_times=False, **image_filter())
            for key, value in renderer.intrinsics(cam).items():
                ds.attrs[key] = value
            ds.attrs["body"] = renderer.camera_body(cam)
            ds.attrs["poses"] = fmt.camera_pose_path(cam)
            ds.attrs["renderer"] = renderer.description
            streams[cam] = ds
        poses = {cam: np.empty((frames, 7), np.float64) for cam in cameras}
        direct = zstd_lib() is not None
        for t in range(frames):
            renderer.set_state(states[t])
            for cam in cameras:
                image = renderer.render(cam)
                if direct:
                    streams[cam].id.write_direct_chunk((t, 0, 0, 0), compress_frame(image), 0)
                else:
                    streams[cam][t] = image  # the HDF5 filter compresses
                poses[cam][t] = renderer.camera_pose(cam)
            if on_frames is not None and ((t + 1) % report_every == 0 or t + 1 == frames):
                on_frames(t + 1)
        for cam in cameras:
            ds = poses_group.create_dataset(cam, data=poses[cam], track_times=False)
            ds.attrs["convention"] = POSE_CONVENTION
            ds.attrs["body"] = renderer.camera_body(cam)
    fsync_file(dst)
    return frames
