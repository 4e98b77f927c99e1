"""Twin calibration files (x2/envspec/calibration.py): read, named as ROBOT@NAME, refused, rewritten."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.calibration_files import write_calibration

from x2.base.errors import NotFoundError, SpecError
from x2.envspec import load_env, load_robot
from x2.envspec.calibration import dynamics_section, write_cameras, write_dynamics
from x2.envspec.camera_calibration import CameraCalibration
from x2.envspec.env import JointDynamics, TwinCalibration
from x2.envspec.task import robot_with_calibration
from x2.sim.mujoco.backend import MujocoBackend

LAB = {"robot": "aloha", "dynamics": {"latency_ticks": 2, "arms": {"left": {"gravcomp": 0.9, "joints": {
    "left_waist": {"kp": 1000.0, "kv": 50.0, "damping": 2.0}}}}}}


def test_a_robot_takes_a_calibration_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_calibration(tmp_path, "lab1", LAB)
    robot = load_robot("aloha@lab1").model
    assert robot.name == "aloha@lab1"
    cal = robot.calibration
    assert cal is not None and cal.name == "lab1" and cal.latency_ticks == 2
    assert cal.digest == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert cal.joints == (JointDynamics("left_waist", kp=1000.0, kv=50.0, damping=2.0),)
    assert cal.gravcomp == (("left", 0.9),)
    assert load_robot("aloha", calibration="lab1").model == robot  # --calibration NAME is the same
    assert robot_with_calibration(None, "pick_place", "lab1") == "artixon-g@lab1"  # (the task's robot)
    assert load_robot("aloha").model.calibration is None


def test_a_calibration_of_another_robot_is_refused_in_one_line(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_calibration(tmp_path, "lab1", LAB)
    with pytest.raises(SpecError) as err:
        load_robot("franka-panda@lab1")
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("specs/calibrations/lab1.yaml:2: robot: found 'aloha'")
    write_calibration(tmp_path, "typo", {**LAB, "dynamics": {"arms": {"left": {"joints": {"left_waist2": {}}}}}})
    with pytest.raises(SpecError, match="left_waist2.*allowed: a joint of arm left"):
        load_robot("aloha@typo")
    with pytest.raises(NotFoundError, match="unknown calibration 'nothing'"):
        load_robot("aloha@nothing")


def test_writing_dynamics_keeps_the_cameras_section(tmp_path: Path) -> None:
    path = write_calibration(tmp_path, "lab1", {"robot": "aloha", "cameras": {"head": {"fx": 615.5, "note": "x"}}})
    cal = TwinCalibration("lab1", "", 3, (JointDynamics("left_elbow", 900.0, 45.0, 1.5, 0.03, 0.2),),
                          (("left", 1.0),))
    write_dynamics(path, "aloha", dynamics_section(cal, None, "a test"))
    data = yaml.safe_load(path.read_text())
    assert data["cameras"] == {"head": {"fx": 615.5, "note": "x"}}
    assert data["dynamics"]["latency_ticks"] == 3
    assert data["dynamics"]["arms"]["left"]["joints"]["left_elbow"] == {
        "kp": 900.0, "kv": 45.0, "damping": 1.5, "armature": 0.03, "frictionloss": 0.2}
    right = TwinCalibration("lab1", "", 3, (JointDynamics("right_elbow", 700.0),), ())
    write_dynamics(path, "aloha", dynamics_section(right, None, "the right arm alone"))
    arms = yaml.safe_load(path.read_text())["dynamics"]["arms"]
    assert set(arms) == {"left", "right"} and arms["right"]["joints"]["right_elbow"] == {"kp": 700.0}
    with pytest.raises(SpecError, match="another robot.s calibration is another file"):
        write_dynamics(path, "franka-panda", dynamics_section(cal, None, "a test"))


def test_a_calibrations_cameras_reach_the_world_it_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both commands' sections in one file: `x2 calibrate camera`'s writer after the dynamics.
    monkeypatch.chdir(tmp_path)
    path = write_calibration(tmp_path, "lab1", LAB)
    head = CameraCalibration("head", 640, 480, 615.3, 614.9, 321.4, 238.7)
    write_cameras(path, "aloha", {"head": head}, "a test")
    robot = load_robot("aloha@lab1").model
    assert robot.calibration is not None and robot.calibration.cameras == (head,)
    backend = MujocoBackend(load_env("pick_place", robot="aloha@lab1"))
    model = backend.model
    cam = model.camera("head")
    assert list(model.cam_resolution[cam.id]) == [640, 480]
    assert np.allclose(backend.camera_info("head", 640, 480).intrinsics, head.matrix(), atol=1e-6)
    assert "615.3 614.9" in backend.model_xml()  # the recorded world carries the lens
    write_cameras(path, "aloha", {"nose": replace(head, name="nose")}, "a test")
    with pytest.raises(SpecError, match="cameras.nose: found 'nose'; allowed: a camera of aloha"):
        load_robot("aloha@lab1")


def test_a_calibration_file_that_cannot_be_read_is_refused_not_overwritten(tmp_path: Path) -> None:
    """Both commands rewrite the file through one path: a file that is not YAML, or not a mapping, is one line
    naming it, and stays as it was."""
    cal = TwinCalibration("lab1", "", 1, (), ())
    for text, found in (("name: [unclosed\n", "ScannerError|ParserError"), ("- a list\n", "list")):
        path = tmp_path / "lab1.yaml"
        path.write_text(text)
        with pytest.raises(SpecError, match=rf"lab1\.yaml: <file>: found ({found})"):
            write_dynamics(path, "aloha", dynamics_section(cal, None, "a test"))
        assert path.read_text() == text
