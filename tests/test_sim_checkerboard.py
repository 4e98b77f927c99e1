"""Issue 42's camera check, small: a D435-style calibration (640x480 intrinsics, principal point off centre) given
to a robot's head camera; a checkerboard drawn through it at a few poses at half size; OpenCV's calibrateCamera
recovers fx, fy, cx, cy within 1 px and solvePnP the hand-eye pose within 2 mm and 0.2 deg. (The 15-pose 640x480
run: bench/bench_camera_calibration.py.)"""

from __future__ import annotations

from pathlib import Path

import cv2
import mujoco
import numpy as np
import pytest

from x2.envspec.camera_calibration import rotation_to_quat
from x2.envspec.robot import load_robot
from x2.sim.boards import Board, BoardError, find_board, reprojection
from x2.sim.camera import ImageSize
from x2.sim.mujoco.camera_calibration import apply_camera_calibration
from x2.sim.mujoco.camera_twin import calibrated_camera
from x2.sim.mujoco.checkerboard import add_checkerboard, board_views, poses_facing
from x2.sim.mujoco.robot import robot_mjcf_spec

W, H = 320, 240  # a D435's 640x480 calibration at half size: fx 615 / 2, principal point (321.4, 238.7) / 2-ish
FX, FY, CX, CY = 307.6, 307.4, 160.45, 119.1
TILT = 0.35  # rad the camera looks down


def test_calibrate_camera_recovers_the_files_intrinsics_and_pose(tmp_path: Path) -> None:
    (tmp_path / "cam.yaml").write_text(
        f"image_width: {W}\nimage_height: {H}\ncamera_matrix: {{rows: 3, cols: 3, data: [{FX}, 0, {CX}, 0, {FY}, "
        f"{CY}, 0, 0, 1]}}\ndistortion_model: plumb_bob\ndistortion_coefficients: {{rows: 1, cols: 5, "
        "data: [0, 0, 0, 0, 0]}\n")
    look = np.array([[0.0, -np.sin(TILT), np.cos(TILT)], [-1.0, 0.0, 0.0], [0.0, -np.cos(TILT), -np.sin(TILT)]])
    w, x, y, z = rotation_to_quat(look)
    (tmp_path / "he.yaml").write_text(f"eye_on_hand: false\ntransformation: {{x: 0.05, y: 0.01, z: 0.9, qx: {x}, "
                                      f"qy: {y}, qz: {z}, qw: {w}}}\n")
    robot = load_robot("arx-r5").model
    cal = calibrated_camera(robot, "head", tmp_path / "cam.yaml", tmp_path / "he.yaml")
    assert cal.pose is not None and cal.pose.relative_to == "frame"
    spec = robot_mjcf_spec(robot)
    spec.visual.global_.offwidth, spec.visual.global_.offheight = W, H
    board = Board.parse("checkerboard:8x5:0.03")
    joint = add_checkerboard(spec, board.cols, board.rows, board.square)
    apply_camera_calibration(spec, {"head": cal})
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    ref = np.eye(4)
    ref[:3, :3], ref[:3, 3] = data.xmat[model.body("frame").id].reshape(3, 3), data.xpos[model.body("frame").id]
    poses = poses_facing(ref @ cal.pose.matrix(), board.cols, board.rows, board.square, 6, seed=7,
                         distance=(0.35, 0.5))
    views = [find_board(img, board) for img in board_views(model, "head", ImageSize(H, W), joint, poses)]
    assert all(v is not None for v in views)
    found = [v for v in views if v is not None]
    fixed = cv2.CALIB_ZERO_TANGENT_DIST | cv2.CALIB_FIX_K1 | cv2.CALIB_FIX_K2 | cv2.CALIB_FIX_K3
    _, k, _, _, _ = cv2.calibrateCamera([v.object_points.astype(np.float32) for v in found],
                                        [v.image_points.astype(np.float32) for v in found], (W, H), None, None,
                                        flags=fixed)
    np.testing.assert_allclose([k[0, 0], k[1, 1], k[0, 2], k[1, 2]], [FX, FY, CX, CY], atol=1.0)
    for view, pose in zip(found, poses, strict=True):
        r = reprojection(view, cal.matrix(), np.zeros(5))
        assert r.rms < 0.5
        cam = np.linalg.inv(ref) @ pose @ np.linalg.inv(r.board_in_camera)
        truth = cal.pose.matrix()
        assert np.linalg.norm(cam[:3, 3] - truth[:3, 3]) < 0.002
        turn = cam[:3, :3] @ truth[:3, :3].T
        assert np.degrees(np.arccos(np.clip((np.trace(turn) - 1) / 2, -1, 1))) < 0.2


