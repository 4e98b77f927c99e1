"""The scheduling policy of the calling thread and of the threads it starts, kept across code that would raise it.

SVT-AV1 (LeRobot's default video codec, inside PyAV) makes its encoding threads SCHED_FIFO 99 when the process
may do so (as root: CAP_SYS_NICE), and raises the thread that calls the encoder too. The encoding threads then
hold both cores while they encode, and a caller left real-time starts every child real-time: each such child
holds a core for as long as it computes (measured: a test run took twice as long, its workers starving each
other's children). Whatever encodes video runs inside `keeps_scheduling()`: the calling thread lends its right
to raise priorities to nobody it starts there (on Linux, CAP_SYS_NICE leaves the thread's effective
capabilities for the body; threads inherit them), and its own policy is put back after. tests/conftest.py fails
a test that leaves its process real-time.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
from collections.abc import Iterator

_CAP_SYS_NICE = 23  # linux/capability.h
_CAPS_V3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def is_realtime() -> bool:
    """Whether the calling thread runs under a real-time policy (SCHED_FIFO or SCHED_RR)."""
    if not hasattr(os, "sched_getscheduler"):  # (not Linux)
        return False
    return os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR)


@contextlib.contextmanager
def keeps_scheduling() -> Iterator[None]:
    """Neither this thread nor a thread it starts in the body turns real-time; the policy on entry, on exit."""
    if not hasattr(os, "sched_getscheduler"):
        yield
        return
    policy, priority = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
    try:
        with _without_sys_nice():
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


@contextlib.contextmanager
def _without_sys_nice() -> Iterator[None]:
    """CAP_SYS_NICE out of the calling thread's effective set for the body (capabilities are per thread; a thread
    started meanwhile inherits the set without it), back in afterwards. Nothing to do where the thread lacks it."""
    libc = _libc()
    if libc is None:
        yield
        return
    header, data = _CapHeader(_CAPS_V3, 0), (_CapData * 2)()
    bit = 1 << _CAP_SYS_NICE
    if libc.capget(ctypes.byref(header), data) != 0 or not data[0].effective & bit:
        yield
        return
    data[0].effective &= ~bit
    dropped = libc.capset(ctypes.byref(header), data) == 0
    try:
        yield
    finally:
        if dropped:
            data[0].effective |= bit
            libc.capset(ctypes.byref(header), data)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "capget") and hasattr(libc, "capset") else None
