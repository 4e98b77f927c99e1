"""One episode as a rerun recording: what a person looks at before trusting an episode.

Everything is logged on two timelines, `frame` (the row index, a sequence) and `sim_time` (the row's
`/timestamps`, a duration), so the viewer can scrub by either. Entity paths (tests and users read them):

    episode                   static text: task, instruction, source, outcome, seed
    cameras/<cam>             one JPEG per frame (stored stream if the file has it, else rendered now)
    depth/<cam>, segmentation/<cam>   the stored depth and segmentation of those cameras, when stored
                              (x2/view/sensor_streams.py)
    joints/<name>/qpos        /observations/qpos column <name>, one scalar per frame
    joints/<name>/action      /action column <name>, one scalar per frame
    world/objects/<object>    /observations/object_poses: a pose (transform + labelled point) per frame
    world/tcp/<arm>           /observations/ee_pose: the arm's tool centre point, the same way
    world/paths/objects/<object>, world/paths/tcp/<arm>   static: the whole path as a line
    subtask/index             /labels/subtask_index per frame (-1 unfinished, len(nodes) done)
    subtask/name              the current subtask's name per frame
    subtask/progress          /labels/progress per frame
    subtask/events            a log line at each DAG completion event (and the failure, if any)
    subtask/event_markers     a point at each event frame, at the completed node's index

rerun is imported only inside the functions that need it: the rest of x2 never pays for it.
"""

from __future__ import annotations

import hashlib
import io
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Floats, Image
from x2.base.errors import DatasetError, ExportError
from x2.datasets import Episode
from x2.envspec.env import ArmSpec
from x2.recorded.frames import DEFAULT_SIZE, default_cameras, episode_frames, stored_cameras
from x2.recorded.world import recorded_env
from x2.sim.camera import ImageSize
from x2.view.layout import ArmJoints, default_blueprint
from x2.view.sensor_streams import log_sensor_streams, stored_sensor_cameras

if TYPE_CHECKING:
    import rerun

FRAME, SIM_TIME = "frame", "sim_time"
JPEG_QUALITY = 90  # a file to look at, not training data: 2x smaller than rerun's raw images (bench/bench_view.py)
_IMAGE_BATCH = 32  # frames per image chunk: bounds memory on long episodes and keeps chunks few
_AXIS_LENGTH_M = 0.08
_APPLICATION = "x2"
VIEWER_PORT = 9876  # rerun's own default: a viewer the user already has open there is reused


@dataclass(frozen=True)
class CameraPlan:
    """Which cameras go into the recording, at which size, and which of them are drawn now."""

    cameras: tuple[str, ...]
    size: ImageSize | None  # None: every camera at its stored size
    rendered: tuple[str, ...]  # drawn from /states (not stored, or stored at another size)


@dataclass(frozen=True)
class RecordingSummary:
    frames: int
    cameras: dict[str, str]  # camera -> "stored HxW" or "rendered HxW", then " + depth", " + segmentation" if stored
    joints: int
    poses: tuple[str, ...]  # entity paths under world/
    events: int
    subtasks: tuple[str, ...]


def require_rerun() -> None:
    """Refuse (one line saying how to install it) when rerun is not installed; the functions below import it
    where they use it, after this check."""
    try:
        import rerun  # noqa: F401
    except ImportError:
        raise ExportError("rerun-sdk: found not installed; allowed: pip install 'x2[view]' "
                          "(rerun-sdk >=0.24,<0.34)") from None


def wants_viewer(spawn: bool, out: Path | None, env: Mapping[str, str]) -> bool:
    """Spawn the viewer only where a display exists, and only when asked (--spawn) or when no file was."""
    return bool(env.get("DISPLAY")) and (spawn or out is None)


def default_rrd_path(dataset: str, episode: int) -> Path:
    return Path("exports") / f"{dataset}-episode_{episode}.rrd"


def plan_cameras(ep: Episode, cameras: Sequence[str] | None = None, size: ImageSize | None = None) -> CameraPlan:
    """Default: the file's stored streams at their size; without any, DEFAULT_CAMERAS at DEFAULT_SIZE.
    Cameras not stored are rendered at `size`, else at the stored streams' common size, else DEFAULT_SIZE."""
    stored = stored_cameras(ep)
    chosen = tuple(cameras) if cameras is not None else default_cameras([stored])[0]
    if size is None and any(c not in stored for c in chosen):
        sizes = {stored[c] for c in chosen if c in stored}
        size = sizes.pop() if len(sizes) == 1 else DEFAULT_SIZE
    rendered = tuple(c for c in chosen if c not in stored or (size is not None and stored[c] != size))
    return CameraPlan(chosen, size, rendered)


