"""The chaos benchmark (bench/chaos.py) in small: one or two real SIGKILLs of a few writing commands at seeded random
moments after real progress, and one refused write. Nothing committed is lost, sources are unchanged,
targets are absent or complete, and no process of a killed command is left behind."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest
from helpers.chaos_campaign import run_command
from helpers.chaos_faults import FaultStats, fault_campaign
from helpers.chaos_scenarios import Fixtures

KILLS = 2
# One kill of the commands with worker pools: each run starts its workers first, which takes seconds
# (tests/test_processes_life.py and tests/test_render_crash.py kill them more; bench/chaos.py 20 times).
KILLS_OF = {"synth": 1, "render": 1}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    return Fixtures.make(tmp_path_factory.mktemp("chaos_fixtures"))


@pytest.mark.parametrize("command", ["synth", "render", "export zarr", "datasets merge", "datasets rm"])
def test_sigkill_loses_nothing_and_leaves_no_process(command: str, fixtures: Fixtures, tmp_path: Path) -> None:
    kills = KILLS_OF.get(command, KILLS)
    stats = run_command(command, fixtures, kills, random.Random(zlib.crc32(command.encode())), tmp_path,
                        max_runs=kills + 4)  # a run may finish before its drawn moment: draw again
    assert stats.kills >= 1, f"{command}: every run finished before its signal ({stats.finished} runs)"
    assert not stats.lost, stats.lost
    assert not stats.changed_sources, stats.changed_sources
    assert not stats.left_behind, stats.left_behind
    assert not stats.half_made, stats.half_made
    assert not stats.failed_runs, stats.failed_runs
    assert stats.episodes_checked > 0 or stats.complete + stats.absent == stats.kills + stats.finished


def test_a_refused_write_ends_the_export_cleanly(fixtures: Fixtures, tmp_path: Path) -> None:
    [stats] = fault_campaign(["export zarr"], fixtures, tmp_path, {"export zarr": 4}, nths=(3,), errnos=("EIO",))
    assert isinstance(stats, FaultStats) and stats.tried == [3]
    assert stats.clean, stats
