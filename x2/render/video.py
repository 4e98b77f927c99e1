"""An episode as an MP4: its cameras side by side with the frame number, the active subtask and the failure
written under them (x2/render/video_frame.py), one video frame per recorded frame at the episode's rate.

Frames are the stored streams when the episode has them (at whatever size they were stored, scaled to the
tiles), else drawn now from its states (x2/recorded/frames.py), as `x2 render` draws them. Encoded with PyAV
(FFmpeg): H.264 (libx264, CRF 23, preset veryfast, yuv420p) where the installed FFmpeg has it, else MPEG-4
Part 2, which every FFmpeg build has; one encoder thread (the same frames gave the same bytes in every check
but one, under load: one byte apart, the same pixels; the tests hold the decoded pictures). The file is
written under a temporary name beside the target and renamed into place (x2/files/atomic.py): a killed run
leaves no half MP4 under the final name. Encoding runs inside `keeps_scheduling()` (x2/base/scheduling.py):
FFmpeg's encoders must not turn this process real-time.

Measured on this 2-core machine (llvmpipe; three cameras, 578 frames of fruit_in_microwave; README, "Render"):
drawing 49.2 ms and encoding 7.0 ms a frame at 240x320 tiles, 34.6 and 2.9 ms at 120x160: a video of an
episode costs about what rendering it costs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from x2 import format as fmt
from x2.base.arrays import Image as Pixels
from x2.base.errors import DatasetError
from x2.base.scheduling import keeps_scheduling
from x2.datasets import Dataset, Episode
from x2.files.atomic import replacing
from x2.files.disk import cause, is_refusal
from x2.recorded.frames import frames_at, stored_cameras
from x2.recorded.world import recorded_env
from x2.render.video_frame import FrameLabels, FramePainter, VideoLayout
from x2.sim.camera import ImageSize

CODECS = ("libx264", "mpeg4")  # the first the installed FFmpeg has
FALLBACK_FPS = 30.0  # an episode that states no rate (none x2 writes)
FrameProgress = Callable[[int, int], None]  # (frames done, frames in the episode)


@dataclass(frozen=True)
class VideoSummary:
    episode: int
    path: Path
    frames: int
    width: int
    height: int
    codec: str
    draw_s: float  # reading or rendering the camera frames, and painting the overlay
    encode_s: float  # the encoder and the muxer
    bytes: int
    layout: VideoLayout  # where the tiles and the text lines are on each frame


def video_name(index: int) -> str:
    return f"episode_{index:06d}.mp4"


def video_codec() -> str:
    """The codec x2's videos are encoded with on this machine (the first of CODECS that FFmpeg has)."""
    import av  # (FFmpeg's bindings; imported by the commands that encode)

    available = av.codecs_available
    found = next((c for c in CODECS if c in available), None)
    if found is None:
        raise DatasetError(f"PyAV {av.__version__}: codecs: found none of {', '.join(CODECS)}; allowed: an FFmpeg "
                           "build with an MP4 video encoder")
    return found


def video_cameras(ep: Episode, cameras: Sequence[str] | None) -> tuple[str, ...]:
    """The cameras a video shows: those asked for, else those the episode stores, else its robot's own. One line
    when a camera can be neither read nor drawn (an episode with no states: a real recording)."""
    stored = stored_cameras(ep)
    if cameras is None:
        if stored:
            return tuple(sorted(stored))
        _refuse_drawing(ep, "no stored camera streams")
        return recorded_env(ep).robot.cameras
    missing = [c for c in cameras if c not in stored]
    if missing:
        listed = ", ".join(sorted(stored)) or "none"
        _refuse_drawing(ep, f"camera(s) {', '.join(missing)} not stored (stored: {listed})")
    return tuple(cameras)


def _refuse_drawing(ep: Episode, why: str) -> None:
    if ep.is_real or fmt.STATES not in ep:
        raise DatasetError(f"{ep.path}: video: found {why} and no /states to draw them from (episode {ep.index}"
                           f"{', a real recording' if ep.is_real else ''}); allowed: an episode with /states, or "
                           "--cameras naming its stored streams")


def episode_video(ep: Episode, cameras: Sequence[str] | None, size: ImageSize, out: Path,
                  progress: FrameProgress | None = None) -> VideoSummary:
    """`ep` as an MP4 at `out` (replaced whole, or left as it was); tiles of `size`."""
    names = video_cameras(ep, cameras)
    codec = video_codec()
    labels = FrameLabels.of(ep)
    title = f"episode {ep.index} · {ep.task or ep.source} · {'a real recording' if ep.is_real else ep.outcome}"
    painter = FramePainter(title, names, size, labels)
    fps = ep.fps or FALLBACK_FPS
    clock = _Clock()

    def pictures() -> Generator[Pixels, None, None]:
        # (closed with the pictures: a drawing renderer's GL context goes now, not when garbage is collected)
        with contextlib.closing(frames_at(ep, names, range(ep.frames), size, stored_any_size=True)) as shots:
            for t in range(ep.frames):
                with clock.drawing():
                    picture = painter.paint(t, next(shots))
                yield picture
                if progress is not None:
                    progress(t + 1, ep.frames)

    layout = painter.layout
    try:
        # the pictures are closed however encoding ends (an encoder or disk error leaves them mid-episode)
        with replacing(out) as tmp, contextlib.closing(pictures()) as frames:
            _encode(frames, tmp, codec, fps, layout.width, layout.height, clock)
    except OSError as exc:
        if is_refusal(exc):
            raise DatasetError(f"{out}: video: found the write refused ({cause(exc)}); allowed: a writable folder "
                               "with room (nothing was left under that name)") from None
        raise
    return VideoSummary(ep.index, out, ep.frames, layout.width, layout.height, codec, clock.draw_s, clock.encode_s,
                        out.stat().st_size, layout)


