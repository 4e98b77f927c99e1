"""`x2 export hdf5`: one robomimic-layout HDF5 file, with Isaac Lab Mimic's `datagen_info` per demo.

```
/                          attrs: x2_provenance (JSON)
/data                      attrs: total (frames), env_args (JSON: env_name, type, env_kwargs)
/data/demo_000000          attrs: num_samples, success, seed, model_file (the episode's MJCF), x2_episode,
                                  source, split (the episode's part, see below), instruction
    actions (T, A) float32      states (T, D) float64: the full MuJoCo state (mjSTATE_INTEGRATION)
    rewards (T,) float64        dones (T,) int64
    obs/state, qvel, <arm>_ee_pose (T, 7), <object>_pose (T, 7), subtask_index, <arm>_subtask_index,
        progress, <cam>_image; with stored depth / segmentation (x2 render --streams): <cam>_depth
        (T, H, W, 1) float32 metres (robomimic's depth modality: a key ending _depth, channel last),
        <cam>_segmentation (T, H, W, 1) uint16 ids (attrs names, kinds), <cam>_extrinsics (T, 4, 4) float64
        camera (OpenCV axes) to world; depth and segmentation carry attrs K, pixel_origin, height, width
    next_obs/<key>              obs/<key> one row later (the last row repeats): virtual, no copy
    obs/datagen_info/eef_pose/<arm>, object_pose/<object> (T, 4, 4); gripper_action/<arm> (T, 1);
                    subtask_term_signals/<node>, subtask_start_signals/<node> (T,) bool;
                    subtask_term_signals_by_arm/<arm>/<node> (T,) bool, attr order
/mask/train, /mask/valid, /mask/<part>   demo names (bytes) of each part of the dataset's partition
```

Demo groups are numbered in export order with zero-padded numbers, so plain string order, robomimic's
order (by the integer after "demo_") and export order agree. Rewards and dones follow robomimic's
definition on transitions: row t describes playing action t in state t; reward 1 when the state it
leads to has the task complete, done 1 there and on the last row. Action t leads to frame t + 1
(docs/format.md); the last action was never applied, so its outcome is taken as frame T - 1's.
A subtask's termination signal is 0 before the frame its DAG node was first completed and 1 from that
frame on: Isaac Lab Mimic cuts a subtask at the signal's first 0 -> 1 step, so its segment ends with
that frame, as x2's own segments do. (A node completed at frame 0 has no such step.)

Two arms at once (per-arm labels, x2.export.episode_arrays.arm_labels): DexMimicGen segments every arm
on its own. As Isaac Lab Mimic carries that scheme over, a task's `subtask_configs` is keyed by end
effector, each arm an ordered list of subtasks whose `subtask_term_signal` names one flat
`datagen_info/subtask_term_signals` entry; the arm's last subtask has none and runs to the episode's
end. The flat group stays as it is (its signals are per node, and a node on two arms ends both arms'
subtasks at the same frame); `subtask_term_signals_by_arm/<arm>/` holds the signals of the nodes that
ran on that arm, by the same rule, and its attr `order` lists them in the order the arm finished them
(never-finished ones last, in declared order): the list an arm's subtask_configs follows. Each signal
switches at the last frame of that arm's segment for the node in `<arm>_subtask_index`, the column of
labels/arm_subtask_index (x2's codes, as `subtask_index`). A robot with one arm has none of these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Bools, Floats, Ints
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
from x2.files.hdf5_guard import check_writes, kept_if_complete
from x2.files.staging import staged
from x2.recorded.frames import DEFAULT_SIZE
from x2.sim.camera import ImageSize

if TYPE_CHECKING:
    from _hashlib import HASH

Array = npt.NDArray[np.generic]  # a column as read from the episode (floats or integer labels)
IMAGE_COMPRESSION = {"compression": "gzip", "compression_opts": 4}  # built into every HDF5 reader
VALID_PARTS = ("val", "valid")  # robomimic's validation filter key is "valid"
ARM_TERM_SIGNALS = "subtask_term_signals_by_arm"  # under obs/datagen_info: <arm>/<node>


@dataclass(frozen=True)
class Hdf5Options:
    render_size: ImageSize = DEFAULT_SIZE  # for episodes without stored streams


@dataclass(frozen=True)
class Hdf5Summary:
    path: Path
    demos: list[str]
    frames: int
    masks: dict[str, int]  # filter key -> number of demos
    image_sizes: dict[str, ImageSize] = field(default_factory=dict)
    bytes: int = 0


def demo_names(count: int) -> list[str]:
    width = max(6, len(str(max(count - 1, 0))))
    return [f"demo_{i:0{width}d}" for i in range(count)]


def mask_key(part: str) -> str:
    """robomimic's filter key (a group under `mask/`) for a part of the partition."""
    return "valid" if part in VALID_PARTS else part


