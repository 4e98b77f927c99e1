"""The action vector (x2/envspec/action.py): its names and slots, the home action, what `step` accepts and how the
gripper command maps to the jaw; the robot's joints as `robot_state` reports them and their ranges."""

from __future__ import annotations

import numpy as np
import pytest

from x2.base.errors import X2Error
from x2.envspec.action import GRIPPER_SUFFIX
from x2.envspec.env import EnvSpec
from x2.sim import Backend


def test_action_layout_matches_the_robot(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    layout = backend.action_layout
    assert layout == env.robot.action
    home = backend.home_action()
    assert home.shape == (layout.dim,) == (len(layout.names),)
    assert len(set(layout.names)) == layout.dim
    assert [a.name for a in layout.arms] == [a.name for a in env.robot.arms]
    covered: list[int] = []
    for slots, arm in zip(layout.arms, env.robot.arms, strict=True):
        assert layout.names[slots.joints] == tuple(arm.joints)
        assert layout.names[slots.gripper] == arm.name + GRIPPER_SUFFIX
        np.testing.assert_array_equal(home[slots.joints], arm.home)  # home: every arm at home ...
        assert home[slots.gripper] == 1.0  # ... with its gripper open
        covered += [*range(slots.joints.start, slots.joints.stop), slots.gripper]
    np.testing.assert_array_equal(layout.gripper_slots, [a.gripper for a in layout.arms])
    assert sorted(covered) == list(range(layout.dim))  # (pick_place's robot has no base)


def test_robot_joints_are_each_arm_then_its_fingers(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    names = backend.robot_joint_names
    assert names == tuple(j for a in env.robot.arms for j in (*a.joints, *a.gripper_joints))
    state = backend.robot_state()
    assert state.qpos.shape == state.qvel.shape == (len(names),)
    assert state.ee_pose.shape == (len(env.robot.arms), 7)
    np.testing.assert_allclose(np.linalg.norm(state.ee_pose[:, 3:], axis=1), 1.0, atol=1e-9)
    np.testing.assert_array_equal(state.qpos, backend.joint_values(names))
    ranges = backend.joint_range(names)
    assert ranges.shape == (len(names), 2) and np.all(ranges[:, 0] <= ranges[:, 1])
    assert np.all((ranges[:, 0] <= state.qpos) & (state.qpos <= ranges[:, 1]))
    assert backend.joint_range(()).shape == (0, 2)
    state.qpos[:] = 99.0  # observations are copies, not views into the simulator
    assert backend.robot_state().qpos[0] != 99.0


def test_home_action_holds_the_arms_at_home(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    for _ in range(20):
        backend.step(backend.home_action())
    for arm in env.robot.arms:
        assert backend.arm_joint_error(arm.name) < 1e-3
    assert backend.time == pytest.approx(20 / env.fps)  # one step is one control tick


def test_gripper_command_zero_closes_one_opens(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    layout = backend.action_layout

    def gap(arm: str) -> float:  # between the finger bodies, read from the MuJoCo view the backend keeps in sync
        a, b = (backend.data.xpos[backend.model.body(f).id] for f in backend.finger_bodies(arm))
        return float(np.linalg.norm(a - b))

    open_gaps = {a.name: gap(a.name) for a in layout.arms}
    action = backend.home_action()
    action[layout.arms[0].gripper] = 0.0  # close the first arm's gripper only
    for _ in range(30):
        backend.step(action)
    first, *others = layout.arms
    assert gap(first.name) < open_gaps[first.name] - 0.01
    for arm in others:
        assert gap(arm.name) == pytest.approx(open_gaps[arm.name], abs=1e-3)


@pytest.mark.parametrize("change", ["short", "long", "nan"])
def test_step_refuses_a_malformed_action_and_steps_nothing(backend: Backend, change: str) -> None:
    backend.reset(0)
    before = backend.get_state().tobytes()
    action = backend.home_action()
    bad = {"short": action[:-1], "long": np.append(action, 0.0), "nan": np.where(np.arange(len(action)) == 0,
                                                                                  np.nan, action)}[change]
    with pytest.raises(X2Error):
        backend.step(bad)
    assert backend.get_state().tobytes() == before
