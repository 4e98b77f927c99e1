"""Refused writes instead of kills: the n-th write (and every later one) under the folder a command writes
into fails with ENOSPC or EIO (tests/helpers/fault_writes.c, LD_PRELOAD). The command must end by
itself with a non-zero exit (not by a signal), without "Traceback" or "internal error", and lose
nothing committed: the same checks as after a kill (tests/helpers/chaos_checks.py)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from helpers.chaos_checks import Verdict, check_sources, check_store, check_target, committed, tree_digest
from helpers.chaos_kills import HANG_GUARD_S
from helpers.chaos_scenarios import SCENARIOS, Fixtures
from helpers.machine_says_no import fault_library, run_failing_disk

FAULT_COMMANDS = ("synth", "collect teleop", "export lerobot", "export zarr", "export hdf5")
ERRNOS = ("ENOSPC", "EIO")
NTH_WRITES = (1, 3, 20, 200)


@dataclass
class FaultStats:
    command: str
    errno: str
    tried: list[int] = field(default_factory=list)  # the n of each run
    exit_codes: list[int] = field(default_factory=list)
    by_signal: list[int] = field(default_factory=list)  # n of runs a signal ended
    succeeded: list[int] = field(default_factory=list)  # n of runs that exited 0 (fewer writes than n?)
    tracebacks: list[int] = field(default_factory=list)  # n of runs that printed a traceback or internal error
    lost: list[str] = field(default_factory=list)
    half_made: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.by_signal or self.succeeded or self.tracebacks or self.lost or self.half_made)


def refuse_writes(command: str, errno: str, nth: int, fixtures: Fixtures, work: Path, library: Path,
                  expected_target_episodes: int, stats: FaultStats) -> None:
    run = SCENARIOS[command](fixtures, work)
    assert run.disk is not None, f"{command}: no folder to fail writes under"
    sources = {root: tree_digest(root) for root in run.sources}
    before = {store.root: committed(store.root) for store in run.stores}
    done = run_failing_disk(run.args, run.cwd, library, run.disk, errno=errno, after=nth, timeout=HANG_GUARD_S)
    stats.tried.append(nth)
    stats.exit_codes.append(done.returncode)
    if done.returncode < 0:
        stats.by_signal.append(nth)
    elif done.returncode == 0:
        stats.succeeded.append(nth)
    if "Traceback" in done.stderr or "internal error" in done.stderr:
        stats.tracebacks.append(nth)
    verdict = Verdict()
    for store in run.stores:
        check_store(store, before[store.root], verdict)
    check_sources(sources, verdict)
    if run.target is not None:
        check_target(run.target, expected_target_episodes, verdict)
    stats.lost += [f"n={nth}: {m}" for m in verdict.lost + verdict.changed_sources]
    if verdict.target_state.startswith("half-made"):
        stats.half_made.append(f"n={nth}: {verdict.target_state}")


def fault_campaign(commands: list[str], fixtures: Fixtures, scratch: Path, target_episodes: dict[str, int],
                   nths: tuple[int, ...] = NTH_WRITES, errnos: tuple[str, ...] = ERRNOS) -> list[FaultStats]:
    """`target_episodes`: what each command's target holds after a run never refused (from the kill
    campaign's calibration); a refused export must leave that or nothing."""
    scratch.mkdir(parents=True, exist_ok=True)
    library = fault_library(scratch)
    out: list[FaultStats] = []
    for command in commands:
        for errno in errnos:
            stats = FaultStats(command, errno)
            for nth in nths:
                work = scratch / f"{command.replace(' ', '-')}-{errno}-{nth}"
                work.mkdir()
                refuse_writes(command, errno, nth, fixtures, work, library, target_episodes.get(command, 0), stats)
                if stats.clean:
                    shutil.rmtree(work)
            out.append(stats)
    return out
