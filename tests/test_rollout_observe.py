"""RolloutOptions(observe=False): the loop reads no robot state or object poses, the teacher sees none, and a
MemoryRecorder's arrays (its robot and object streams taken from the recorded states afterwards) are the bytes an
observing loop records."""

from __future__ import annotations

import numpy as np
import pytest

from x2.envspec import load_env
from x2.format import Tick
from x2.rollout import JointWaypointTeacher, Observation, Rollout, RolloutOptions, Waypoint
from x2.rollout.memory import MemoryRecorder
from x2.sim.mujoco.backend import MujocoBackend


class _Watching(JointWaypointTeacher):
    """Waypoints, noting what each observation carried."""

    def __init__(self, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.saw: list[bool] = []

    def act(self, obs: Observation) -> np.ndarray | None:
        self.saw.append(obs.robot is not None and obs.object_poses is not None)
        return super().act(obs)


def _run(backend: MujocoBackend, observe: bool) -> tuple[dict[str, np.ndarray], list[bool]]:
    home = np.array(backend.home_action())
    reach = home.copy()
    reach[:3] += 0.4  # the first arm's shoulder and elbow swing, so poses change every tick
    teacher = _Watching([Waypoint(tuple(reach), 0.5), Waypoint(tuple(home), 0.3)], backend.env.fps, hold_s=0.1)
    recorder = MemoryRecorder()
    Rollout(backend).run(teacher, 5, recorder, RolloutOptions(observe=observe, stop_on_success=False))
    return recorder.arrays(backend.observations), teacher.saw


def test_a_loop_that_does_not_observe_records_the_same_bytes() -> None:
    backend = MujocoBackend(load_env("pick_place"))
    watched, saw_all = _run(backend, True)
    derived, saw_none = _run(backend, False)
    assert all(saw_all) and not any(saw_none) and len(saw_none) > 20
    assert list(derived) == list(watched)  # (the columns in the loop's order: the writer creates them so)
    for key in watched:
        if key != "lateness_ms":
            assert derived[key].shape == watched[key].shape and derived[key].tobytes() == watched[key].tobytes(), key
    assert np.ptp(watched["ee_pose"][:, 0, :3], axis=0).max() > 0.05  # (the hand moved)


def test_states_alone_need_the_backend_and_a_memory_recorder() -> None:
    backend = MujocoBackend(load_env("pick_place"))
    recorder = MemoryRecorder()
    teacher = JointWaypointTeacher([Waypoint(tuple(backend.home_action()), 0.1)], backend.env.fps, hold_s=0.0)
    Rollout(backend).run(teacher, 1, recorder, RolloutOptions(observe=False, stop_on_success=False))
    with pytest.raises(ValueError, match="observations"):
        recorder.arrays()

    class Listing:
        def __init__(self) -> None:
            self.ticks: list[object] = []

        def append(self, tick: object) -> None:
            self.ticks.append(tick)

    with pytest.raises(ValueError, match="MemoryRecorder"):
        Rollout(backend).run(teacher, 1, Listing(), RolloutOptions(observe=False))  # type: ignore[arg-type]


def test_one_recording_takes_one_kind_of_tick() -> None:
    backend = MujocoBackend(load_env("pick_place"))
    teacher = JointWaypointTeacher([Waypoint(tuple(backend.home_action()), 0.1)], backend.env.fps, hold_s=0.0)
    recorder = MemoryRecorder()
    Rollout(backend).run(teacher, 1, recorder, RolloutOptions(observe=False, stop_on_success=False))
    assert len(recorder) > 1 and not recorder.ticks["qpos"]  # (states alone: no empty streams kept per tick)
    Rollout(backend).run(teacher, 1, recorder, RolloutOptions(observe=True, stop_on_success=False))
    with pytest.raises(ValueError, match="one recording takes one kind"):
        recorder.arrays(backend.observations)


def test_a_tick_of_its_state_alone_is_recorded_as_append_state_records_it() -> None:
    backend = MujocoBackend(load_env("pick_place"))
    backend.reset(3)
    by_tick, by_state = MemoryRecorder(), MemoryRecorder()
    for recorder in (by_tick, by_state):
        action, state = np.asarray(backend.home_action(), np.float32), backend.get_state()
        if recorder is by_tick:
            recorder.append(Tick(timestamp=backend.time, action=action, state=state, lateness_ms=0.0))
        else:
            recorder.append_state(backend.time, action, state, 0.0)
    a, b = by_tick.arrays(backend.observations), by_state.arrays(backend.observations)
    assert list(a) == list(b) and all(a[k].tobytes() == b[k].tobytes() for k in a)
    assert not by_tick.ticks["qpos"] and a["qpos"].shape[0] == 1
