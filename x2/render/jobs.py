"""The render pass's unit of work: one whole episode rendered into a staged file (x2.render.episode_file).

Its workers are x2.processes.worker's (spawned, EGL, one BLAS thread, dead soon after their parent: a worker must
never outlive the `x2 render` that started it, even a SIGKILLed one, or it would keep a core busy writing a file
nobody commits), and a job reports its frame count through their progress queue so the parent can show frames/s.
On Ray (a cluster whose nodes need not share a disk) a job carries its episode's bytes and returns the new file's
bytes instead, for the parent to stage; an actor reserves one CPU by default, which is what a renderer needs:
MuJoCo draws through EGL, on the CPU with Mesa where the node has no GPU.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from x2.processes.worker import report


@dataclass(frozen=True)
class RenderJob:
    index: int
    source: Path  # the finished episode file
    staged: Path  # where its new version is built
    cameras: tuple[str, ...]
    height: int
    width: int
    streams: tuple[str, ...] = ("rgb",)  # x2.sim.streams' names


@dataclass(frozen=True)
class JobResult:
    index: int
    frames: int
    seconds: float  # wall time in the worker, world rebuild included


def run_job(job: RenderJob) -> JobResult:
    from x2.render.episode_file import write_rendered
    from x2.sim.camera import ImageSize

    started = time.perf_counter()

    def frames_done(done: int) -> None:
        report(job.index, done)

    frames = write_rendered(job.source, job.staged, job.cameras, ImageSize(job.height, job.width), frames_done,
                            streams=job.streams)
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