class _Clock:
    """Wall time spent drawing and encoding, apart (the two interleave frame by frame)."""

    def __init__(self) -> None:
        self.draw_s = self.encode_s = 0.0

    def drawing(self) -> _Span:
        return _Span(self, "draw_s")

    def encoding(self) -> _Span:
        return _Span(self, "encode_s")


class _Span:
    def __init__(self, clock: _Clock, field: str):
        self.clock, self.field = clock, field
        self.started = 0.0

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        setattr(self.clock, self.field, getattr(self.clock, self.field) + time.perf_counter() - self.started)


def _encode(pictures: Iterable[Pixels], path: Path, codec: str, fps: float, width: int, height: int,
            clock: _Clock) -> None:
    import av

    with keeps_scheduling(), av.open(str(path), mode="w", format="mp4") as container:
        stream = container.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        assert isinstance(stream, av.video.stream.VideoStream)  # (a video codec's stream)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        # One encoder thread: libx264's sliced threads gave streams one byte apart under load (the same pixels
        # decoded); one thread gives the same bytes every time, and parallel work is --workers' (episodes at once).
        stream.codec_context.thread_count = 1
        if codec == "libx264":
            stream.options = {"crf": "23", "preset": "veryfast"}
        else:
            stream.bit_rate = 4_000_000
        for picture in pictures:
            with clock.encoding():
                for packet in stream.encode(av.VideoFrame.from_ndarray(picture, format="rgb24")):
                    container.mux(packet)
        with clock.encoding():
            for packet in stream.encode(None):
                container.mux(packet)


@dataclass(frozen=True)
class VideosProgress:
    frames_done: int
    frames_total: int
    episodes_done: int  # finished episodes (the one being drawn not yet counted)
    episodes_total: int


@dataclass(frozen=True)
class VideoJob:
    """One episode's video, for a worker process (picklable; the worker opens the file itself)."""

    index: int
    source: Path  # the committed episode file
    out: Path
    cameras: tuple[str, ...] | None
    height: int
    width: int


def run_video_job(job: VideoJob) -> VideoSummary:
    with Episode(job.source) as ep:
        return episode_video(ep, job.cameras, ImageSize(job.height, job.width), job.out)


def dataset_videos(ds: Dataset, episodes: Sequence[int], cameras: Sequence[str] | None, size: ImageSize,
                   folder: Path, progress: Callable[[VideosProgress], None] | None = None,
                   workers: int = 1) -> list[VideoSummary]:
    """One MP4 per episode of `episodes` into `folder` (episode_NNNNNN.mp4), in order; with `workers` > 1 that
    many episodes at once, each in a worker process (x2.processes.worker; progress then counts whole episodes)."""
    listed = {r.index: r.frames for r in ds.episodes()}
    unknown = [i for i in episodes if i not in listed]
    if unknown:
        raise DatasetError(f"{ds.root}: --episodes: found {', '.join(map(str, unknown))}; allowed: committed "
                           f"episodes ({len(listed)} in the dataset)")
    if workers < 1:
        raise DatasetError(f"--workers: found {workers}; allowed: 1 or more")
    if folder.exists() and not folder.is_dir():
        raise DatasetError(f"{folder}: video folder: found a file; allowed: a folder (made when missing)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(f"{folder}: video folder: found it cannot be made ({cause(exc)}); allowed: a "
                           "writable place") from None
    total = sum(listed[i] for i in episodes)
    if workers > 1 and len(episodes) > 1:
        return _in_workers(ds, episodes, cameras, size, folder, progress, min(workers, len(episodes)), total)
    done, out = 0, []
    for k, index in enumerate(episodes):
        def advance(frames: int, _of: int, k: int = k, done: int = done) -> None:
            if progress is not None:
                progress(VideosProgress(done + frames, total, k, len(episodes)))

        with ds.load(index) as ep:
            out.append(episode_video(ep, cameras, size, folder / video_name(index), advance))
        done += listed[index]
        if progress is not None:  # (episodes_done counts finished episodes, as with workers)
            progress(VideosProgress(done, total, k + 1, len(episodes)))
    return out


def _in_workers(ds: Dataset, episodes: Sequence[int], cameras: Sequence[str] | None, size: ImageSize,
                folder: Path, progress: Callable[[VideosProgress], None] | None, workers: int,
                total: int) -> list[VideoSummary]:
    from x2.processes.pool import in_order, open_pool
    from x2.processes.worker import set_up

    jobs = [VideoJob(i, ds.episode_path(i), folder / video_name(i), None if cameras is None else tuple(cameras),
                     size.height, size.width) for i in episodes]
    # x2.processes.worker's set-up (EGL, one BLAS thread), without its progress queue: an episode is reported done
    pool = open_pool(workers, set_up, (None,))
    out: list[VideoSummary] = []
    try:
        for _, future in in_order(pool, run_video_job, jobs):
            out.append(future.result())  # (a worker's refusal is raised here, in the episodes' order)
            if progress is not None:
                progress(VideosProgress(sum(v.frames for v in out), total, len(out), len(episodes)))
    finally:
        pool.shutdown()
    return out