def recording_id(dataset: str, ep: Episode, plan: CameraPlan) -> str:
    """The same file viewed the same way gets the same id (same input, same recording); anything else, a
    relabelled file or other cameras, gets its own, so the viewer never merges two different views."""
    digest = hashlib.sha256()
    with open(ep.path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"x2:{dataset}:{ep.index}:{digest.hexdigest()}:{plan}"))


def record_rerun(ep: Episode, *, dataset: str, plan: CameraPlan, path: Path | None = None,
                   spawn: bool = False, port: int = VIEWER_PORT,
                   on_frame: Callable[[int], None] | None = None) -> RecordingSummary:
    """Log the episode to a .rrd at `path` (written in place: the caller stages it) and/or to the viewer
    on `port` (spawned unless one already listens there). Returns what was logged."""
    if path is None and not spawn:
        raise ExportError("view: found neither a file nor a viewer to send to; allowed: a path, spawn, or both")
    require_rerun()
    import rerun as rr

    rec = rr.RecordingStream(_APPLICATION, recording_id=recording_id(dataset, ep, plan), send_properties=False)
    arms = _arm_joints(ep)
    depth, segmentation = stored_sensor_cameras(ep, plan.cameras)
    blueprint = default_blueprint(plan.cameras, arms, has_labels=fmt.SUBTASK_INDEX in ep, depth=depth,
                                  segmentation=segmentation)
    sinks: list[rerun.GrpcSink | rerun.FileSink] = []
    if spawn:
        rec.spawn(port=port, connect=False)
        sinks.append(rr.GrpcSink(f"rerun+http://127.0.0.1:{port}/proxy"))
    if path is not None:
        sinks.append(rr.FileSink(str(path)))
    rec.set_sinks(*sinks, default_blueprint=blueprint)
    try:
        rec.send_recording_name(f"{dataset} episode {ep.index}")
        summary = log_episode(rec, ep, plan, on_frame)
        rec.flush()
    finally:
        rec.disconnect()  # closes the file: complete (footer written) once this returns
    return summary


def log_episode(rec: rerun.RecordingStream, ep: Episode, plan: CameraPlan,
                on_frame: Callable[[int], None] | None = None) -> RecordingSummary:
    import rerun as rr

    # Whole nanoseconds, rounded: rerun would truncate float seconds (0.2 s -> 199999999 ns).
    times = np.round(np.asarray(ep[fmt.TIMESTAMPS], np.float64) * 1e9).astype("timedelta64[ns]")
    frames = np.arange(times.size, dtype=np.int64)

    def index(rows: slice | npt.NDArray[np.int64] = slice(None)) -> list[rerun.TimeColumn]:
        return [rr.TimeColumn(FRAME, sequence=frames[rows]), rr.TimeColumn(SIM_TIME, duration=times[rows])]

    rec.log("episode", rr.TextDocument(_describe(ep), media_type="text/markdown"), static=True)
    joints = _log_joints(rec, ep, index)
    poses = _log_poses(rec, ep, index)
    events, subtasks = _log_subtasks(rec, ep, index)
    cameras = _log_cameras(rec, ep, plan, index, on_frame)
    for cam, streams in log_sensor_streams(rec, ep, plan.cameras, index).items():
        cameras[cam] = " + ".join((cameras[cam], *streams)) if cam in cameras else " + ".join(streams)
    return RecordingSummary(int(times.size), cameras, joints, poses, events, subtasks)


# ---- the parts --------------------------------------------------------------------------------------
class Index(Protocol):
    """The frame and sim-time columns of the given rows (all of them by default)."""

    def __call__(self, rows: slice | npt.NDArray[np.int64] = ..., /) -> list[rerun.TimeColumn]: ...


def _names(ep: Episode, key: str, width: int) -> list[str]:
    names = ep.dataset_attrs(key).get(fmt.NAMES_ATTR)
    if isinstance(names, list | tuple | np.ndarray) and len(names) == width:
        return [str(n) for n in names]
    return [f"{key.rsplit('/', 1)[-1]}_{i}" for i in range(width)]


