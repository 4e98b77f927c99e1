"""`render_dataset`: add camera streams to a dataset's finished episodes, resumably and atomically.

Under the dataset's writer lock: plan every selected episode first (done ones are skipped, a camera
stored at another size is refused unless `overwrite`, before any pixel is drawn), render the rest on a
pool of worker processes into `.rendering/` (or on Ray actors, whose files this process stages), and
commit them strictly in episode order through x2.datasets.rewrite (log first, then the rename). Each
episode file is built by one process from its own states, so the bytes do not depend on the number of
workers or where they run.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path

from x2.base.errors import DatasetError
from x2.datasets import Dataset, Episode
from x2.datasets.index import EpisodeRecord, format_indices
from x2.datasets.rewrite import commit_rewrite, finish_interrupted, staged_path
from x2.datasets.select import Selection
from x2.files.atomic import write_bytes
from x2.files.disk import is_refusal, refused
from x2.processes.pool import RayTarget, WorkerLost
from x2.processes.worker import progress_queue, worker_pool
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.recorded.held_out_check import eval_configuration, refuse_held_out
from x2.recorded.world import open_world
from x2.render.episode_file import cameras_to_draw
from x2.render.jobs import JobResult, RenderJob, run_job, run_shipped
from x2.sim.camera import ImageSize
from x2.sim.streams import DEFAULT_STREAMS, STREAMS


@dataclass(frozen=True)
class RenderProgress:
    episodes_done: int  # rendered or skipped
    episodes_total: int
    frames_done: int  # frames rendered so far (skipped episodes count none)
    frames_total: int  # frames to render
    elapsed_s: float
    workers_alive: int | None = None  # Ray workers ready or busy (a local pool's are not watched)

    @property
    def frames_per_s(self) -> float:
        return self.frames_done / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass(frozen=True)
class EpisodeRendered:
    index: int
    frames: int
    drawn: tuple[str, ...]  # cameras rendered; empty when the episode already had them all
    bytes_before: int
    bytes_after: int


@dataclass
class RenderSummary:
    root: Path
    cameras: tuple[str, ...]
    size: ImageSize
    workers: int
    streams: tuple[str, ...] = DEFAULT_STREAMS
    episodes: list[EpisodeRendered] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def rendered(self) -> list[EpisodeRendered]:
        return [e for e in self.episodes if e.drawn]

    @property
    def skipped(self) -> list[EpisodeRendered]:
        return [e for e in self.episodes if not e.drawn]

    @property
    def frames_rendered(self) -> int:
        return sum(e.frames for e in self.rendered)


def _check_request(cameras: Sequence[str], size: ImageSize, workers: int, ep: Episode,
                   streams: Sequence[str] = DEFAULT_STREAMS) -> None:
    """Cameras, streams and size against the episode's own model, before any worker starts."""
    if not streams or any(s not in STREAMS for s in streams) or len(set(streams)) != len(streams):
        raise DatasetError(f"--streams: found {list(streams)}; allowed: distinct names of {', '.join(STREAMS)}")
    if not cameras or len(set(cameras)) != len(cameras):
        raise DatasetError(f"--cameras: found {list(cameras)}; allowed: one or more distinct camera names")
    if workers < 1:
        raise DatasetError(f"--workers: found {workers}; allowed: 1 or more")
    with open_world(ep) as world:
        world.backend.cameras.refuse_unless_drawn(cameras, size, ep.path.name)


def render_dataset(path: str | Path, cameras: Sequence[str] = DEFAULT_CAMERAS, size: ImageSize = DEFAULT_SIZE,
                   workers: int = 1, overwrite: bool = False,
                   progress: Callable[[RenderProgress], None] | None = None,
                   episodes: Sequence[int] | None = None, allow_eval: bool = False,
                   ray: RayTarget | None = None, streams: Sequence[str] = DEFAULT_STREAMS) -> RenderSummary:
    """Render the `streams` (x2.sim.streams: rgb, depth, segmentation) of `cameras` at `size` into every selected
    episode (all of them unless `episodes`); episodes of an evaluation configuration are refused unless
    `allow_eval`. With `ray`, on Ray actors (x2.processes.pool)."""
    cameras = tuple(cameras)
    streams = tuple(s for s in STREAMS if s in streams) if set(streams) <= set(STREAMS) else tuple(streams)
    started = time.perf_counter()
    ds = Dataset.open(path)
    summary = RenderSummary(ds.root, cameras, size, workers, streams)
    ds.lock()  # heals the log and finishes (or clears) what a killed render left in .rendering/
    try:
        records = sorted(ds.episodes(), key=lambda r: r.index)
        selected = Selection(episodes=tuple(episodes)).apply(ds) if episodes is not None else records
        if not selected:
            raise DatasetError(f"{ds.root}: episodes: found none"
                               + ("" if episodes is None else f" of {format_indices(list(episodes))}")
                               + "; allowed: a dataset with committed episodes")
        plan: dict[int, tuple[str, ...]] = {}
        for record in selected:
            ds.verify([record])  # a damaged file must not be committed again under a fresh digest
            with ds.load(record.index) as ep:
                refuse_held_out(ds, record.index, eval_configuration(ep), allow_eval)
                if not plan:  # the first episode's model stands for the dataset's (one robot, one booth)
                    _check_request(cameras, size, workers, ep, streams)
                plan[record.index] = cameras_to_draw(ep, cameras, size, overwrite, streams)
        todo = [r for r in selected if plan[r.index]]
        summary.workers = max(1, min(workers, len(todo)))
        outcomes = {r.index: EpisodeRendered(r.index, r.frames, (), r.bytes, r.bytes) for r in selected}
        if todo:
            _run(ds, records, todo, plan, size, summary.workers, outcomes, progress, started, len(selected), ray,
                 streams)
        summary.episodes = [outcomes[r.index] for r in selected]
    finally:
        with contextlib.suppress(DatasetError, OSError):
            finish_interrupted(ds.root, ds.episodes())  # strays of jobs that never committed
        ds.close()
    summary.wall_s = time.perf_counter() - started
    return summary


