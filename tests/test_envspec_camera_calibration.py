"""The files a lab's calibration tools write, read (ROS camera_info, OpenCV FileStorage, easy_handeye, a 4x4
matrix), and the `cameras` section of a calibration file (x2/envspec/camera_calibration.py)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from x2.base.errors import SpecError
from x2.envspec.calibration import write_cameras
from x2.envspec.camera_calibration import (
    CameraCalibration,
    CameraPose,
    parse_camera_calibrations,
    quat_to_rotation,
    rotation_to_quat,
)
from x2.envspec.camera_files import read_hand_eye, read_intrinsics

CAMERA_INFO = """image_width: 640
image_height: 480
camera_name: head
camera_matrix: {rows: 3, cols: 3, data: [615.1, 0.0, 321.4, 0.0, 614.7, 238.7, 0.0, 0.0, 1.0]}
distortion_model: plumb_bob
distortion_coefficients: {rows: 1, cols: 5, data: [0.08, -0.2, 0.001, -0.0005, 0.05]}
rectification_matrix: {rows: 3, cols: 3, data: [1, 0, 0, 0, 1, 0, 0, 0, 1]}
projection_matrix: {rows: 3, cols: 4, data: [615.1, 0, 321.4, 0, 0, 614.7, 238.7, 0, 0, 0, 1, 0]}
"""


def test_camera_info_and_opencv_files_say_the_same(tmp_path: Path) -> None:
    (tmp_path / "ros.yaml").write_text(CAMERA_INFO)
    ros = read_intrinsics(tmp_path / "ros.yaml")
    assert (ros.width, ros.height, ros.fx, ros.fy, ros.cx, ros.cy) == (640, 480, 615.1, 614.7, 321.4, 238.7)
    assert ros.distortion == (0.08, -0.2, 0.001, -0.0005, 0.05) and ros.model == "plumb_bob"
    fs = cv2.FileStorage(str(tmp_path / "cv.yaml"), cv2.FILE_STORAGE_WRITE)
    fs.write("image_width", 640)
    fs.write("image_height", 480)
    fs.write("camera_matrix", np.array([[615.1, 0, 321.4], [0, 614.7, 238.7], [0, 0, 1]]))
    fs.write("distortion_coefficients", np.array([[0.08, -0.2, 0.001, -0.0005, 0.05]]))
    fs.release()
    assert read_intrinsics(tmp_path / "cv.yaml") == ros


def test_a_camera_file_without_fx_names_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "nofx.yaml"
    bad.write_text("width: 640\nheight: 480\nfy: 600\ncx: 320\ncy: 240\n")
    with pytest.raises(SpecError, match=r"nofx\.yaml: fx: found nothing; allowed"):
        read_intrinsics(bad)
    short = tmp_path / "short.yaml"
    short.write_text(CAMERA_INFO.replace("data: [615.1, 0.0, 321.4, 0.0, 614.7, 238.7, 0.0, 0.0, 1.0]", "data: []"))
    with pytest.raises(SpecError, match=r"short\.yaml: camera_matrix\.data\[0\] \(fx\): found 0 numbers"):
        read_intrinsics(short)


def test_hand_eye_files(tmp_path: Path) -> None:
    (tmp_path / "he.yaml").write_text("eye_on_hand: true\nrobot_base_frame: base_link\nrobot_effector_frame: ee\n"
                                      "tracking_base_frame: camera_color_optical_frame\n"
                                      "transformation: {x: 0.01, y: -0.02, z: 0.05, qx: 0.0, qy: 0.0, qz: 0.3826834, "
                                      "qw: 0.9238795}\n")
    he = read_hand_eye(tmp_path / "he.yaml")
    assert he.mount == "eye-in-hand" and he.frames == ("ee", "camera_color_optical_frame")
    np.testing.assert_allclose(he.matrix[:3, 3], [0.01, -0.02, 0.05])
    np.testing.assert_allclose(rotation_to_quat(he.matrix[:3, :3]), [0.9238795, 0, 0, 0.3826834], atol=1e-7)
    np.savetxt(tmp_path / "t.txt", he.matrix)
    np.save(tmp_path / "t.npy", he.matrix)
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"matrix": he.matrix.tolist()}))
    for name in ("t.txt", "t.npy", "t.yaml"):
        got = read_hand_eye(tmp_path / name)
        assert got.mount is None
        np.testing.assert_allclose(got.matrix, he.matrix, atol=1e-12)


def test_a_hand_eye_matrix_that_is_no_rotation_says_how_far(tmp_path: Path) -> None:
    m = np.eye(4)
    m[:3, :3] = [[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    np.savetxt(tmp_path / "sheared.txt", m)
    with pytest.raises(SpecError, match=r"sheared\.txt: <matrix> rotation: found a 3x3 block with max "
                                        r"\|R\^T R - I\| = 0\.1 and det 1; allowed: a rotation"):
        read_hand_eye(tmp_path / "sheared.txt")


def test_quaternions_round_trip() -> None:
    rng = np.random.default_rng(3)
    for q in rng.normal(size=(20, 4)):
        q = q / np.linalg.norm(q) * (1 if q[0] >= 0 else -1)
        np.testing.assert_allclose(rotation_to_quat(quat_to_rotation(q)), q, atol=1e-12)


def test_the_cameras_section_is_rewritten_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "lab1.yaml"
    dynamics = {"arms": {"left": {"joints": {"left_waist": {"kp": 812.5, "damping": 0.15}}}}, "latency_ticks": 2}
    path.write_text(yaml.safe_dump({"name": "lab1", "robot": "aloha", "dynamics": dynamics,
                                    "cameras": {"left_wrist": {"width": 64, "height": 48, "fx": 50.0, "fy": 50.0,
                                                               "cx": 31.5, "cy": 23.5}},
                                    "made_by": {"dynamics": "x2 calibrate dynamics"}}, sort_keys=False))
    pose = CameraPose("eye-to-hand", "frame", (0.3, 0.0, 0.7), (0.0, 0.6, -0.8, 0.0))
    head = CameraCalibration("head", 640, 480, 615.0, 615.0, 321.4, 238.7, (0.1, -0.2, 0.0, 0.0, 0.0), pose=pose)
    write_cameras(path, "aloha", {"head": head}, "x2 calibrate camera --camera head d435.yaml")
    doc = yaml.safe_load(path.read_text())
    assert doc["dynamics"] == dynamics and list(doc) == ["name", "robot", "dynamics", "cameras", "made_by"]
    assert doc["made_by"] == {"dynamics": "x2 calibrate dynamics", "cameras": "x2 calibrate camera --camera head "
                                                                               "d435.yaml"}
    cams = parse_camera_calibrations(doc["cameras"], str(path))
    assert cams["head"] == head and cams["left_wrist"].fx == 50.0
    with pytest.raises(SpecError, match=r"robot: found 'aloha'; allowed: 'arx-r5'"):
        write_cameras(path, "arx-r5", {"head": head}, "x")
    # a file the schema refuses elsewhere (its dynamics) is refused whole, in one line, and left as it was
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"name": "broken", "robot": "aloha", "dynamics": {"latency_ticks": -1}}))
    before = broken.read_bytes()
    with pytest.raises(SpecError, match=r"broken\.yaml.*dynamics\.latency_ticks: found -1"):
        write_cameras(broken, "aloha", {"head": head}, "x")
    assert broken.read_bytes() == before


def test_a_bad_cameras_section_is_one_line() -> None:
    with pytest.raises(SpecError, match=r"lab\.yaml: cameras\.head\.fx: found -1"):
        parse_camera_calibrations({"head": {"width": 64, "height": 48, "fx": -1, "fy": 50, "cx": 31.5, "cy": 23.5}},
                                  "lab.yaml")
    with pytest.raises(SpecError, match=r"cameras\.head\.cx: found 70; allowed: a principal point inside"):
        parse_camera_calibrations({"head": {"width": 64, "height": 48, "fx": 50, "fy": 50, "cx": 70, "cy": 23.5}},
                                  "lab.yaml")