def pose_matrices(poses: Array) -> Floats:
    """(T, 7) position + quaternion w x y z -> (T, 4, 4) homogeneous transforms."""
    p = np.asarray(poses, np.float64)
    q = p[:, 3:7] / np.linalg.norm(p[:, 3:7], axis=1, keepdims=True)
    w, x, y, z = q.T
    out = np.zeros((len(p), 4, 4))
    out[:, 0] = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), p[:, 0]], 1)
    out[:, 1] = np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x), p[:, 1]], 1)
    out[:, 2] = np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y), p[:, 2]], 1)
    out[:, 3, 3] = 1.0
    return out


def term_signals(arrays: EpisodeArrays) -> dict[str, Bools]:
    """Per DAG node: False before the frame it was first completed, True from then on (never: all False)."""
    t = np.arange(arrays.frames)
    return {n: (t >= f) if f >= 0 else np.zeros(arrays.frames, bool) for n, f in arrays.completion.items()}


def start_signals(arrays: EpisodeArrays) -> dict[str, Bools]:
    """Per DAG node: True from the first frame it was being worked on (the runtime's active mask)."""
    if arrays.active_mask is None:
        return {}
    started = np.logical_or.accumulate(np.asarray(arrays.active_mask, bool), axis=0)
    return {n: started[:, i].copy() for i, n in enumerate(arrays.nodes)}


def arm_term_signals(arrays: EpisodeArrays) -> dict[str, dict[str, Bools]]:
    """Per arm, the term signals of the nodes that ran on it ({} without per-arm labels)."""
    if arrays.arm_labels is None:
        return {}
    flat = term_signals(arrays)
    return {arm: {n: flat[n] for n in arrays.arm_labels.nodes_of(arm, arrays.nodes)} for arm in arrays.arm_labels.arms}


def arm_order(arrays: EpisodeArrays, arm: str) -> list[str]:
    """An arm's nodes in the order it finished them, the never-finished ones last (declared order)."""
    assert arrays.arm_labels is not None
    mine = arrays.arm_labels.nodes_of(arm, arrays.nodes)
    done = sorted((n for n in mine if arrays.completion[n] >= 0), key=lambda n: arrays.completion[n])
    return [*done, *(n for n in mine if arrays.completion[n] < 0)]


def rewards_dones(arrays: EpisodeArrays) -> tuple[Floats, Ints]:
    frames = arrays.frames
    rewards = np.zeros(frames)
    if arrays.facts.success and arrays.completion and min(arrays.completion.values()) >= 0:
        done_at = max(arrays.completion.values())  # every node complete: the task succeeded
        rewards[np.minimum(np.arange(frames) + 1, frames - 1) >= done_at] = 1.0
    dones = (rewards > 0).astype(np.int64)
    dones[-1] = 1
    return rewards, dones


def observations(arrays: EpisodeArrays) -> dict[str, Array]:
    """robomimic obs keys (one dataset each, time first) from the episode's arrays."""
    low = arrays.low_dim
    obs: dict[str, Array] = {"state": low["state"]}
    for key in ("qvel", "subtask_index", "progress"):
        if key in low:
            obs[key] = low[key]
    for i, arm in enumerate(arrays.names.get("ee_pose", [])):
        obs[f"{arm}_ee_pose"] = low["ee_pose"][:, i]
    if arrays.arm_labels is not None:
        for i, arm in enumerate(arrays.arm_labels.arms):
            obs[f"{arm}_subtask_index"] = arrays.arm_labels.index[:, i]
    for i, name in enumerate(arrays.names.get("object_poses", [])):
        obs[f"{name}_pose"] = low["object_poses"][:, i]
    return obs


