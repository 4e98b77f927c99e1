"""kill -9 at random moments never loses or corrupts a finished episode (docs/format.md, "Guarantees").

tests/helpers/write_episodes.py records episodes with the real EpisodeWriter, forever, into one
dataset; each episode's content is a function of its index. We SIGKILL it 20 times at seeded random
moments and check after every kill that the finished set only grows, every finished file holds
exactly its expected content, a kill only ever leaves repairable problems, and repair makes the
dataset valid with an index that lists exactly the finished files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from helpers.write_episodes import check

from x2.datasets import Dataset, repair, validate

REPO = Path(__file__).resolve().parents[1]
HELPER = REPO / "tests" / "helpers" / "write_episodes.py"
KILLS = 12  # kills at least (on until 10 episodes finished): the chaos test (test_chaos.py) kills every writer too


def _finished(root: Path) -> set[int]:
    folder = root / "episodes"
    return {int(p.stem.split("_")[1]) for p in folder.glob("episode_*.h5")} if folder.is_dir() else set()


def test_sigkill_never_loses_a_finished_episode(tmp_path: Path) -> None:
    root = tmp_path / "crashy"
    rng = np.random.default_rng(20260501)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    finished: set[int] = set()
    actions: list[str] = []
    # At least KILLS kills, and on until 10 episodes finished: a loaded machine writes fewer per run.
    for run in range(3 * KILLS):
        if run >= KILLS and len(finished) >= 10:
            break
        proc = subprocess.Popen([sys.executable, str(HELPER), str(root)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
        if not (root / "manifest.json").exists():
            assert not root.exists()  # killed before or during create: nothing half-made
            continue
        now = _finished(root)
        assert finished <= now, f"lost finished episodes {sorted(finished - now)}"
        for index in sorted(now):
            check(root / "episodes" / f"episode_{index:06d}.h5", index)
        report = validate(root)
        assert all(p.severity != "error" for p in report.problems), report.problems
        actions += repair(root).actions
        after = validate(root)
        assert after.valid, after.problems
        assert {r.index for r in Dataset.open(root).episodes()} == now
        assert not list((root / ".inprogress").iterdir())
        finished = now
    assert len(finished) >= 10, f"only {len(finished)} episodes finished in {3 * KILLS} runs"
    assert finished == set(range(max(finished) + 1)) - {int(a.split("_")[1][:6]) for a in actions
                                                         if a.startswith("salvaged")}
