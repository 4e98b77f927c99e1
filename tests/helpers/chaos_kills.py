"""SIGKILL a real x2 command at a random moment after it showed real progress, then judge what it left.

Every process of the command's tree is recorded while it runs (from /proc), so after the kill the ones
still alive a second later are counted (and killed, so the machine stays clean). The random moment is
drawn from [0, the time a run never killed took from the same progress signal to its exit], so most
kills land mid-run and a few after the command finished (those count as "finished", not as kills; the
campaign then draws from a shorter window, see chaos_campaign.py).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from helpers.chaos_checks import (
    READERS,
    Store,
    Target,
    Verdict,
    check_sources,
    check_store,
    check_target,
    committed,
    tree_digest,
)
from helpers.processes import Proc, descendants, kill_all, wait_gone
from helpers.x2_cli import HEADLESS_ENV

CHAOS_ENV = {**HEADLESS_ENV, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
# A process of the killed command still alive this long after the kill is left behind. Not shorter: a worker
# killed with its parent and then the resource tracker (which exits once the last holder of its pipe is gone)
# end one after the other, and on a busy 2-core CI machine that chain once took over 1 s; a real leftover
# lives on for good, so a few seconds still catch it.
LEFTOVER_GRACE_S = 5.0
HANG_GUARD_S = 600.0  # a command that neither progresses nor ends within this is stopped and reported
SCAN_EVERY_S = 0.03  # a worker lives far longer than this before it can be killed with its parent


@dataclass
class Watch:
    """What the harness sees of a running command: its pid and every process of its tree seen so far."""

    pid: int
    procs: set[Proc] = field(default_factory=set)
    scanned: float = 0.0  # when /proc was last scanned
    kinds: set[str] = field(default_factory=set)  # what they are, read while they run

    def refresh(self, every_s: float = 0.0) -> None:
        """Scan /proc for the command's processes, at most once per `every_s`: a scan costs a few ms of the
        CPU the command itself needs on a small machine."""
        now = time.monotonic()
        if now - self.scanned >= every_s:
            new = descendants(self.pid) - self.procs
            self.procs |= new
            self.kinds |= {p.kind() for p in new}
            self.scanned = now

    def opened_under(self, root: Path) -> bool:
        prefix = str(root.resolve())
        for pid in (self.pid, *(p.pid for p in self.procs)):
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                        return True
                except OSError:
                    continue
        return False


Progress = Callable[[Watch], bool]


def workers(n: int) -> Progress:
    """`n` pool workers are up: spawned ones, or forked copies of the command (its own command line)."""
    own: dict[int, str] = {}  # the command's own command line, read once

    def up(watch: Watch) -> bool:
        if watch.pid not in own:
            own[watch.pid] = Proc(watch.pid, 0).cmdline()
        line = own[watch.pid]
        return sum("spawn_main" in p.cmdline() or p.cmdline() == line for p in watch.procs) >= n
    return up


def appeared(folder: Path, pattern: str) -> Progress:
    return lambda watch: folder.is_dir() and any(folder.glob(pattern))


def any_of(*signals: Progress) -> Progress:
    return lambda watch: any(signal_(watch) for signal_ in signals)


def opened(root: Path) -> Progress:
    """The command holds a file of `root` open: it is reading or writing the dataset."""
    return lambda watch: watch.opened_under(root)


@dataclass(frozen=True)
class Run:
    """One prepared run of a command in its own fresh workspace."""

    args: list[str]
    cwd: Path
    progress: Progress
    stores: tuple[Store, ...] = ()
    sources: tuple[Path, ...] = ()
    target: Target | None = None
    disk: Path | None = None  # the folder it writes into: where a failing disk goes (chaos_faults.py)


@dataclass(frozen=True)
class Calibration:
    window_s: float  # a run never killed: from its progress signal to its exit
    target_episodes: int  # what its target held (0 without a target)


@dataclass
class KillResult:
    killed: bool  # False: the command finished before the signal
    exit_code: int  # -9 when killed; a run that finished first must have exited 0
    verdict: Verdict
    processes_seen: int
    kinds: set[str]  # what the command's processes were (besides the command itself)
    left_behind: list[str]  # command lines of processes alive LEFTOVER_GRACE_S after the kill
    ran_after_progress_s: float  # from the progress signal to the exit or the kill


def _start(run: Run, log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "x2", *run.args], cwd=run.cwd, env=CHAOS_ENV,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def _until_progress(proc: subprocess.Popen, run: Run, watch: Watch) -> float | None:
    """Poll until the run shows progress; the moment it did, or None when it ended first."""
    until = time.monotonic() + HANG_GUARD_S
    while proc.poll() is None and time.monotonic() < until:
        watch.refresh(every_s=SCAN_EVERY_S)
        if run.progress(watch):
            return time.monotonic()
        time.sleep(0.002)
    return None


def calibrate(build: Callable[[Path], Run], scratch: Path, tries: int = 3) -> Calibration:
    """Run to the end: how long it runs after its progress signal, and what its target holds. A run whose
    progress the harness never saw (it may be too quick to poll) is tried again, up to `tries` times."""
    for attempt in range(tries):
        work = scratch / f"calibration{attempt}"
        work.mkdir()
        run, log = build(work), scratch / f"calibration{attempt}.log"
        proc = _start(run, log)
        shown = _until_progress(proc, run, Watch(proc.pid))
        rc = proc.wait(timeout=HANG_GUARD_S)
        ended = time.monotonic()
        if rc != 0:
            raise RuntimeError(f"x2 {' '.join(run.args)} exited {rc}: {log.read_text()[-3000:]}")
        episodes = READERS[run.target.kind](run.target.path) if run.target else 0
        shutil.rmtree(work)
        log.unlink()
        if shown is not None:
            return Calibration(ended - shown, episodes)
    raise RuntimeError(f"x2 {' '.join(run.args)}: no progress seen before it ended, {tries} times")


def kill_once(run: Run, calibration: Calibration, rng: random.Random, log: Path) -> KillResult:
    sources = {root: tree_digest(root) for root in run.sources}
    proc = _start(run, log)
    watch = Watch(proc.pid)
    shown = _until_progress(proc, run, watch) or time.monotonic()
    fire_at = shown + rng.uniform(0.0, calibration.window_s)
    while proc.poll() is None and time.monotonic() < fire_at:
        watch.refresh(every_s=SCAN_EVERY_S)
        time.sleep(min(0.01, max(0.0, fire_at - time.monotonic())))
    before = {store.root: committed(store.root) for store in run.stores}
    watch.refresh()
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    exit_code = proc.wait()
    ran_after_progress_s = time.monotonic() - shown
    left = wait_gone(watch.procs, LEFTOVER_GRACE_S)
    left_lines = [p.cmdline()[:160] for p in left]
    kill_all(left)
    verdict = Verdict()
    for store in run.stores:
        check_store(store, before[store.root], verdict)
    check_sources(sources, verdict)
    if run.target is not None:
        check_target(run.target, calibration.target_episodes, verdict)
    return KillResult(killed, exit_code, verdict, len(watch.procs) + 1, watch.kinds, left_lines,
                      ran_after_progress_s)
