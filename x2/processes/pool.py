"""Where the units of a run (a synthesis attempt, an episode to render) are computed: a pool of long-lived local
worker processes, or Ray actors on a cluster. Either way the caller submits unit i and gets a Future back;
results arrive in any order and the caller commits them in its own order, so the bytes do not depend on
where a unit ran.

Nothing here imports Ray: `open_pool` imports x2.processes.ray_cluster only when a Ray target is given
(importing x2 imports no ray; an import-linter contract keeps it so).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from x2.base.errors import X2Error
from x2.processes.life import process_pool, stop_workers

LOCAL, AUTO = "local", "auto"


class WorkerLost(RuntimeError):
    """A unit whose worker died (its process killed, its node lost) on every try the pool allows. The unit
    itself may be fine: a caller records it as lost rather than stopping the run."""


class RayUnavailable(X2Error):
    """--ray was given but Ray is not installed, or the cluster cannot be reached."""


@dataclass(frozen=True)
class RayTarget:
    """Which Ray cluster to run on: "local" (start one on this machine for the run), "auto" (RAY_ADDRESS or the
    cluster already running here) or a cluster address; and the CPUs each worker reserves there."""

    address: str
    cpus_per_worker: float = 1.0


class WorkerPool(Protocol):
    """Workers that each ran the pool's initializer once and then compute units, any number of them."""

    @property
    def workers(self) -> int: ...

    @property
    def shared_disk(self) -> bool:
        """Whether the workers see the caller's files (a local pool) or only what a unit carries (a cluster)."""
        ...

    def submit[*Args, R](self, fn: Callable[[*Args], R], *args: *Args) -> Future[R]:
        """Unit `fn(*args)` on some worker. `fn` must be a module-level function (a worker imports it by name)."""
        ...

    def alive(self) -> int | None:
        """Workers ready or busy now; None where the pool does not watch them (a local pool's die with it)."""
        ...

    def retried(self) -> int:
        """Units given to another worker after theirs was lost (a local pool retries none)."""
        ...

    def shutdown(self) -> None:
        """End every worker now: what is still running is abandoned."""
        ...


class LocalPool:
    """`workers` processes on this machine (x2.processes.life.process_pool: they die with this process)."""

    shared_disk = True

    def __init__(self, workers: int, initializer: Callable[..., None] | None = None,
                 initargs: tuple[object, ...] = (), *, copies: bool = False):
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = process_pool(workers, initializer, initargs, copies=copies)

    @property
    def workers(self) -> int:
        return self._workers

    def submit[*Args, R](self, fn: Callable[[*Args], R], *args: *Args) -> Future[R]:
        assert self._pool is not None, "pool shut down"
        return self._pool.submit(fn, *args)

    def alive(self) -> int | None:
        return None

    def retried(self) -> int:
        return 0

    def shutdown(self) -> None:
        if self._pool is not None:
            stop_workers(self._pool)
            self._pool = None


def open_pool(workers: int | None, initializer: Callable[..., None] | None = None,
              initargs: tuple[object, ...] = (), *, ray: RayTarget | None = None,
              copies: bool = False) -> WorkerPool:
    """A local pool of `workers` processes (default: one per core), or with `ray` one Ray actor per worker
    (default: as many as the cluster's CPUs hold)."""
    if ray is None:
        return LocalPool(workers or os.cpu_count() or 1, initializer, initargs, copies=copies)
    try:
        from x2.processes.ray_cluster import RayPool
    except ImportError as exc:
        if exc.name is None or exc.name.split(".")[0] != "ray":
            raise
        raise RayUnavailable(f"--ray: found no Ray ({exc}); allowed: with Ray installed "
                             "(pip install 'x2[ray]')") from None
    return RayPool(ray, workers, initializer, initargs)


def in_order[U, R](pool: WorkerPool | None, fn: Callable[[U], R], units: Iterable[U], ahead: int = 2
                   ) -> Iterator[tuple[U, Future[R]]]:
    """`fn(unit)` of every unit, each yielded in the units' order once done (a done Future: its result, or its
    error such as WorkerLost), with at most `ahead` units per worker in flight; `units` is read no further
    ahead than that. Without a pool each unit runs here when its turn comes."""
    if pool is None:
        for unit in units:
            done: Future[R] = Future()
            try:
                done.set_result(fn(unit))
            except Exception as exc:  # (as a worker's would: the caller's result() raises it)
                done.set_exception(exc)
            yield unit, done
        return
    window: deque[tuple[U, Future[R]]] = deque()
    source = iter(units)
    for unit in source:
        window.append((unit, pool.submit(fn, unit)))
        if len(window) >= ahead * pool.workers:
            head = window.popleft()
            head[1].exception()  # (waits for it)
            yield head
    while window:
        head = window.popleft()
        head[1].exception()
        yield head