def _log_joints(rec: rerun.RecordingStream, ep: Episode, index: Index) -> int:
    import rerun as rr

    count = 0
    for key, kind in ((fmt.QPOS, "qpos"), (fmt.ACTION, "action")):
        if key not in ep:
            continue
        values = np.asarray(ep[key], np.float64)
        for j, name in enumerate(_names(ep, key, values.shape[1])):
            entity = f"joints/{rr.escape_entity_path_part(name)}/{kind}"
            rec.log(entity, rr.SeriesLines(names=f"{name} {kind}"), static=True)
            rec.send_columns(entity, indexes=index(), columns=rr.Scalars.columns(scalars=values[:, j]))
            count += 1
    return count


def _arms(ep: Episode) -> tuple[ArmSpec, ...]:
    """The robot's arms from the episode's world record; none for a file that has no world."""
    return recorded_env(ep).robot.arms if fmt.WORLD_ATTR in ep.attrs else ()


def _arm_names(ep: Episode, arms: int) -> list[str]:
    names = [arm.name for arm in _arms(ep)]
    return names if len(names) == arms else [f"arm_{i}" for i in range(arms)]


def _arm_joints(ep: Episode) -> list[ArmJoints]:
    """Per arm, the qpos and action names that belong to it (for the blueprint's per-arm plots)."""
    return [ArmJoints(arm.name, tuple(n for n in (*arm.joints, arm.gripper_actuator, *arm.gripper_joints) if n))
            for arm in _arms(ep)]


def _log_poses(rec: rerun.RecordingStream, ep: Episode, index: Index) -> tuple[str, ...]:
    import rerun as rr

    rec.log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)  # MuJoCo's world is z-up
    tracks: list[tuple[str, str, Floats]] = []
    if fmt.OBJECT_POSES in ep:
        poses = np.asarray(ep[fmt.OBJECT_POSES], np.float64)
        for k, name in enumerate(_names(ep, fmt.OBJECT_POSES, poses.shape[1])):
            tracks.append((f"world/objects/{rr.escape_entity_path_part(name)}", name, poses[:, k]))
    if fmt.EE_POSE in ep:
        poses = np.asarray(ep[fmt.EE_POSE], np.float64)
        for a, arm in enumerate(_arm_names(ep, poses.shape[1])):
            tracks.append((f"world/tcp/{rr.escape_entity_path_part(arm)}", f"{arm} tcp", poses[:, a]))
    for entity, label, pose in tracks:
        # The file keeps quaternions w x y z; rerun wants x y z w.
        rec.send_columns(entity, indexes=index(), columns=rr.Transform3D.columns(
            translation=pose[:, :3], quaternion=pose[:, [4, 5, 6, 3]]))
        rec.log(entity, rr.TransformAxes3D(_AXIS_LENGTH_M), static=True)
        rec.log(entity, rr.Points3D([[0.0, 0.0, 0.0]], labels=[label], radii=0.01), static=True)
        rec.log(entity.replace("world/", "world/paths/", 1), rr.LineStrips3D([pose[:, :3]], radii=0.002),
                static=True)
    return tuple(entity for entity, _, _ in tracks)


def subtask_per_frame(ep: Episode) -> list[str]:
    """The subtask name of every frame, as the index's segments name them (unfinished, done included)."""
    names = [""] * ep.frames
    for seg in ep.segments:
        names[seg.start:seg.end] = [seg.node] * (seg.end - seg.start)
    return names


