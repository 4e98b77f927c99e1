"""Shared test scenes."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from x2.base.scheduling import leave_realtime
from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK

APPROACH_X = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # tool +z along world +x


def cavity_reach_problem() -> tuple[MujocoBackend, CollisionWorld, np.ndarray, np.ndarray]:
    """The left arm at home and a goal 4 cm inside the open microwave: a plan must go around the door."""
    b = MujocoBackend(load_env("fruit_in_microwave"))
    b.reset(1)
    b.set_joint_values({"microwave/door_hinge": 1.9})
    world = CollisionWorld(b)
    cavity, _, _ = b.site_box("microwave/cavity")
    goal = ArmIK(world, "left").solve(cavity + np.array([-0.04, 0.0, -0.03]), APPROACH_X,
                                      rng=np.random.default_rng(1))
    return b, world, np.array(b.env.robot.arm("left").home), goal


# ---- no test leaves its worker real-time -----------------------------------------------------------
@pytest.fixture(autouse=True)
def _leaves_scheduling_alone() -> Iterator[None]:
    """A test that leaves this process under SCHED_FIFO (SVT-AV1's video encoding does that to its caller when
    run as root: x2/base/scheduling.py) fails here, and the process is put back: otherwise every later test's
    children run real-time and starve the other worker (it once doubled the suite's time)."""
    yield
    if leave_realtime():
        pytest.fail("this test left its process under a real-time scheduling policy: wrap what encodes video in "
                    "x2.base.scheduling.keeps_scheduling()", pytrace=False)


# ---- one real synthesised episode, made once per test run ------------------------------------------
@pytest.fixture(scope="session")
def synthesised_fruit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of one real `x2 synth --task fruit_in_microwave` episode (seed 0: real subtask segments and
    DAG events, about 870 frames). Shared and read-only: take `copy_dataset(synthesised_fruit, path)`."""
    from helpers.x2_cli import run_x2

    root = tmp_path_factory.mktemp("synthesised") / "fruit"
    done = run_x2(["synth", "--task", "fruit_in_microwave", "-n", "1", "--workers", "1", "--dataset", str(root)],
                  root.parent, timeout=300)
    assert done.returncode == 0, done.stderr
    return root


def copy_dataset(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target