def test_boards_named_wrongly_or_not_there() -> None:
    with pytest.raises(BoardError, match=r"--board: found 'checker:9x6'; allowed: checkerboard:COLSxROWS:SQUARE_M"):
        Board.parse("checker:9x6")
    assert str(Board.parse("aruco:DICT_4X4_50:5x7:0.04:0.01")) == "aruco:DICT_4X4_50:5x7:0.04:0.01"
    blank = np.full((60, 80, 3), 128, np.uint8)
    assert find_board(blank, Board.parse("checkerboard:9x6:0.025")) is None
    assert find_board(blank, Board.parse("aruco:DICT_4X4_50:5x7:0.04:0.01")) is None


def test_a_distorted_lens_puts_the_corners_where_opencv_projects_them() -> None:
    from x2.envspec.camera_calibration import CameraCalibration, CameraPose
    from x2.sim.mujoco.renderer import MujocoRenderer
    from x2.sim.mujoco.world import world_text

    dist = (-0.28, 0.09, 0.002, -0.001, 0.0)  # a wide lens's barrel: the corners pulled in by tens of pixels
    pose = CameraPose("eye-to-hand", "world", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))  # optical frame = world's
    cal = CameraCalibration("cam", 160, 120, 110.0, 111.0, 83.2, 57.9, dist, pose=pose)
    spec = mujoco.MjSpec()
    spec.option.timestep = 0.004  # (not the default, so the world's text states it)
    spec.visual.global_.offwidth, spec.visual.global_.offheight = 160, 120
    spec.worldbody.add_camera(name="cam", fovy=60)
    spec.worldbody.add_light(pos=[0, 0, -1], dir=[0, 0, 1])
    board = Board.parse("checkerboard:8x5:0.03")
    joint = add_checkerboard(spec, board.cols, board.rows, board.square)
    apply_camera_calibration(spec, {"cam": cal})
    model = mujoco.MjModel.from_xml_string(world_text(spec, 0.004))  # the lens travels in the world's text
    with MujocoRenderer(model, ["cam"], ImageSize(120, 160)) as renderer:
        stored = renderer.intrinsics("cam")
    np.testing.assert_allclose(stored["intrinsics"], cal.matrix(), atol=1e-4)
    np.testing.assert_allclose(stored["distortion"], [*dist, 0, 0, 0], atol=1e-6)
    poses = poses_facing(np.eye(4), board.cols, board.rows, board.square, 2, seed=3, distance=(0.21, 0.23),
                         tilt_deg=15.0)
    for image, pose in zip(board_views(model, "cam", ImageSize(120, 160), joint, poses), poses, strict=True):
        view = find_board(image, board)
        assert view is not None
        truth = (pose[:3, :3] @ view.object_points.T).T + pose[:3, 3]
        expected, _ = cv2.projectPoints(truth, np.zeros(3), np.zeros(3), cal.matrix(), np.array(dist))
        pinhole, _ = cv2.projectPoints(truth, np.zeros(3), np.zeros(3), cal.matrix(), np.zeros(5))
        assert np.abs(expected - pinhole).max() > 4  # the lens moves corners visibly ...
        assert np.abs(expected.reshape(-1, 2) - view.image_points).max() < 0.3  # ... and the render as OpenCV does


def test_an_aruco_board_is_found_marker_by_marker() -> None:
    board = Board.parse("aruco:DICT_4X4_50:3x2:0.04:0.01")
    grid = cv2.aruco.GridBoard((3, 2), 0.04, 0.01, cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50))
    gray = grid.generateImage((320, 220), marginSize=10)
    view = find_board(cv2.cvtColor(gray, cv2.COLOR_GRAY2RGB), board)
    assert view is not None and len(view.image_points) == 4 * 6 and len(view.object_points) == 4 * 6
    # the picture is the board seen square on: pixels are a scaled copy of the board's corners
    scale = np.ptp(view.image_points[:, 0]) / np.ptp(view.object_points[:, 0])
    assert np.allclose(np.ptp(view.image_points[:, 1]) / np.ptp(view.object_points[:, 1]), scale, rtol=0.02)
