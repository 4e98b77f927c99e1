"""hook_pull, read from the recorded states: the block starts beyond either arm's reach, the hook's blade drags it
within the right arm's, the hook is let go on the table, and the block ends on the plate."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from x2 import format as fmt
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.envspec.robot import load_robot
from x2.recorded.relabel import relabel
from x2.recorded.replay import deepest_penetration
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun


def test_hook_pull_drags_the_block_within_reach_and_puts_it_on_the_plate(tmp_path: Path) -> None:
    run = SynthRun(SynthConfig(SessionOptions("hook_pull"), n=1, workers=1, seed=0, max_attempts=3),
                   tmp_path / "hook").run()
    assert run.accepted == 1
    ds = Dataset.open(tmp_path / "hook")
    env = load_env("hook_pull")
    robot = load_robot(env.robot.name)
    shoulders = {arm: np.add(env.robot.base_pos, xyz) for arm, xyz in robot.shoulders.items()}
    with ds.load(next(iter(ds.episodes())).index) as ep:
        events = dict(ep.events)
        assert all(events[a] <= events[b] for a, b in ep.dag["edges"])  # the DAG's order
        names = [str(n) for n in ep.dataset_attrs(fmt.OBJECT_POSES)["names"]]
        poses = np.asarray(ep[fmt.OBJECT_POSES])
        block, hook, plate = (poses[:, names.index(o)] for o in ("block", "hook", "plate"))
        # frame 0: the block's resting point is further from either shoulder than the arm reaches stretched out
        assert min(np.linalg.norm(block[0, :3] - s) for s in shoulders.values()) > robot.reach + 0.05
        # it came towards the right shoulder (horizontally) before any hand touched it: by the drag
        pulled = events["pull_block"]
        right = shoulders["right"][:2]
        start, after = (float(np.linalg.norm(block[t, :2] - right)) for t in (0, pulled))
        assert start - after > 0.2 and after <= 0.6, (start, after)
        assert np.allclose(block[:pulled, 2], block[0, 2], atol=0.003)  # slid, never lifted or tipped up
        # the hook lies on the table where it was let go, level (its quaternion a turn about z only)
        assert abs(hook[-1, 2] - env.booth.table_height) < 0.003 and np.hypot(hook[-1, 4], hook[-1, 5]) < 0.02
        # the block rests on the plate's 16 mm top, within its rim
        assert np.hypot(*(block[-1, :2] - plate[-1, :2])) < 0.06
        assert abs(block[-1, 2] - plate[-1, 2] - 0.016) < 0.003
        assert deepest_penetration(ep).depth < 0.005
        assert relabel(ep).identical
