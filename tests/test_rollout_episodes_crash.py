"""kill -9 of a real `x2 collect` process at random moments: every committed episode opens and equals
a fresh, deterministic re-run of its seed; `validate --repair` then gives a valid index listing
exactly the finished files; no finished episode is ever lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from x2.datasets import Dataset, Episode, repair, validate
from x2.envspec import load_env
from x2.rollout import Rollout, reach_and_return, record_episode
from x2.rollout.episodes import open_dataset
from x2.sim.mujoco.backend import MujocoBackend

# Each run costs seconds of start-up before its first episode. The episode writer is killed at a dozen and
# more moments by its own test (test_datasets_crash.py); these runs are for what collect adds: resuming the
# dataset it was killed in and going on with the seed sequence.
KILLS = 4
COMMIT_WAIT_S = 90.0  # for a run's first episode on a machine as busy as CI's may be
TASK = "pick_place"


def _reference_states(seed: int, backend: MujocoBackend, tmp: Path) -> np.ndarray:
    env = backend.env
    ds = open_dataset(tmp / f"ref_{seed}", env, backend)
    teacher = reach_and_return(backend.home_action(), backend.action_layout, env.fps)
    _, record = record_episode(ds, Rollout(backend), teacher, seed, source="scripted")
    with ds.load(record.index) as ep:
        states = ep["states"].copy()
    ds.close()
    return states


@pytest.mark.timeout(600)
def test_kill9_collect_loses_no_finished_episode(tmp_path: Path) -> None:
    target = tmp_path / "ws" / "data" / "crashy"
    target.parent.mkdir(parents=True)
    rng = np.random.default_rng(2026)
    env_vars = {**os.environ, "MUJOCO_GL": "egl"}
    seen: dict[str, bytes] = {}
    for _ in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, "-m", "x2", "collect", "waypoints", "--task", TASK, "--episodes", "500",
             "--seed", "3", "--dataset", str(target)],
            cwd=tmp_path / "ws", env=env_vars, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Kill at a random moment after this run committed an episode of its own: waiting for the file,
        # not for a fixed time, keeps the test independent of how loaded the machine is.
        before = len(list((target / "episodes").glob("*.h5")))
        deadline = time.monotonic() + COMMIT_WAIT_S
        while len(list((target / "episodes").glob("*.h5"))) <= before and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.05)
        time.sleep(float(rng.uniform(0.0, 1.5)))
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = sorted((target / "episodes").glob("*.h5"))
        names = {p.name for p in finished}
        assert set(seen) <= names, "a finished episode disappeared"
        for path in finished:
            with Episode(path) as ep:  # opens, has every array, consistent lengths
                assert not list(ep.problems()), path
                seen.setdefault(path.name, ep["states"].tobytes())
                assert ep["states"].tobytes() == seen[path.name], "a finished episode changed"
    assert len(seen) >= KILLS, f"only {len(seen)} episodes finished across {KILLS} runs"
    report = validate(target)
    assert all(p.severity != "error" for p in report.problems), report.problems
    repair(target)
    report = validate(target)
    assert report.valid, report.problems
    ds = Dataset.open(target)
    records = ds.episodes()
    assert sorted(Path(r.file).name for r in records) == sorted(seen)
    # Every committed episode equals a fresh run of its seed: the crash cost nothing but the episode
    # in progress, and appending after a crash continued the seed sequence without repeats.
    seeds = [r.seed for r in records]
    assert len(set(seeds)) == len(seeds)
    backend = MujocoBackend(load_env(TASK))
    for record in records[:: max(1, len(records) // 6)]:
        with ds.load(record.index) as ep:
            assert np.array_equal(ep["states"], _reference_states(record.seed, backend, tmp_path)), record.index
