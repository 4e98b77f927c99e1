"""kill -9 of a running `x2 render` at seeded random moments (0, 1 and 2 episodes into the run): every
episode file is the old one or the fully rendered one, `x2 datasets validate` is green, no worker
outlives its parent, and a rerun finishes the job with exactly the bytes of a run never killed.
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
from x2_cli import HEADLESS_ENV, run_x2

from x2.datasets import validate
from x2.render import ImageSize, render_dataset

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
    # Eight episodes: a kill two episodes in still leaves at least three rounds of two workers' rendering,
    # so the random delay after the second commit (up to 0.6 s) lands inside the run even when the
    # workers finish episodes in pairs on a loaded machine.
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
    states: list[int] = []
    for kill in range(KILLS):
        root = tmp_path / f"victim{kill}"
        shutil.copytree(pristine, root)
        proc = subprocess.Popen([sys.executable, "-m", "x2", "render", str(root), *ARGS], cwd=tmp_path,
                                env=HEADLESS_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        # Kill `kill` episodes into the run (0: while the first ones render), then a random moment later.
        workers: set[Proc] = set()
        deadline = None
        while proc.poll() is None and (deadline is None or time.monotonic() < deadline):
            workers |= descendants(proc.pid)
            if deadline is None and _changed(root, old) >= kill and workers:
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
        check = run_x2(["datasets", "validate", str(root)], cwd=tmp_path)
        assert check.returncode == 0 and "valid" in check.stdout, check.stdout + check.stderr
        rerun = run_x2(["render", str(root), *ARGS], cwd=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert _files(root) == new
        assert (root / "episodes.jsonl").read_bytes() == (reference / "episodes.jsonl").read_bytes()
        assert not list((root / ".rendering").iterdir())
        assert validate(root).valid
    assert states[-1] >= 2 and len(set(states)) > 1, states  # the kills fell at different stages