def _log_subtasks(rec: rerun.RecordingStream, ep: Episode, index: Index) -> tuple[int, tuple[str, ...]]:
    import rerun as rr

    if fmt.SUBTASK_INDEX not in ep:
        return 0, ()
    nodes = ep.subtask_names
    values = np.asarray(ep[fmt.SUBTASK_INDEX], np.float64)
    rec.log("subtask/index", rr.SeriesLines(names="subtask index"), static=True)
    rec.send_columns("subtask/index", indexes=index(), columns=rr.Scalars.columns(scalars=values))
    rec.send_columns("subtask/name", indexes=index(), columns=rr.TextDocument.columns(text=subtask_per_frame(ep)))
    if fmt.PROGRESS in ep:
        rec.log("subtask/progress", rr.SeriesLines(names="progress"), static=True)
        rec.send_columns("subtask/progress", indexes=index(),
                         columns=rr.Scalars.columns(scalars=np.asarray(ep[fmt.PROGRESS], np.float64)))
    last = ep.frames - 1
    lines = [(min(max(frame, 0), last), f"{node} done", "INFO") for node, frame in ep.events]
    failure = ep.failure
    if failure is not None:
        lines.append((min(max(failure[1], 0), last), f"{failure[0]} failed: {failure[2]}", "ERROR"))
    lines.sort(key=lambda line: line[0])
    if lines:
        at = np.array([frame for frame, _, _ in lines], np.int64)
        rec.send_columns("subtask/events", indexes=index(at), columns=rr.TextLog.columns(
            text=[text for _, text, _ in lines], level=[level for _, _, level in lines]))
    marked = [(min(max(frame, 0), last), nodes.index(node)) for node, frame in ep.events if node in nodes]
    if marked:
        rec.log("subtask/event_markers", rr.SeriesPoints(names="DAG event", markers="diamond", marker_sizes=6.0),
                static=True)
        rec.send_columns("subtask/event_markers", indexes=index(np.array([f for f, _ in marked], np.int64)),
                         columns=rr.Scalars.columns(scalars=np.array([float(n) for _, n in marked])))
    return len(lines), tuple(nodes)


def _jpeg(frame: Image) -> bytes:
    from PIL import Image as Pillow  # matplotlib's dependency; only the image path needs it

    buffer = io.BytesIO()
    Pillow.fromarray(np.ascontiguousarray(frame)).save(buffer, format="JPEG", quality=JPEG_QUALITY)
    return buffer.getvalue()


def _send_images(rec: rerun.RecordingStream, entities: dict[str, str], pending: dict[str, list[bytes]],
                 rows: list[rerun.TimeColumn]) -> None:
    """Send the batched JPEGs of every camera (one chunk each) and empty the batch."""
    import rerun as rr

    for cam, blobs in pending.items():
        rec.send_columns(entities[cam], indexes=rows, columns=rr.EncodedImage.columns(blob=blobs))
        pending[cam] = []


def _log_cameras(rec: rerun.RecordingStream, ep: Episode, plan: CameraPlan, index: Index,
                 on_frame: Callable[[int], None] | None) -> dict[str, str]:
    import rerun as rr

    if not plan.cameras:
        return {}
    entities = {c: f"cameras/{rr.escape_entity_path_part(c)}" for c in plan.cameras}
    for entity in entities.values():
        rec.log(entity, rr.EncodedImage.from_fields(media_type="image/jpeg"), static=True)
    shapes: dict[str, tuple[int, ...]] = {}
    pending: dict[str, list[bytes]] = {c: [] for c in plan.cameras}
    start = 0
    try:
        for t, frame in enumerate(episode_frames(ep, plan.cameras, plan.size)):
            for cam, image in frame.items():
                shapes.setdefault(cam, image.shape)
                pending[cam].append(_jpeg(image))
            if t + 1 - start == _IMAGE_BATCH:
                _send_images(rec, entities, pending, index(slice(start, t + 1)))
                start = t + 1
            if on_frame is not None:
                on_frame(t + 1)
        if pending[plan.cameras[0]]:
            _send_images(rec, entities, pending, index(slice(start, ep.frames)))
    except DatasetError as exc:  # the renderer's complaint (unknown camera, size) names no file: add it
        text = str(exc)
        raise DatasetError(text if text.startswith(str(ep.path)) else f"{ep.path}: {text}") from None
    return {c: f"{'rendered' if c in plan.rendered else 'stored'} {shapes[c][0]}x{shapes[c][1]}"
            for c in plan.cameras if c in shapes}


def _describe(ep: Episode) -> str:
    fps = ep.fps or 0.0
    seconds = f" ({ep.frames / fps:.1f} s at {fps:g} fps)" if fps else ""
    rows = [("task", ep.task), ("instruction", ep.instruction), ("robot", ep.text(fmt.ROBOT_ATTR)),
            ("source", ep.source), ("outcome", ep.outcome), ("seed", ep.text(fmt.SEED_ATTR)),
            ("split", ep.text(fmt.SPLIT_ATTR))]
    lines = [f"# episode {ep.index}", "", f"{ep.frames} frames{seconds}", ""]
    lines += [f"- **{key}**: {value}" for key, value in rows if value != ""]
    return "\n".join(lines) + "\n"
