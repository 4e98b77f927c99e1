"""A WorkerPool of Ray actors: one actor per worker, each running the pool's initializer once (a synthesis
session takes seconds to build) and then one unit at a time.

The driver keeps the queue and gives each actor at most DEPTH units at a time: one running, one waiting
beside it so that the actor never idles while its result travels back and the next unit travels out, and
no more, so that a slow unit holds few quick ones up behind it (the local pool's queue is shared). A
dispatcher thread makes every Ray call after the pool starts and turns each result into the Future the
caller holds.

A lost actor (its process killed, its node gone) is restarted by Ray, elsewhere if need be (MAX_RESTARTS),
and rejoins the pool once it is up. The units it had go back to the front of the driver's queue, for
the next idle actor (TASK_RETRIES times): not Ray's own task retry, which would wait for that very actor, and
on a cluster that lost a node there may be no room for it until the run ends. A unit that loses its worker
on every try ends in WorkerLost, for the caller to record; when no actor is left the pool fails every unit
with RayUnavailable, which stops the run (a rerun resumes it).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray import ObjectRef
from ray.exceptions import (
    NodeDiedError,
    ObjectLostError,
    OwnerDiedError,
    RayActorError,
    RayTaskError,
    WorkerCrashedError,
)

import x2
from x2.processes.life import _name_of, _resolve
from x2.processes.pool import AUTO, LOCAL, RayTarget, RayUnavailable, WorkerLost
from x2.processes.reaper import DONE
from x2.processes.worker import HEADLESS_GL, ONE_THREAD

MAX_RESTARTS = 4  # per actor: enough to move off a lost node or two, not to loop on a unit that kills it
TASK_RETRIES = 2  # per unit, on another actor (or the same one restarted)
DEPTH = 2  # units given to one actor at a time
_WAIT_S = 0.05  # the dispatcher's longest nap while units run (a new submission waits at most this)
_CONNECT_S = 5.0  # for a cluster's address to answer
_SETTLE_S = 2.0  # at shutdown, for the units still running to fail with their killed actors
_LOST = (RayActorError, WorkerCrashedError, NodeDiedError, ObjectLostError, OwnerDiedError)


@dataclass
class _Unit:
    fn: str
    args: tuple[object, ...]
    future: Future[Any]  # (of whatever its function returns: units of several kinds share the queue)
    tries: int = 0


class _Worker:
    def __init__(self, initializer: str | None, initargs: tuple[object, ...]) -> None:
        if initializer is not None:
            _resolve(initializer)(*initargs)

    def ready(self) -> int:
        return os.getpid()

    def call(self, fn: str, *args: object) -> object:
        return _resolve(fn)(*args)


_RemoteWorker: Any = ray.remote(_Worker)  # (Ray's decorator is untyped: the actor class as Any, once)


def worker_env() -> dict[str, str]:
    """What a worker's environment must say: headless GL, one BLAS thread (one worker per reserved CPU), the
    driver's offline switch and renderer (PASSED_ON), and x2 from the driver's source tree when x2 is not an
    installed package (an editable install elsewhere would otherwise win). A path that does not exist on another
    node is skipped there by Python, which then imports its installed x2."""
    env = {"MUJOCO_GL": os.environ.get("MUJOCO_GL", HEADLESS_GL)}
    env |= {var: "1" for var in ONE_THREAD}
    env |= {var: os.environ[var] for var in PASSED_ON if var in os.environ}
    return env | _source_path()


# the driver's choices a worker must share: LeRobot offline, and the engine pictures are drawn with
# (x2.sim.camera.RENDERER_ENV, `--renderer filament`, with the X display Filament needs)
PASSED_ON = ("HF_HUB_OFFLINE", "X2_RENDERER", "DISPLAY")


def _source_path() -> dict[str, str]:
    """PYTHONPATH with x2's source tree first, when x2 runs from one rather than as an installed package."""
    source = Path(x2.__file__).resolve().parent.parent
    if {"site-packages", "dist-packages"} & set(source.parts):
        return {}
    return {"PYTHONPATH": os.pathsep.join([str(source), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _short_temp_dir() -> Path:
    # Ray puts its sockets under the temp dir and a socket path may be 107 characters at most: /tmp, never
    # a dataset's (or macOS's long per-user) folder.
    return Path(tempfile.mkdtemp(prefix="x2ray-", dir="/tmp" if os.path.isdir("/tmp") else None))


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in os.environ for the block (for the processes it starts), the old environment after it."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def _start_reaper(folder: Path) -> subprocess.Popen[bytes] | None:
    """The watcher that ends Ray's processes of a local run if this driver is killed (x2/processes/reaper.py),
    in a session of its own so that a signal to the driver's process group leaves it to do its work."""
    if not Path("/proc/self/fd").is_dir():
        return None
    return subprocess.Popen([sys.executable, "-m", "x2.processes.reaper", str(os.getpid()), str(folder)],
                            stdin=subprocess.PIPE, env={**os.environ, **_source_path()}, start_new_session=True)


def _check_reachable(address: str) -> None:
    """A HOST:PORT nobody answers on fails here, at once: ray.init would wait for its GCS for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # ("auto", or a form Ray resolves itself)
    with socket.create_connection((host, int(port)), timeout=_CONNECT_S):
        pass


def _cluster_cpus() -> float:
    cpus: float = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]  # (Ray leaves it unannotated)
    return cpus


class RayPool:
    shared_disk = False  # a unit may run on another machine: it carries its input and returns its output

    def __init__(self, target: RayTarget, workers: int | None, initializer: Callable[..., None] | None,
                 initargs: tuple[object, ...]):
        self._temp: Path | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self._started = False
        self._connect(target, workers)
        try:
            count = workers or max(1, int(_cluster_cpus() // target.cpus_per_worker))
            actor = _RemoteWorker.options(num_cpus=target.cpus_per_worker, max_restarts=MAX_RESTARTS)
            name = None if initializer is None else _name_of(initializer)
            self._actors = [actor.remote(name, initargs) for _ in range(count)]
        except BaseException:
            self._disconnect()
            raise
        self._cond = threading.Condition()
        self._queue: deque[_Unit] = deque()
        self._idle: deque[int] = deque()  # an actor's number once per unit it may take now
        self._up: set[int] = set()  # actors that answered and have not been lost since
        # ref of an actor's ready ping -> the actor; ref of a unit's call -> (actor, its unit)
        self._starting: dict[ObjectRef[object], int] = {a.ready.remote(): i for i, a in enumerate(self._actors)}
        self._busy: dict[ObjectRef[object], tuple[int, _Unit]] = {}
        self._retried = 0
        self._stopped = False
        self._dead: RayUnavailable | None = None
        self._thread = threading.Thread(target=self._dispatch, name="x2-ray-dispatch", daemon=True)
        self._thread.start()

    # ----- the cluster ---------------------------------------------------------------------------------------
    def _connect(self, target: RayTarget, workers: int | None) -> None:
        if ray.is_initialized():  # the caller's own connection (a script that ran ray.init): used, kept
            return
        try:
            if target.address == LOCAL:
                self._temp = _short_temp_dir()
                cpus = math.ceil((workers or os.cpu_count() or 1) * target.cpus_per_worker)
                self._reaper = _start_reaper(self._temp)
                # The instance's raylet is started now, from this process: its workers inherit the environment
                # it is given here. A runtime_env would say the same through Ray's agent, seconds later per
                # actor (measured: 7.1-7.4 s to two ready actors without, 9.5-13.2 s with, on a busy 2-core VM).
                with _environment(worker_env()):
                    ray.init(num_cpus=cpus, include_dashboard=False, _temp_dir=str(self._temp), log_to_driver=False,
                             logging_level=logging.ERROR)
            else:  # a cluster's raylets were started by `ray start`: only a runtime_env reaches their workers
                address = (os.environ.get("RAY_ADDRESS") or AUTO) if target.address == AUTO else target.address
                _check_reachable(address)
                ray.init(address=address, runtime_env={"env_vars": worker_env()}, log_to_driver=False,
                         logging_level=logging.ERROR)
        except (ConnectionError, RuntimeError, ValueError, OSError) as exc:
            self._disconnect()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RayUnavailable(f"--ray {target.address}: found no Ray cluster to use ({first}); allowed: local, auto "
                                 "(RAY_ADDRESS or a cluster started here by `ray start`) or its address") from None
        self._started = True

    def _disconnect(self) -> None:
        if self._started:
            ray.shutdown()
            self._started = False
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None
        if self._reaper is not None:
            with contextlib.suppress(OSError):
                assert self._reaper.stdin is not None
                self._reaper.stdin.write(DONE)
                self._reaper.stdin.close()
            self._reaper.wait()
            self._reaper = None

    # ----- the pool ------------------------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        return len(self._actors)

    def alive(self) -> int | None:
        with self._cond:
            return len(self._up)

    def retried(self) -> int:
        with self._cond:
            return self._retried

    def submit[*Args, R](self, fn: Callable[[*Args], R], *args: *Args) -> Future[R]:
        future: Future[R] = Future()
        with self._cond:
            if self._dead is not None:
                future.set_exception(self._dead)
            else:
                self._queue.append(_Unit(_name_of(fn), args, future))
                self._cond.notify()
        return future

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join()
        for unit in self._queue:
            unit.future.cancel()
        for ref in self._busy:  # (Ray logs a running unit whose actor is killed, unless it is cancelled first)
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if self._busy:  # their failures settle before the connection goes (Ray logs each one it cannot deliver)
            ray.wait(list(self._busy), num_returns=len(self._busy), timeout=_SETTLE_S)
        self._disconnect()

    # ----- the dispatcher thread -----------------------------------------------------------------------------
    def _dispatch(self) -> None:
        try:
            self._dispatch_until_stopped()
        except BaseException as exc:  # (no unit may wait for ever on a dispatcher that is gone)
            self._fail_all(RayUnavailable(f"the Ray dispatcher stopped: {type(exc).__name__}: {exc}"))
            raise

    def _dispatch_until_stopped(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                while self._idle and self._queue:
                    unit = self._queue.popleft()
                    if unit.tries or unit.future.set_running_or_notify_cancel():
                        actor = self._idle.popleft()
                        self._busy[self._actors[actor].call.remote(unit.fn, *unit.args)] = (actor, unit)
                watching = [*self._starting, *self._busy]
                if not watching:
                    self._cond.wait(_WAIT_S)  # nothing runs: wait for a submission
                    continue
            ready, _ = ray.wait(watching, num_returns=1, timeout=_WAIT_S)
            for ref in ready:
                self._settle(ref)

    def _settle(self, ref: ObjectRef[object]) -> None:
        with self._cond:
            starting = self._starting.pop(ref, None)
            actor, unit = (starting, None) if starting is not None else self._busy.pop(ref)
        try:
            value = ray.get(ref)
        except RayTaskError as exc:  # the unit raised: its own error, as a local worker's would be
            assert unit is not None  # (ready() raises nothing of its own)
            unit.future.set_exception(exc.cause if isinstance(exc.cause, BaseException) else exc)
            self._back(actor)
        except _LOST as exc:
            if unit is not None:
                self._lost(actor, unit, exc)
            self._check_any_left(exc)
        except Exception as exc:  # another Ray error (the object store full, ...): the unit's, not the worker's
            if unit is not None:
                unit.future.set_exception(exc)
            self._back(actor)
        else:
            if unit is None:
                with self._cond:
                    if actor not in self._up:
                        self._up.add(actor)
                        self._idle.extend([actor] * DEPTH)
                return
            unit.future.set_result(value)
            self._back(actor)

    def _lost(self, actor: int, unit: _Unit, exc: BaseException) -> None:
        with self._cond:
            if actor in self._up:  # (its other unit, lost with it, finds it down already)
                self._up.discard(actor)
                self._idle = deque(i for i in self._idle if i != actor)
                # back in service once Ray has restarted it (the ping waits through the restart)
                self._starting[self._actors[actor].ready.options(max_task_retries=-1).remote()] = actor
            if unit.tries < TASK_RETRIES:
                unit.tries += 1
                self._retried += 1
                self._queue.appendleft(unit)  # first in line: the run commits in order and waits for it
                return
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        unit.future.set_exception(WorkerLost(f"worker lost on every try, {1 + TASK_RETRIES} "
                                             f"({type(exc).__name__}: {first[:200]})"))

    def _back(self, actor: int) -> None:
        with self._cond:
            if actor in self._up:
                self._idle.append(actor)

    def _check_any_left(self, exc: BaseException) -> None:
        with self._cond:
            if self._starting or self._busy or self._idle:
                return
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        self._fail_all(RayUnavailable(f"every Ray worker is lost ({type(exc).__name__}: {first[:200]}); what is "
                                      "committed stays, and running the command again resumes it"))

    def _fail_all(self, error: RayUnavailable) -> None:
        with self._cond:
            self._dead = error
            pending = [u.future for u in self._queue] + [u.future for _, u in self._busy.values()]
            self._queue.clear()
        for future in pending:
            if not future.done():
                future.set_exception(error)
