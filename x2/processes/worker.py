"""What a worker process is set up with before its first unit, whatever the units draw: a headless GL (EGL), one
BLAS thread, and its end of the parent's progress queue.

The pool's initializer (`set_up`) runs before anything numeric is imported in the worker (x2.processes.life
resolves it by name; this module imports no numpy), so these still take effect: two workers with two BLAS
threads each on 2 cores only thrash, and EGL is the headless GL. A unit reports how far it got with `report`
(the parent shows frames/s); on Ray there is no queue (it does not reach a cluster's nodes) and a unit reports
when it returns.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from multiprocessing.queues import Queue

from x2.processes.pool import RayTarget, WorkerPool, open_pool

ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
HEADLESS_GL = "egl"

Progress = tuple[int, int]  # (the unit's number, how far it got)

_progress: Queue[Progress] | None = None  # this worker's end of the parent's progress queue


def set_up(progress: Queue[Progress] | None) -> None:
    """A pool's initializer: headless GL, one BLAS thread, and where `report` goes."""
    os.environ["MUJOCO_GL"] = HEADLESS_GL
    for var in ONE_THREAD:
        os.environ[var] = "1"
    global _progress
    _progress = progress


def report(unit: int, done: int) -> None:
    """In a worker: unit `unit` got this far (nothing where the pool has no queue)."""
    if _progress is not None:
        _progress.put((unit, done))


def progress_queue() -> Queue[Progress]:
    """The parent's end: what its workers `report`, read with get_nowait()."""
    return mp.get_context("spawn").Queue()


def worker_pool(workers: int, progress: Queue[Progress], ray: RayTarget | None = None) -> WorkerPool:
    """`workers` spawned processes that die with this one (x2.processes.life), set up as above, or Ray actors
    (no progress queue: a cluster's workers report per unit)."""
    return open_pool(workers, set_up, (progress if ray is None else None,), ray=ray)