def datagen_info(arrays: EpisodeArrays) -> dict[str, Mapping[str, Array]]:
    low = arrays.low_dim
    info: dict[str, Mapping[str, Array]] = {}
    if "ee_pose" in low:
        info["eef_pose"] = {a: pose_matrices(low["ee_pose"][:, i]) for i, a in enumerate(arrays.names["ee_pose"])}
    if "object_poses" in low:
        info["object_pose"] = {o: pose_matrices(low["object_poses"][:, i])
                               for i, o in enumerate(arrays.names["object_poses"])}
    if arrays.gripper_slots:
        info["gripper_action"] = {a: low["action"][:, [s]] for a, s in zip(arrays.arms, arrays.gripper_slots,
                                                                          strict=True)}
    info["subtask_term_signals"] = term_signals(arrays)
    if arrays.active_mask is not None:
        info["subtask_start_signals"] = start_signals(arrays)
    by_arm = arm_term_signals(arrays)
    if by_arm:  # "<arm>/<node>": h5py makes the arm's group
        info[ARM_TERM_SIGNALS] = {f"{arm}/{n}": s for arm, signals in by_arm.items() for n, s in signals.items()}
    return info


class _Digests:
    """sha256 of every dataset's bytes in row order, to compare with what is read back."""

    def __init__(self) -> None:
        self.sums: dict[str, HASH] = {}

    def put(self, group: h5py.Group, name: str, data: Array) -> None:
        data = np.ascontiguousarray(data)
        group.create_dataset(name, data=data)
        self.sums[f"{group.name}/{name}"] = hashlib.sha256(data.tobytes())


def export_hdf5(request: ExportRequest, options: Hdf5Options = Hdf5Options(),
                progress: ProgressCallback = ignore_progress) -> Hdf5Summary:
    """Write the requested episodes as one robomimic / Isaac Lab Mimic HDF5 file."""
    return run_export(request, "hdf5", lambda sources: _export(sources, options, progress), Sizing(options.render_size))


def _export(sources: ExportSources, options: Hdf5Options, progress: ProgressCallback) -> Hdf5Summary:
    target, records = sources.target, sources.records
    sizes = sources.image_sizes
    names = demo_names(len(records))
    streams = stored_streams(sources.first_episode, sources.cameras)
    extra: dict[str, Json] = {"sensor_streams": streams.describe()} if streams else {}  # (only then: as it was)
    meta = sources.provenance(format="robomimic hdf5 with Isaac Lab Mimic datagen_info",
                              cameras={c: str(s) for c, s in sizes.items()},
                              **_lenses(sources, sizes, options.render_size), **extra,
                              demos={n: r.index for n, r in zip(names, records, strict=True)})
    tracker = ProgressTracker(progress, len(records), sources.frames)
    digests = _Digests()
    masks: dict[str, list[str]] = {"train": [], "valid": []}  # filter key -> its demos (filled as they are written)
    with staged(target, sources.request.overwrite) as tmp:
        with kept_if_complete(tmp, "w") as f:
            f.attrs["x2_provenance"] = json.dumps(meta, sort_keys=True)
            data = f.create_group("data")
            tracker.enter("writing")
            total = _fill(data, sources, names, sizes, options, digests, tracker, masks, streams)
            mask = f.create_group("mask")
            for key in sorted(masks):
                digests.put(mask, key, np.array([n.encode() for n in masks[key]], dtype="S"))
        tracker.enter("reading back")
        _read_back(tmp, target, digests, names, total)
    return Hdf5Summary(target, names, total, {k: len(v) for k, v in sorted(masks.items())}, sizes,
                       target.stat().st_size)


