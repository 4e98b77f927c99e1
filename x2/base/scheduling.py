"""The calling thread's scheduling policy, kept across code that changes it behind our back.

SVT-AV1 (LeRobot's default video codec, inside PyAV) raises every thread it touches to SCHED_FIFO 99 when the
process runs as root, the thread that calls the encoder included. A process left that way starts every child
real-time too: each such child then holds a core for as long as it computes, starving everything else on the
machine (measured: a test run took twice as long, its workers starving each other's children). Whatever encodes
video runs inside `keeps_scheduling()`; tests/conftest.py fails a test that leaves its process real-time.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def is_realtime() -> bool:
    """Whether the calling thread runs under a real-time policy (SCHED_FIFO or SCHED_RR)."""
    if not hasattr(os, "sched_getscheduler"):  # (not Linux)
        return False
    return os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR)


@contextlib.contextmanager
def keeps_scheduling() -> Iterator[None]:
    """The calling thread's policy and priority as they were on entry, however the body leaves."""
    if not hasattr(os, "sched_getscheduler"):
        yield
        return
    policy, priority = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
    try:
        yield
    finally:
        if (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) != (policy, priority):
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, policy, os.sched_param(priority))


def leave_realtime() -> bool:
    """Put the calling thread back under the default time-sharing policy; True when it was real-time."""
    if not is_realtime():
        return False
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True
