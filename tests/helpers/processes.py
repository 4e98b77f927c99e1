"""A command's process tree, read from /proc (Linux), for tests that SIGKILL a command and look for orphans.

Each process is named by its pid and its start time (field 22 of /proc/PID/stat), so a pid the kernel
reuses for an unrelated process after the kill is never mistaken for a leftover.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    pid: int
    started: int  # clock ticks after boot

    def cmdline(self) -> str:
        try:
            return (PROC / str(self.pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""

    def kind(self) -> str:
        """A short name for reports: a multiprocessing role, else the program's name (a forked pool worker has
        its parent's)."""
        line = self.cmdline()
        for marker, name in (("resource_tracker", "resource tracker"), ("spawn_main", "spawned worker"),
                             ("forkserver", "forkserver")):
            if marker in line:
                return name
        return Path(line.split(" ", 1)[0]).name or "?"


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start time), or None when the process is gone."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def descendants(pid: int) -> set[Proc]:
    """Every live (not zombie) process below `pid`."""
    table: dict[int, tuple[int, int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] != "Z":
            table[int(entry.name)] = (stat[1], stat[2])
    out: set[Proc] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, (parent, _) in table.items() if parent in frontier} - {p.pid for p in out}
        out |= {Proc(child, table[child][1]) for child in frontier}
    return out


def alive(proc: Proc) -> bool:
    stat = _stat(proc.pid)
    # A zombie has exited (only its exit status waits for a reaper); another start time is another process.
    return stat is not None and stat[0] != "Z" and stat[2] == proc.started


def wait_gone(procs: set[Proc], within_s: float) -> set[Proc]:
    """Poll until none of `procs` is alive or `within_s` passed; those still alive."""
    until = time.monotonic() + within_s
    left = {p for p in procs if alive(p)}
    while left and time.monotonic() < until:
        time.sleep(0.02)
        left = {p for p in left if alive(p)}
    return left


def kill_all(procs: set[Proc]) -> None:
    """SIGKILL whichever of `procs` is still alive (so a leftover does not load the machine)."""
    for proc in procs:
        if alive(proc):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
