"""The loop on fruit_in_microwave with state edits that satisfy the node predicates in a legal order,
in an illegal order, and with a failure; checks events, labels and success in the stored episode,
and that `x2 label` recomputes exactly the stored labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import x2
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.recorded.relabel import relabel
from x2.rollout import JointWaypointTeacher, Rollout, RolloutOptions, Waypoint, open_dataset, record_episode
from x2.sim.mujoco.backend import MujocoBackend

NODES = ["open_door", "pick_fruit", "place_fruit", "close_door", "retract"]
DONE = len(NODES)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    """fruit_in_microwave with a pick that is a lift alone: the state edits below move the fruit without a hand, and
    the built-in pick also needs the gripper holding it (tests/test_tasks_suite.py)."""
    spec = (Path(x2.__file__).parent / "tasks" / "fruit_in_microwave.yaml").read_text()
    held = '      gripper_holding: {arm: right, obj: "@fruit"}\n'
    assert held in spec
    path = tmp_path_factory.mktemp("spec") / "fruit_in_microwave.yaml"
    path.write_text(spec.replace(held, ""))
    return load_env(str(path))


def _hold_home(backend: MujocoBackend, seconds: float) -> JointWaypointTeacher:
    return JointWaypointTeacher([Waypoint(tuple(backend.home_action()), seconds)], backend.env.fps, hold_s=0.0)


def _script(plan: dict[str, list[tuple[int, int]]]):
    """A tick hook that holds the door angle / fruit placement over tick ranges [a, b)."""

    def hook(t: int, b: MujocoBackend) -> None:
        for what, ranges in plan.items():
            for a, z in ranges:
                if a <= t < z:
                    _apply(b, what)

    return hook


def _apply(b: MujocoBackend, what: str) -> None:
    if what == "door_open":
        b.set_joint_values({"microwave/door_hinge": 1.5})
    elif what == "door_closed":
        b.set_joint_values({"microwave/door_hinge": 0.0})
    elif what == "fruit_lifted":
        p = b.layout["fruit"]
        b.set_object_pose("fruit", np.array([p.x, p.y, p.z + 0.15]))
    elif what == "fruit_in_cavity":
        centre, _, half = b.site_box("microwave/cavity")
        b.set_object_pose("fruit", centre - np.array([0.0, 0.0, half[2] * 0.6]))
    elif what == "fruit_off_table":
        b.set_object_pose("fruit", np.array([0.6, -0.9, 0.3]))


def _run(env, tmp_path: Path, plan, seconds: float = 3.0):
    backend = MujocoBackend(env)
    ds = open_dataset(tmp_path / "ds", env, backend)
    rollout = Rollout(backend)
    result, record = record_episode(ds, rollout, _hold_home(backend, seconds), seed=11, source="scripted",
                                    options=RolloutOptions(hooks=[_script(plan)]))
    assert record is not None
    return result, record, Dataset.open(tmp_path / "ds")


def _segments(labels: np.ndarray) -> list[tuple[int, int, int]]:
    out, start = [], 0
    for t in range(1, len(labels) + 1):
        if t == len(labels) or labels[t] != labels[start]:
            out.append((int(labels[start]), start, t - 1))
            start = t
    return out


def test_legal_order(env, tmp_path: Path) -> None:
    plan = {"door_open": [(5, 30)], "fruit_lifted": [(10, 20)], "fruit_in_cavity": [(20, 40)],
            "door_closed": [(30, 40)]}
    result, record, ds = _run(env, tmp_path, plan)
    # close_door completes at 30 and retract (arms held at home) cascades in the same frame.
    assert result.events == [("open_door", 5), ("pick_fruit", 10), ("place_fruit", 20), ("close_door", 30),
                             ("retract", 30)]
    assert result.success and result.end_reason == "success" and result.ticks == 31
    with ds.load(record.index) as ep:
        assert bool(ep.attrs["success"])
        sub = ep["labels/subtask_index"]
        assert _segments(sub) == [(0, 0, 5), (1, 6, 10), (2, 11, 20), (3, 21, 30)]  # retract's segment is empty
        assert list(ep["dag/completion_frame"]) == [5, 10, 20, 30, 30]
        progress = ep["labels/progress"]
        assert progress[4] == 0 and progress[5] == pytest.approx(1 / 6) and progress[-1] == pytest.approx(1.0)
        active = ep["labels/active_mask"]
        assert active[0].tolist() == [True, True, False, False, False]
        assert active[12].tolist() == [False, False, True, False, False]
        assert ep["states"].shape[0] == 31 and ep["action"].shape == (31, 14)
        report = relabel(ep)
    assert report.identical, report.differences
    assert record.success and [s[0] for s in record.segments][:4] == NODES[:4]


def test_illegal_order_waits_for_gates(env, tmp_path: Path) -> None:
    # The fruit is put in the microwave before the door is open: place_fruit's predicate holds but its
    # gate is closed; close_door and retract hold from reset on; none may complete early.
    plan = {"fruit_in_cavity": [(5, 60)], "door_open": [(15, 25)], "door_closed": [(25, 60)]}
    result, record, ds = _run(env, tmp_path, plan)
    assert result.events == [("pick_fruit", 5), ("open_door", 15), ("place_fruit", 15), ("close_door", 25),
                             ("retract", 25)]
    assert result.success
    with ds.load(record.index) as ep:
        assert _segments(ep["labels/subtask_index"]) == [(1, 0, 5), (0, 6, 15), (3, 16, 25)]
        assert relabel(ep).identical


def test_failure_is_recorded_and_stops(env, tmp_path: Path) -> None:
    plan = {"door_open": [(0, 60)], "fruit_off_table": [(8, 60)]}
    result, record, ds = _run(env, tmp_path, plan)
    assert result.failure is not None and result.failure[:2] == ("pick_fruit", 8)
    assert "object_fallen" in result.failure[2]
    assert not result.success and result.end_reason == "failure" and result.ticks == 9
    assert result.events == [("open_door", 0)]
    with ds.load(record.index) as ep:
        assert not bool(ep.attrs["success"])
        assert ep.failure == ("pick_fruit", 8, result.failure[2])
        assert (ep["labels/subtask_index"][1:] == -1).all()  # after open_door: unfinished
        assert relabel(ep).identical


def test_state_stream_is_deterministic(env, tmp_path: Path) -> None:
    plan = {"door_open": [(5, 12)]}
    backend = MujocoBackend(env)
    states = []
    for run in range(2):
        ds = open_dataset(tmp_path / f"d{run}", env, backend)
        _, record = record_episode(ds, Rollout(backend), _hold_home(backend, 0.6), seed=5, source="scripted",
                                   options=RolloutOptions(hooks=[_script(plan)]))
        with ds.load(record.index) as ep:
            states.append(ep["states"].tobytes())
    assert states[0] == states[1]


def test_reset_switches_variant(env) -> None:
    backend = MujocoBackend(env)
    drawn = {backend.reset(seed, variant="eval_fruit").assets["fruit"] for seed in range(12)}
    assert drawn <= {"peach", "plum"} and backend.env.split == "eval"
    assert backend.reset(0, variant="default").variant == "default" and backend.env.split == "train"
