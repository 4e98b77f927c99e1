"""The task suite: every built-in task compiles with the capability dimensions it exercises, `x2 tasks ls`
filters by one, and the precision task's tower really stands (read from the recorded states)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from x2_cli import run_x2

from x2.datasets import Dataset
from x2.labeling import topological_order
from x2.rollout.relabel import relabel
from x2.rollout.replay import deepest_penetration
from x2.spec import load_env, names
from x2.spec.files import DIMENSIONS
from x2.synth.runner import SynthConfig, SynthRun


@pytest.mark.parametrize("task", names("tasks"))
def test_every_task_compiles_with_its_dimensions(task: str) -> None:
    env = load_env(task)
    assert env.task is not None and env.task.dimensions
    assert set(env.task.dimensions) <= set(DIMENSIONS)
    topological_order(env.task.node_ids, env.task.edges)  # a DAG


def test_tasks_ls_filters_by_dimension(tmp_path: Path) -> None:
    out = run_x2(["tasks", "ls", "--dimension", "precision"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "stack_blocks" in out.stdout and "pick_place" not in out.stdout
    bad = run_x2(["tasks", "ls", "--dimension", "speed"], tmp_path)
    assert bad.returncode == 2 and "--dimension: found 'speed'; allowed: generalization" in bad.stderr


def test_stack_blocks_builds_a_tower_whose_labels_reproduce(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    run = SynthRun(SynthConfig("stack_blocks", n=1, workers=1, seed=2, max_attempts=3), out).run()
    assert run.accepted == 1
    ds = Dataset.open(out)
    record = next(iter(ds.episodes()))
    with ds.load(record.index) as ep:
        events = [node for node, _ in ep.events]
        assert events.index("stack_second") < events.index("pick_third") < events.index("stack_third")
        poses = np.asarray(ep["observations/object_poses"])[-1]
        order = [str(n) for n in ep.dataset_attrs("observations/object_poses")["names"]]
        a, b, c = (poses[order.index(o), :3] for o in ("block_a", "block_b", "block_c"))
        # each block one block height (5 cm) above the one below, within a few millimetres sideways
        assert b[2] - a[2] == pytest.approx(0.05, abs=0.003) and c[2] - b[2] == pytest.approx(0.05, abs=0.003)
        assert np.hypot(*(b - a)[:2]) < 0.015 and np.hypot(*(c - b)[:2]) < 0.015
        assert deepest_penetration(ep).depth < 0.005
        assert relabel(ep).identical
