"""Worker processes that never outlive the x2 command that started them, even a SIGKILLed one.

Nothing waits for a worker whose parent died: it would keep a core busy on work nobody commits, and
the multiprocessing resource tracker (which exits only when every holder of its pipe is gone) would
stay with it. So every process x2 starts arms this in its first lines:

- on Linux the kernel kills it with its parent (PR_SET_PDEATHSIG). The signal fires when the parent
  *thread* that spawned it ends, so it is only armed when that thread is the parent's main thread
  (x2 submits to its pools from the main thread; a helper thread that spawned would end too early);
- otherwise, or where prctl is missing, a daemon thread polls the parent pid every 0.2 s;
- a parent that died before either was armed is seen at once: the process was reparented, so
  os.getppid() is no longer the pid it was given.

A pool worker arms this before it imports the pool's initializer: that is passed by name, because
unpickling the function itself would import its module first (x2.synth.runner takes seconds to
import on a loaded machine, seconds in which a SIGKILLed parent's worker would live on). A child that is a
command rather than a pool worker (a policy service, x2/policy/process.py) learns its parent from its
environment (`child_environment`) and arms it in its first lines (`arm_parent_death`).
"""

from __future__ import annotations

import ctypes
import importlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

_PR_SET_PDEATHSIG = 1
_POLL_S = 0.2
PARENT_ENV = "X2_PARENT_PROCESS"  # a child command's parent: "PID:1" (spawned by its main thread) or "PID:0"


@dataclass(frozen=True)
class ParentProcess:
    """Who a worker must die with: the parent's pid, and whether the thread spawning it is the main one."""

    pid: int
    spawned_by_main_thread: bool

    @classmethod
    def here(cls) -> ParentProcess:
        """The calling process, as the parent of the workers the calling thread is about to spawn."""
        return cls(os.getpid(), threading.current_thread() is threading.main_thread())


def _kernel_kills_us_with_parent() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return result == 0
    except (OSError, AttributeError):  # not Linux, or no prctl in this libc
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_S)
    os._exit(1)


def die_with(parent: ParentProcess) -> None:
    """Arm this process to end when `parent` does; end now if it already has."""
    if not (parent.spawned_by_main_thread and _kernel_kills_us_with_parent()):
        threading.Thread(target=_watch, args=(parent.pid,), name="x2-parent-watch", daemon=True).start()
    if os.getppid() != parent.pid:  # the parent died before the death signal was armed
        os._exit(1)


def child_environment(parent: ParentProcess) -> dict[str, str]:
    """This process's environment for a child command that must die with `parent` (it calls arm_parent_death)."""
    return {**os.environ, PARENT_ENV: f"{parent.pid}:{int(parent.spawned_by_main_thread)}"}


def arm_parent_death() -> None:
    """In a child command: die with the process that started it (when one did, through child_environment). The
    variable is removed so the child's own children do not take its parent for theirs."""
    value = os.environ.pop(PARENT_ENV, None)
    if value:
        pid, _, main = value.partition(":")
        die_with(ParentProcess(int(pid), main == "1"))


def _name_of(function: Callable[..., object]) -> str:
    return f"{function.__module__}:{function.__qualname__}"


def _resolve(name: str) -> Callable[..., object]:
    module, _, qualname = name.partition(":")
    found: object = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    if not callable(found):
        raise TypeError(f"{name}: found a {type(found).__name__}; allowed: a function")
    return found


def _init(parent: ParentProcess, initializer: str | None, initargs: tuple[object, ...]) -> None:
    die_with(parent)
    if initializer is not None:
        _resolve(initializer)(*initargs)


def process_pool(workers: int, initializer: Callable[..., None] | None = None,
                 initargs: tuple[object, ...] = (), *, copies: bool = False) -> ProcessPoolExecutor:
    """`workers` spawned processes (fresh interpreters: no inherited simulator state, threads or GL
    context) that die with this one. Submit from the thread that creates the pool: the pool spawns
    its workers lazily, in the submitting thread.

    With `copies`, the workers are forked copies of this process instead, started all at the first submit: the
    imports are done already, so a worker is ready in milliseconds where a fresh interpreter takes most of a
    second to import x2, mujoco and numpy, on every run's clock. For a caller with nothing a copy must not
    share (no open dataset, no GL context), and only while this process runs no other thread: a fork copies
    the calling thread alone, and a lock another thread held would stay held in the copy. Otherwise, and where
    there is no fork, the workers are spawned as usual."""
    fork = copies and "fork" in mp.get_all_start_methods() and threading.active_count() == 1
    return ProcessPoolExecutor(workers, mp_context=mp.get_context("fork" if fork else "spawn"), initializer=_init,
                               initargs=(ParentProcess.here(), initializer and _name_of(initializer), initargs))


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """End `pool` now: queued tasks are cancelled and running ones abandoned, their workers terminated. For a
    caller that has every result it needs (leaving `with pool:` alone would wait for each running task)."""
    # (Python 3.14's ProcessPoolExecutor.terminate_workers does this; 3.12 keeps its processes private, and
    # shutdown() forgets them, so they are taken first)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    results = getattr(pool, "_result_queue", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
    if results is not None:
        # A worker killed while it sent a result leaves the pool's manager thread reading the rest of that
        # message, which no one will write: with this process's own copy of the pipe's write end closed too,
        # the read ends (EOF) and the manager sees a broken pool, as it does a dead worker.
        results._writer.close()
    if manager is not None:
        manager.join()  # it sees its workers gone and ends
