"""kill -9 of a running `x2 render` at seeded random moments, each run resuming the one killed before it (0,
1 and 2 episodes into the run): every episode file is the old one or the fully rendered one, `x2 datasets
validate` is green, no worker outlives its parent, and a last run finishes the job with exactly the bytes of
a run never killed.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.processes import Proc, descendants, wait_gone
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import HEADLESS_ENV, run_x2
from typer.testing import CliRunner

from x2.cli.datasets import app as datasets_app
from x2.datasets import validate
from x2.render import render_dataset
from x2.sim.camera import ImageSize

ARGS = ["--cameras", "head,left_wrist", "--size", "96x128", "--workers", "2"]
KILLS = 3
EPISODES = 8


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "episodes").glob("*.h5"))}


def _changed(root: Path, old: dict[str, bytes]) -> int:
    """Episodes whose file is no longer the old one (by size: cheap enough to poll)."""
    return sum((root / "episodes" / name).stat().st_size != len(data) for name, data in old.items())


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("render_crash")
    pristine = base / "pristine"
    # Eight episodes: the kills come 0, 1 and 2 episodes into their runs, each up to 0.6 s later (in which
    # the other worker may finish one more), so even the third run has episodes left when it is killed.
    record_short_dataset(pristine, episodes=EPISODES, ticks=30)
    reference = base / "reference"
    shutil.copytree(pristine, reference)
    render_dataset(reference, ("head", "left_wrist"), ImageSize(96, 128), workers=2)
    return pristine, reference


def test_sigkill_leaves_old_or_rendered_episodes_and_a_rerun_finishes(datasets: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    pristine, reference = datasets
    old, new = _files(pristine), _files(reference)
    rng = random.Random(20261201)
    root = tmp_path / "victim"
    shutil.copytree(pristine, root)
    states: list[int] = []
    # One dataset through every kill: each run resumes what the killed one before it left (its half-rendered
    # episodes in .rendering, a commit between log and rename), so recovering is itself killed, and the
    # rendering is paid for once instead of once a kill.
    for kill in range(KILLS):
        start = _changed(root, old)
        proc = subprocess.Popen([sys.executable, "-m", "x2", "render", str(root), *ARGS], cwd=tmp_path,
                                env=HEADLESS_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        # Kill `kill` episodes into this run (0: while its first ones render), then a random moment later.
        workers: set[Proc] = set()
        deadline = None
        while proc.poll() is None and (deadline is None or time.monotonic() < deadline):
            workers |= descendants(proc.pid)
            if deadline is None and _changed(root, old) >= start + kill and workers:
                deadline = time.monotonic() + rng.uniform(0.0, 0.6)
            time.sleep(0.02)
        assert proc.poll() is None, "the render finished before it could be killed"
        workers |= descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not wait_gone(workers, 120.0), "a render worker outlived its killed parent"  # a hang guard only
        now = _files(root)
        assert now.keys() == old.keys()
        for name, data in now.items():
            assert data in (old[name], new[name]), f"kill {kill}: {name} is neither the old nor the rendered file"
        states.append(sum(now[n] == new[n] for n in now))
        # The command's own code, in this process: a fresh interpreter would only add its start-up.
        check = CliRunner().invoke(datasets_app, ["validate", str(root)])
        assert check.exit_code == 0 and "valid" in check.output, check.output
    assert states[-1] >= 3 and states == sorted(states), states  # each kill fell further into the job
    rerun = run_x2(["render", str(root), *ARGS], cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert _files(root) == new
    assert (root / "episodes.jsonl").read_bytes() == (reference / "episodes.jsonl").read_bytes()
    assert not list((root / ".rendering").iterdir())
    assert validate(root).valid
