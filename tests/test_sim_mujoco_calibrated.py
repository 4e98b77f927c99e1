"""A twin calibration applied to the world (x2/sim/mujoco/calibrated.py): its values in the compiled model, its
latency in the backend, an unstable one refused, and the episodes it makes (recorded, replayed exactly, kept apart
from another calibration's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.calibration_files import record_swings, write_calibration

from x2 import format as fmt
from x2.base.errors import DatasetError, SpecError
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.recorded.replay import replay_actions
from x2.sim import make_backend

LAB = {"robot": "aloha", "dynamics": {"latency_ticks": 2, "arms": {"left": {"gravcomp": 0.5, "joints": {
    "left_waist": {"kp": 1040.0, "kv": 52.0, "damping": 2.0, "armature": 0.03, "frictionloss": 0.3}}}}}}


def test_the_compiled_world_has_the_calibrations_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_calibration(tmp_path, "lab1", LAB)
    backend = make_backend(load_env(None, robot="aloha@lab1"))
    m = backend.model
    servo, joint = m.actuator("left_waist"), m.joint("left_waist")
    assert (servo.gainprm[0], servo.biasprm[1], servo.biasprm[2]) == (1040.0, -1040.0, -52.0)
    assert (joint.damping[0], joint.armature[0], joint.frictionloss[0]) == (2.0, 0.03, 0.3)
    assert m.body_gravcomp[m.body("left_vx300s_left/upper_arm_link").id] == 0.5
    assert m.body_gravcomp[m.body("right_vx300s_left/upper_arm_link").id] == 1.0
    assert m.actuator("right_waist").gainprm[0] == 800.0  # (what the file leaves out stays the robot's)
    assert 'name="x2_latency_ticks"' in backend.model_xml()
    assert "x2_latency_ticks" not in make_backend(load_env(None, robot="aloha")).model_xml()


def test_commands_reach_the_servos_latency_ticks_late(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_calibration(tmp_path, "lab1", LAB)
    backend = make_backend(load_env(None, robot="aloha@lab1"))
    backend.reset(0)
    home = backend.home_action()
    waist = backend.model.actuator("left_waist").id
    applied = []
    for t in range(4):
        action = home.copy()
        action[0] = 0.1 * (t + 1)
        backend.step(action)
        applied.append(round(float(backend.data.ctrl[waist]), 6))
    assert applied == [home[0], home[0], 0.1, 0.2]


def test_an_unstable_calibration_is_refused_naming_the_parameter(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_calibration(tmp_path, "wild", {"robot": "aloha", "dynamics": {"arms": {"left": {"joints": {
        "left_waist": {"kp": 900.0}, "left_elbow": {"kp": 1.0e+9}}}}}})
    with pytest.raises(SpecError) as err:
        make_backend(load_env(None, robot="aloha@wild"))
    assert "\n" not in str(err.value)
    assert "dynamics.arms.left.joints.left_elbow.kp: found 1e+09, which makes the twin unstable" in str(err.value)


def test_episodes_record_their_calibration_and_replay_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_calibration(tmp_path, "lab1", LAB)
    record_swings(tmp_path / "data" / "d", "aloha@lab1", episodes=1, ticks=12)
    ds = Dataset.open(tmp_path / "data" / "d")
    with ds.load(0) as ep:
        recorded = json.loads(ep.attrs[fmt.CALIBRATION_ATTR])
        assert replay_actions(ep).max_deviation == 0.0
    assert recorded["name"] == "lab1" and recorded["digest"].startswith("sha256:")
    assert ds.manifest.world["robot"]["calibration"]["digest"] == recorded["digest"]
    ds.close()
    # the same name, other values: another twin, refused in one line, nothing written
    write_calibration(tmp_path, "lab1", {**LAB, "dynamics": {**LAB["dynamics"], "latency_ticks": 1}})  # type: ignore[dict-item]
    with pytest.raises(DatasetError, match=r"world\.robot\.calibration\.digest: found"):
        record_swings(tmp_path / "data" / "d", "aloha@lab1", episodes=1, ticks=12)
    assert len(Dataset.open(tmp_path / "data" / "d").episodes()) == 1
    assert path.exists()
    # an uncalibrated episode has no such attribute
    record_swings(tmp_path / "data" / "plain", "aloha", episodes=1, ticks=3)
    with Dataset.open(tmp_path / "data" / "plain").load(0) as ep:
        assert fmt.CALIBRATION_ATTR not in ep.attrs