def _fill(data: h5py.Group, sources: ExportSources, names: Sequence[str], sizes: dict[str, ImageSize],
          options: Hdf5Options, digests: _Digests, tracker: ProgressTracker, masks: dict[str, list[str]],
          streams: SensorStreams) -> int:
    layout, total = None, 0
    cameras, columns = sources.cameras, sources.column_names()
    for source, name in zip(sources.written(), names, strict=True):
        ep = source.episode
        arrays = read_episode(ep, columns, sources.arms, sources.request.action)
        if layout is None:
            layout = row_layout(arrays)
            data.attrs["env_args"] = json.dumps(_env_args(arrays), sort_keys=True)
        check_row_layout(arrays, layout)
        check_streams(ep, streams)
        part = sources.part(source)
        masks.setdefault(mask_key(part), []).append(name)
        demo = data.create_group(name)
        _demo_attrs(demo, arrays, part)
        rewards, dones = rewards_dones(arrays)
        digests.put(demo, "actions", arrays.low_dim["action"])
        if arrays.states is not None:  # (a real recording has no simulator state)
            digests.put(demo, "states", arrays.states)
        digests.put(demo, "rewards", rewards)
        digests.put(demo, "dones", dones)
        obs = demo.create_group("obs")
        for key, values in observations(arrays).items():
            digests.put(obs, key, values)
        for kind, per_name in datagen_info(arrays).items():
            group = obs.create_group(f"datagen_info/{kind}")
            for key, values in per_name.items():
                digests.put(group, key, values)
        if arrays.arm_labels is not None:  # every arm gets its group, even one without nodes
            for arm in arrays.arm_labels.arms:
                group = obs.require_group(f"datagen_info/{ARM_TERM_SIGNALS}/{arm}")
                group.attrs["order"] = np.array(arm_order(arrays, arm), dtype=h5py.string_dtype())
        image_keys = _write_images(obs, ep, cameras, sizes, options, digests, tracker)
        image_keys += _write_streams(obs, ep, streams, sizes, digests)
        if not cameras:
            tracker.advance(arrays.frames)
        _next_obs(demo, [*observations(arrays), *image_keys], arrays.frames)
        # HDF5 writes its cache when it likes and reports a failure there only as a printed warning: flush
        # each demo so a full or failing disk raises here, with the export still discardable.
        data.file.flush()
        check_writes(data.file.filename)
        total += arrays.frames
        tracker.episode_done()
    data.attrs["total"] = total
    return total


def _env_args(arrays: EpisodeArrays) -> dict[str, Json]:
    """The first episode's env_args, its env_kwargs without the seed (each demo has its own)."""
    env_args = arrays.facts.env_args
    env_kwargs = env_args.get("env_kwargs", {}) if isinstance(env_args, dict) else None
    if not isinstance(env_args, dict) or not isinstance(env_kwargs, dict):
        raise ExportError(f"{arrays.path}: env_args: found {json.dumps(env_args)[:60]}; allowed: a JSON object with "
                          "an object env_kwargs")
    return {**env_args, "env_kwargs": {k: v for k, v in env_kwargs.items() if k != "seed"}}


def _lenses(sources: ExportSources, sizes: dict[str, ImageSize], render_size: ImageSize) -> dict[str, Json]:
    """`camera_lenses` (x2/recorded/camera_lenses.py) when the export has cameras, their frames taken as
    camera_batches takes them."""
    if not sources.cameras:
        return {}
    cameras = sources.cameras
    return {"camera_lenses": sources.camera_lenses(cameras, sizes, lambda ep: taken_at(ep, cameras, render_size))}


def _demo_attrs(demo: h5py.Group, arrays: EpisodeArrays, part: str) -> None:
    facts = arrays.facts
    demo.attrs["num_samples"] = arrays.frames
    demo.attrs["success"] = facts.success
    demo.attrs["seed"] = facts.seed
    demo.attrs["model_file"] = facts.model_xml
    demo.attrs["x2_episode"] = arrays.index
    demo.attrs["source"] = facts.source
    demo.attrs["split"] = part  # the attr's name predates the partition's: kept, so exports stay the same bytes
    demo.attrs["instruction"] = facts.instruction


def _write_images(obs: h5py.Group, ep: Episode, cameras: Sequence[str], sizes: dict[str, ImageSize],
                  options: Hdf5Options, digests: _Digests, tracker: ProgressTracker) -> list[str]:
    if not cameras:
        return []
    keys = {cam: f"{cam}_image" for cam in cameras}
    sets = {cam: obs.create_dataset(keys[cam], shape=(ep.frames, sizes[cam].height, sizes[cam].width, 3),
                                    dtype=np.uint8, chunks=(1, sizes[cam].height, sizes[cam].width, 3),
                                    **IMAGE_COMPRESSION) for cam in cameras}
    sums = {cam: hashlib.sha256() for cam in cameras}
    done = 0
    for batch in camera_batches(ep, cameras, options.render_size, sizes):
        n = len(batch[cameras[0]])
        for cam in cameras:
            rows = np.ascontiguousarray(batch[cam])
            sets[cam][done:done + n] = rows
            sums[cam].update(rows.tobytes())
        done += n
        tracker.advance(n)
    for cam in cameras:
        digests.sums[sets[cam].name] = sums[cam]
    return list(keys.values())


