"""A mobile robot: its base in the action and the state, the `navigate` skill, and a task whose object is out
of every arm's reach until the base drives there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from x2 import format as fmt
from x2.base.errors import SpecError
from x2.datasets import Dataset
from x2.devices import DeviceEvent, Sample
from x2.envspec import load_env, load_robot
from x2.envspec.action import ActionLayout
from x2.recorded.relabel import relabel
from x2.recorded.replay import deepest_penetration, replay_actions
from x2.sim import make_backend
from x2.synth.binding import check_bindings
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun
from x2.teleop import EEVelocity, SafetyFilter, VRClutch
from x2.teleop.mapping import BaseDriveConfig

ROBOT = "mobile-aloha"
BASE = ("base_x", "base_y", "base_yaw")


def test_the_base_is_last_in_the_action_and_in_the_state() -> None:
    robot = load_robot(ROBOT).model
    assert robot.action_names[-3:] == BASE
    assert ActionLayout.from_names(robot.action_names) == robot.action  # a stored episode's names read back
    backend = make_backend(load_env(None, robot=ROBOT, scene="green_booth"))
    backend.reset(0)
    assert backend.robot_joint_names[-3:] == BASE
    action = backend.home_action()
    action[-3:] = (-0.1, 0.3, 0.2)
    for _ in range(90):  # 3 s
        backend.step(action)
    np.testing.assert_allclose(backend.robot_state().qpos[-3:], (-0.1, 0.3, 0.2), atol=0.005)
    assert max(backend.arm_joint_error(a.name) for a in backend.env.robot.arms) < 0.02  # the arms rode along


def test_a_robot_without_a_base_refuses_navigate_in_one_line(tmp_path: Path) -> None:
    task = tmp_path / "drive.yaml"
    task.write_text("name: drive\ninstruction: drive\nscene: tabletop_booth\nrobot: aloha\nhorizon_s: 5\n"
                    "nodes:\n  go:\n    success: {within_reach: {obj: block, arm: right}}\n"
                    "    skill: {name: navigate, arm: both, target: block}\nedges: []\n")
    with pytest.raises(SpecError) as err:
        check_bindings(load_env(str(task)))
    assert "task drive needs a mobile base (navigate); robot aloha has none" in str(err.value)
    assert "\n" not in str(err.value)


def test_mobile_aloha_drives_to_a_block_out_of_reach_and_puts_it_on_the_plate(tmp_path: Path) -> None:
    env = load_env("mobile_pick_place")
    backend = make_backend(env)
    backend.reset(11)
    block = backend.object_pos("block")
    # from where the robot stands, the block is beyond either ViperX's 0.75 m reach
    assert min(np.linalg.norm(block - backend.arm_root_pos(a.name)) for a in env.robot.arms) > 0.75
    out = tmp_path / "mobile"
    run = SynthRun(SynthConfig(SessionOptions("mobile_pick_place"), n=1, workers=1, seed=3, max_attempts=3), out).run()
    assert run.accepted == 1
    ds = Dataset.open(out)
    record = next(iter(ds.episodes()))
    with ds.load(record.index) as ep:
        assert replay_actions(ep).max_deviation == 0.0
        assert deepest_penetration(ep).depth < 0.005
        assert [str(n) for n in ep.dataset_attrs(fmt.ACTION)["names"]][-3:] == list(BASE)
        assert [str(n) for n in ep.dataset_attrs(fmt.QPOS)["names"]][-3:] == list(BASE)
        base_y = np.asarray(ep[fmt.QPOS])[:, -2]
        assert base_y[0] == 0.0 and base_y.max() > 0.5  # the base drove more than half a metre along the table
        assert bool(ep.attrs[fmt.SUCCESS_ATTR])


@pytest.mark.parametrize("device", ["keyboard", "vr"])
def test_teleop_drives_the_base_and_the_arms_ride_along(device: str) -> None:
    """Closed loop on the simulator: B then the 'a' key (keyboard), or the left thumbstick pushed left (VR),
    drives the base 0.25 m to the left in a second; the arms keep their joints and go with it; B again and
    the same key moves the right tcp instead."""
    backend = make_backend(load_env(None, robot=ROBOT, scene="green_booth"))
    backend.reset(0)
    fps = backend.env.fps
    mapper: EEVelocity | VRClutch = EEVelocity(fps) if device == "keyboard" else VRClutch(fps)
    safety = SafetyFilter(backend, fps)
    home = backend.home_action()
    mapper.reset(backend, home)
    safety.reset(home)
    tcp0 = backend.robot_state().ee_pose[:, :3].copy()

    def sample(left: float) -> Sample:
        if device == "keyboard":
            twist = np.zeros((2, 6))
            twist[1, 1] = left  # 'a': +y
            return Sample(0, 0.0, {"twist": twist})
        pose = np.tile([0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0], (2, 1))
        return Sample(0, 0.0, {"pose": pose, "valid": np.ones(2), "clutch": np.zeros(2), "gripper": np.ones(2),
                               "stick": np.array([[-left, 0.0], [0.0, 0.0]])})

    action = home
    for k in range(fps):
        events = [DeviceEvent("base", 0.0)] if k == 0 and device == "keyboard" else []
        action = safety(mapper.command(sample(1.0), 0.0, events, backend.robot_state()))
        backend.step(action)
    for _ in range(fps // 2):
        action = safety(mapper.command(sample(0.0), 0.0, [], backend.robot_state()))
        backend.step(action)
    y = float(backend.robot_state().qpos[-2])
    assert y == pytest.approx(BaseDriveConfig().linear_mps, abs=0.02)
    np.testing.assert_allclose(backend.robot_state().ee_pose[:, :3] - tcp0, [[0.0, y, 0.0]] * 2, atol=0.01)
    if device == "keyboard":  # B again: the keys move the right arm, the base stays
        joints = backend.action_layout.arm("right").joints
        for k in range(fps // 2):
            events = [DeviceEvent("base", 0.0)] if k == 0 else []
            action = safety(mapper.command(sample(1.0), 0.0, events, backend.robot_state()))
            backend.step(action)
        assert float(backend.robot_state().qpos[-2]) == pytest.approx(y, abs=0.005)
        assert np.abs(action[joints] - home[joints]).max() > 0.05


def test_mobile_fetch_carries_the_block_from_the_side_table_back_to_the_plate(tmp_path: Path) -> None:
    out = tmp_path / "fetch"
    run = SynthRun(SynthConfig(SessionOptions("mobile_fetch"), n=1, workers=1, seed=2, max_attempts=3), out).run()
    assert run.accepted == 1
    ds = Dataset.open(out)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        events = [node for node, _ in ep.events]
        assert events[:4] == ["drive_there", "pick", "drive_back", "place"]
        base_y = np.asarray(ep[fmt.QPOS])[:, -2]
        turn = int(np.argmax(base_y))
        assert base_y[turn] > 0.8 and base_y[-1] < 0.3  # out to the side table and back, the block in hand
        assert relabel(ep).identical
        assert deepest_penetration(ep).depth < 0.005