def _run(ds: Dataset, records: list[EpisodeRecord], todo: list[EpisodeRecord], plan: dict[int, tuple[str, ...]],
         size: ImageSize, workers: int, outcomes: dict[int, EpisodeRendered],
         progress: Callable[[RenderProgress], None] | None, started: float, selected: int,
         ray: RayTarget | None, streams: tuple[str, ...]) -> None:
    jobs = [RenderJob(r.index, ds.episode_path(r.index), staged_path(ds.root, r.index), plan[r.index],
                      size.height, size.width, streams) for r in todo]
    frames_total = sum(r.frames for r in todo)
    by_index = {r.index: r for r in todo}
    partial: dict[int, int] = {}  # frames done of episodes still rendering
    committed_frames = 0
    skipped = selected - len(todo)
    reports = progress_queue()
    pool = worker_pool(workers, reports, ray)
    pending: dict[int, Future[JobResult | tuple[JobResult, bytes]]] = {}  # (JobResult, bytes): a Ray pool's
    finished: dict[int, JobResult] = {}
    submitted = committed = 0
    try:
        while committed < len(jobs):
            while submitted < len(jobs) and len(pending) + len(finished) < 2 * workers:
                job = jobs[submitted]
                pending[job.index] = pool.submit(run_job, job) if pool.shared_disk else \
                    pool.submit(run_shipped, job, job.source.read_bytes())
                submitted += 1
            done, _ = wait(pending.values(), timeout=0.25, return_when=FIRST_COMPLETED)
            for index in [i for i, f in pending.items() if f in done]:
                try:
                    finished[index] = _staged(pending.pop(index).result(), ds.root)  # a worker's error is raised here
                except WorkerLost as exc:
                    raise DatasetError(f"episode {index}: {exc}; it keeps its previous version, and running "
                                       "x2 render again renders it") from None
                except (OSError, RuntimeError) as exc:
                    if not is_refusal(exc):
                        raise
                    raise refused(exc, staged_path(ds.root, index), f"episode {index} keeps its previous version "
                                                                   f"({ds.safe_note()})") from None
            with contextlib.suppress(queue.Empty):
                while True:
                    index, frames = reports.get_nowait()
                    partial[index] = max(partial.get(index, 0), frames)
            while committed < len(jobs) and jobs[committed].index in finished:
                index = jobs[committed].index
                with ds.refusals(ds.root, prefix=f"episode {index} keeps its previous version, "):
                    records[:] = commit_rewrite(ds.root, records, index)
                new = next(r for r in records if r.index == index)
                outcomes[index] = EpisodeRendered(index, by_index[index].frames, plan[index],
                                                  by_index[index].bytes, new.bytes)
                finished.pop(index)
                partial.pop(index, None)
                committed_frames += by_index[index].frames
                committed += 1
            if progress is not None:
                frames_done = committed_frames + sum(partial.values()) + sum(
                    by_index[i].frames for i in finished)
                progress(RenderProgress(skipped + committed, selected, min(frames_done, frames_total),
                                        frames_total, time.perf_counter() - started, pool.alive()))
    finally:
        pool.shutdown()  # now, rather than wait for episodes nobody will commit (ProcessPoolExecutor would)
        reports.close()


def _staged(result: JobResult | tuple[JobResult, bytes], root: Path) -> JobResult:
    """A local worker staged its file itself; a Ray worker's comes back as bytes, staged here."""
    if isinstance(result, JobResult):
        return result
    job, data = result
    staged = staged_path(root, job.index)
    staged.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(staged, data)
    return job