def _write_streams(obs: h5py.Group, ep: Episode, streams: SensorStreams, sizes: dict[str, ImageSize],
                   digests: _Digests) -> list[str]:
    """Each camera's stored depth and segmentation (channel last, one frame a chunk) and its extrinsics."""
    keys: list[str] = []
    for suffix, cams, path, dtype in ((DEPTH_SUFFIX, streams.depth, fmt.depth_path, np.float32),
                                      (SEGMENTATION_SUFFIX, streams.segmentation, fmt.segmentation_path, np.uint16)):
        for cam in cams:
            h, w = sizes[cam].height, sizes[cam].width
            ds = obs.create_dataset(cam + suffix, shape=(ep.frames, h, w, 1), dtype=dtype, chunks=(1, h, w, 1),
                                    **IMAGE_COMPRESSION)
            attrs = {**lens(ep, path(cam), sizes[cam]), **({"unit": "m"} if suffix == DEPTH_SUFFIX else table(ep, cam))}
            for key, value in attrs.items():
                ds.attrs[key] = value
            h_sum, done = hashlib.sha256(), 0
            for block in blocks(ep, path(cam), sizes[cam]):
                rows = np.ascontiguousarray(block[..., None], dtype=dtype)
                ds[done:done + len(rows)] = rows
                h_sum.update(rows.tobytes())
                done += len(rows)
            digests.sums[ds.name] = h_sum
            keys.append(cam + suffix)
    for cam in streams.cameras:
        digests.put(obs, cam + EXTRINSICS_SUFFIX, extrinsics(ep, cam))
        keys.append(cam + EXTRINSICS_SUFFIX)
    return keys


def _next_obs(demo: h5py.Group, keys: Sequence[str], frames: int) -> None:
    """next_obs/<key>[t] = obs/<key>[t + 1], the last row repeated: virtual datasets on the same file
    ("." is HDF5's name for the file the dataset lives in, so a rename keeps them valid)."""
    for key in keys:
        source = demo[f"obs/{key}"]
        layout = h5py.VirtualLayout(shape=source.shape, dtype=source.dtype)
        vsource = h5py.VirtualSource(".", source.name, shape=source.shape, dtype=source.dtype)
        if frames > 1:
            layout[: frames - 1] = vsource[1:]
        layout[frames - 1] = vsource[frames - 1]
        demo.create_virtual_dataset(f"next_obs/{key}", layout)


def _read_back(path: Path, target: Path, digests: _Digests, names: Sequence[str], total: int) -> None:
    """Reopen the file with h5py: every dataset written has the bytes it was given, counts add up, and
    next_obs resolves to obs one row later."""
    where = f"{target}: read back"
    with h5py.File(path, "r") as f:
        demos = sorted(f["data"].keys())
        if demos != list(names) or int(f["data"].attrs["total"]) != total:
            raise ExportError(f"{where}: data: found {len(demos)} demos / total {f['data'].attrs.get('total')}; "
                              f"allowed: {len(names)} / {total}")
        for name, digest in digests.sums.items():
            dset = f[name]
            h = hashlib.sha256()
            step = 64 if dset.ndim == 4 else max(1, len(dset))
            for lo in range(0, len(dset), step):
                h.update(np.ascontiguousarray(dset[lo:lo + step]).tobytes())
            if h.hexdigest() != digest.hexdigest():
                raise ExportError(f"{where}: {name}: found other bytes than were written; allowed: identical")
        for name in names:
            demo = f[f"data/{name}"]
            frames = int(demo.attrs["num_samples"])
            for key in demo["next_obs"]:
                if frames > 1 and not np.array_equal(demo[f"next_obs/{key}"][0], demo[f"obs/{key}"][1]):
                    raise ExportError(f"{where}: data/{name}/next_obs/{key}: found rows that are not obs one "
                                      "row later; allowed: obs[t + 1]")
