"""The render pass's worker processes: spawned, one BLAS thread, EGL, and dead soon after their parent.

Each worker renders whole episodes into staged files (x2.render.episode_file) and reports its frame
count through a queue so the parent can show frames/s. On Ray (a cluster whose nodes need not share a disk)
a unit carries its episode's bytes and returns the new file's bytes instead, for the parent to stage; an
actor reserves one CPU by default, which is what a renderer needs: MuJoCo draws through EGL, on the CPU
with Mesa where the node has no GPU. A worker must never outlive the `x2 render`
that started it, even a SIGKILLed one (nothing would then wait for it, and it would keep a core busy
writing a file nobody commits): x2.processes.life arms that before the worker does anything else.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from x2.processes.pool import RayTarget, WorkerPool, open_pool

_progress: Any = None  # this worker's end of the parent's progress queue


@dataclass(frozen=True)
class RenderJob:
    index: int
    source: Path  # the finished episode file
    staged: Path  # where its new version is built
    cameras: tuple[str, ...]
    height: int
    width: int


@dataclass(frozen=True)
class JobResult:
    index: int
    frames: int
    seconds: float  # wall time in the worker, world rebuild included


def _init_worker(progress: Any) -> None:
    # Nothing numeric is imported yet (x2.render resolves its names lazily), so these still take effect:
    # two renderers with two BLAS threads each on 2 cores only thrash, and EGL is the headless GL.
    os.environ["MUJOCO_GL"] = "egl"
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = "1"
    global _progress
    _progress = progress


def run_job(job: RenderJob) -> JobResult:
    from x2.render.episode_file import write_rendered
    from x2.sim.camera import ImageSize

    started = time.perf_counter()

    def report(done: int) -> None:
        if _progress is not None:
            _progress.put((job.index, done))

    frames = write_rendered(job.source, job.staged, job.cameras, ImageSize(job.height, job.width), report)
    return JobResult(job.index, frames, time.perf_counter() - started)


def run_shipped(job: RenderJob, source: bytes) -> tuple[JobResult, bytes]:
    """`run_job` where the parent's files are out of reach: the episode comes as bytes and its new version goes
    back as bytes, built under this worker's temp folder with the same file names (so the same bytes)."""
    with tempfile.TemporaryDirectory(prefix="x2render-") as temp:
        here = replace(job, source=Path(temp, "source", job.source.name), staged=Path(temp, "staged", job.staged.name))
        here.source.parent.mkdir()
        here.source.write_bytes(source)
        result = run_job(here)
        return result, here.staged.read_bytes()


def worker_pool(workers: int, progress: Any, ray: RayTarget | None = None) -> WorkerPool:
    """`workers` spawned processes that die with this one (x2.processes.life), or Ray actors (no progress queue:
    a cluster's workers report per episode)."""
    return open_pool(workers, _init_worker, (progress if ray is None else None,), ray=ray)


def progress_queue() -> Any:
    return mp.get_context("spawn").Queue()
