"""State: `get_state`/`set_state` restore the whole world (robot, objects, time) exactly, and stepping is a pure
function of the state and the action: the same seed and the same actions give the same states, bit for bit.
`x2 replay --check`, `x2 datasets validate --physics`, synthesis's backtracking and augmentation rely on both."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from x2.base.errors import X2Error
from x2.sim import Backend

SEED = 3


def _drop_block(backend: Backend) -> None:
    """The block 8 cm above where it rests, so the ticks that follow include a fall and a landing."""
    p = backend.object_pos("block").copy()
    backend.set_object_pose("block", p + np.array([0.0, 0.0, 0.08]))


def _run(backend: Backend, actions: np.ndarray) -> list[bytes]:
    out = []
    for a in actions:
        backend.step(a)
        out.append(backend.get_state().tobytes())
    return out


def test_state_round_trip_restores_robot_objects_and_time(backend: Backend, busy: Callable) -> None:
    backend.reset(SEED)
    _drop_block(backend)
    actions = busy(backend, 25)
    _run(backend, actions[:5])
    saved = backend.get_state().copy()
    assert saved.shape == (backend.state_size,) and saved.dtype == np.float64
    robot, objects, t = backend.robot_state(), backend.object_poses(), backend.time
    assert t > 0

    first = _run(backend, actions[5:])
    assert len(set(first)) == len(first)  # the world moved every tick
    name = backend.robot_joint_names[0]
    backend.set_joint_values({name: backend.joint_value(name) + 0.3})  # disturb what a state must restore
    backend.set_object_pose("plate", backend.object_pos("plate") + np.array([0.05, 0.0, 0.0]))

    backend.set_state(saved)
    assert backend.get_state().tobytes() == saved.tobytes()
    assert backend.time == t
    now = backend.robot_state()
    assert np.array_equal(now.qpos, robot.qpos) and np.array_equal(now.qvel, robot.qvel)
    assert np.array_equal(now.ee_pose, robot.ee_pose)  # what is derived from the state is refreshed too
    assert np.array_equal(backend.object_poses(), objects)
    assert _run(backend, actions[5:]) == first  # and stepping on from it retraces the same ticks


def test_set_state_refuses_a_state_of_another_size(backend: Backend) -> None:
    backend.reset(SEED)
    before = backend.get_state().tobytes()
    for wrong in (np.zeros(backend.state_size - 1), np.zeros((1, backend.state_size))):
        with pytest.raises(X2Error, match="state"):
            backend.set_state(wrong)
    assert backend.get_state().tobytes() == before


def test_same_seed_same_actions_same_states(backend: Backend, new_backend: Callable[[], Backend],
                                            busy: Callable) -> None:
    """Twice in one backend (the history of earlier episodes must not leak into a reset) and in a fresh one."""
    runs, infos = [], []
    for b in (backend, backend, new_backend()):
        b.reset(SEED + 1)  # another world first: a reset must rebuild everything it draws
        infos.append(b.reset(SEED))
        start = b.get_state().tobytes()
        _drop_block(b)
        runs.append((start, _run(b, busy(b, 30))))
    assert runs[0] == runs[1] == runs[2]
    assert infos[0] == infos[1] == infos[2]


def test_reset_starts_at_rest_at_time_zero(backend: Backend, busy: Callable) -> None:
    backend.reset(SEED)
    _run(backend, busy(backend, 5))
    info = backend.reset(SEED)
    assert backend.time == 0.0 and info.seed == SEED
    np.testing.assert_array_equal(backend.robot_state().qvel, 0.0)
    assert backend.layout == info.layout
    assert set(info.assets) == set(backend.object_names)
    poses = backend.object_poses()
    for k, name in enumerate(backend.object_names):  # objects stand where the drawn layout put them
        p = info.layout[name]
        np.testing.assert_allclose(poses[k, :2], [p.x, p.y], atol=1e-6)


def test_observations_of_stored_states_are_what_the_live_reads_gave(backend: Backend, busy: Callable) -> None:
    """`observations` of a run's stored states: the qpos, qvel, ee_pose and object poses read live at each of those
    ticks, bit for bit (synthesis stores those, not the live reads), the world left as it was."""
    backend.reset(SEED)
    _drop_block(backend)
    states, live = [], []
    for a in busy(backend, 12):
        states.append(backend.get_state().copy())
        live.append((backend.robot_state(), backend.object_poses()))
        backend.step(a)
    now = backend.get_state().tobytes()
    got = backend.observations(np.array(states))
    assert backend.get_state().tobytes() == now
    for key, pick in (("qpos", lambda r, o: r.qpos), ("qvel", lambda r, o: r.qvel), ("ee_pose", lambda r, o: r.ee_pose),
                      ("object_poses", lambda r, o: o)):
        expected = np.array([pick(r, o) for r, o in live])
        assert got[key].dtype == np.float64 and got[key].tobytes() == expected.tobytes(), key
        assert got[key].shape == expected.shape
