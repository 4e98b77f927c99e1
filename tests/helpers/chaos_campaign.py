"""A chaos campaign: for each command, one run never killed (the calibration), then runs SIGKILLed at seeded
random moments until `kills` of them were really killed; what every kill left, summed per command."""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from helpers.chaos_kills import calibrate, kill_once
from helpers.chaos_scenarios import SCENARIOS, Fixtures


@dataclass
class CommandStats:
    command: str
    kills: int = 0
    finished: int = 0  # runs that ended before their signal
    episodes_checked: int = 0
    processes_seen: int = 0
    repaired: int = 0  # kills after which validate() found something repairable
    lost: list[str] = field(default_factory=list)
    changed_sources: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)
    complete: int = 0
    absent: int = 0
    half_made: list[str] = field(default_factory=list)
    failed_runs: list[str] = field(default_factory=list)  # runs that finished before the signal, not with 0
    window_s: float = 0.0
    target_episodes: int = 0  # what a run never killed left at its target
    process_kinds: set[str] = field(default_factory=set)

    @property
    def has_target(self) -> bool:
        return bool(self.complete or self.absent or self.half_made)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.changed_sources or self.left_behind or self.half_made or self.failed_runs)


def run_command(command: str, fixtures: Fixtures, kills: int, rng: random.Random, scratch: Path,
                max_runs: int | None = None) -> CommandStats:
    """Runs until `kills` were really killed, at most `max_runs` (default 3 kills) of them."""
    build = SCENARIOS[command]
    stats = CommandStats(command)
    scratch.mkdir(parents=True, exist_ok=True)
    calibration = calibrate(lambda work: build(fixtures, work), scratch)
    stats.window_s, stats.target_episodes = calibration.window_s, calibration.target_episodes
    for attempt in range(max_runs or 3 * kills):
        if stats.kills >= kills:
            break
        work = scratch / f"run{attempt}"
        work.mkdir()
        result = kill_once(build(fixtures, work), calibration, rng, scratch / f"run{attempt}.log")
        stats.kills += result.killed
        stats.finished += not result.killed
        if not result.killed:
            # The calibration run may have been slowed by a busy machine (or its progress seen early), so
            # its window overstates this run's: draw the next moment from within what this one really ran.
            window_s = min(calibration.window_s, result.ran_after_progress_s) / 2
            calibration = replace(calibration, window_s=window_s)
        if not result.killed and result.exit_code != 0:
            stats.failed_runs.append(f"run {attempt}: exit {result.exit_code}, see {scratch / f'run{attempt}.log'}")
        v = result.verdict
        stats.episodes_checked += v.episodes_checked
        stats.processes_seen += result.processes_seen
        stats.process_kinds |= result.kinds
        stats.repaired += v.repaired > 0
        stats.lost += [f"run {attempt}: {m}" for m in v.lost]
        stats.changed_sources += [f"run {attempt}: {m}" for m in v.changed_sources]
        stats.left_behind += [f"run {attempt}: {m}" for m in result.left_behind]
        if v.target_state == "complete":
            stats.complete += 1
        elif v.target_state == "absent":
            stats.absent += 1
        elif v.target_state:
            stats.half_made.append(f"run {attempt}: {v.target_state}")
        # Keep what a failure left, for a person to look at.
        if v.clean and not result.left_behind and (result.killed or result.exit_code == 0):
            shutil.rmtree(work)
            (scratch / f"run{attempt}.log").unlink()
    return stats

