"""`x2 calibrate camera --frame --state --board`'s picture: the twin drawn over a frame at a recorded joint state,
the board's reprojection error under the calibration, and a board not in the frame refused with nothing written
(x2/render/calibration_overlay.py)."""

from __future__ import annotations

from pathlib import Path

import cv2
import h5py
import mujoco
import numpy as np
import pytest

from x2.envspec.camera_calibration import CameraCalibration, CameraPose, rotation_to_quat
from x2.envspec.robot import load_robot
from x2.render.calibration_overlay import EDGE, draw_overlay
from x2.sim.boards import Board, BoardError
from x2.sim.camera import ImageSize
from x2.sim.mujoco.camera_calibration import apply_camera_calibration, optical_pose
from x2.sim.mujoco.checkerboard import add_checkerboard, board_views, poses_facing
from x2.sim.mujoco.robot import robot_mjcf_spec

W, H = 160, 120


def _calibration() -> CameraCalibration:
    tilt = 0.9  # looking down at the arms from above and behind them
    look = np.array([[0.0, -np.sin(tilt), np.cos(tilt)], [-1.0, 0.0, 0.0], [0.0, -np.cos(tilt), -np.sin(tilt)]])
    pose = CameraPose("eye-to-hand", "frame", (-0.25, 0.0, 0.75), rotation_to_quat(look))
    return CameraCalibration("head", W, H, 120.0, 120.5, 81.3, 58.2, (0.05, -0.1, 0.0, 0.0, 0.0), pose=pose)


def _episode(path: Path, names: list[str], row: list[float]) -> Path:
    with h5py.File(path, "w") as f:  # a real recording's measured joints, frame 1 of 2
        ds = f.create_dataset("observations/qpos", data=np.array([np.zeros(len(row)), row], np.float32))
        ds.attrs["names"] = names
    return path


def test_the_twin_over_a_frame_and_the_boards_reprojection(tmp_path: Path) -> None:
    robot = load_robot("arx-r5").model
    cal = _calibration()
    names = list(robot.action_names)
    row = [0.3 if not n.endswith("_gripper") else 0.5 for n in names]
    joints = {n: v for n, v in zip(names, row, strict=True) if not n.endswith("_gripper")}
    g = robot.gripper  # (arx-r5's is a slide gripper: its joints are the command)
    joints |= {j: g.closed_ctrl + 0.5 * (g.open_ctrl - g.closed_ctrl) for a in robot.arms for j in a.gripper_joints}
    # the "real" frame: the same robot at that state with a board in view, drawn through the calibrated camera
    spec = robot_mjcf_spec(robot)
    spec.visual.global_.offwidth, spec.visual.global_.offheight = W, H
    board = Board.parse("checkerboard:5x4:0.03")
    joint = add_checkerboard(spec, board.cols, board.rows, board.square)
    apply_camera_calibration(spec, {"head": cal})
    model = spec.compile()
    data = mujoco.MjData(model)
    for name, value in joints.items():
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = value
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    pose = poses_facing(optical_pose(model, data, "head"), board.cols, board.rows, board.square, 1, seed=1,
                        distance=(0.3, 0.3), tilt_deg=10)[0]
    pose[:3, 3] += optical_pose(model, data, "head")[:3, :3] @ np.array([-0.06, -0.03, 0.0])  # off the arms
    adr = model.jnt_qposadr[model.joint(joint).id]
    qpos = data.qpos.copy()
    frame_png = tmp_path / "real.png"
    real = _at_state(model, qpos, adr, pose, joint)
    cv2.imwrite(str(frame_png), cv2.cvtColor(real, cv2.COLOR_RGB2BGR))
    episode = _episode(tmp_path / "episode_000000.h5", names, row)

    done = draw_overlay(robot, cal, frame_png, f"{episode}:1", tmp_path / "overlay.png", board)
    assert done.board is not None and done.corners == 20 and done.board.rms < 0.3
    assert done.joints == len(names) and done.size == ImageSize(H, W)
    drawn = cv2.cvtColor(cv2.imread(str(done.out)), cv2.COLOR_BGR2RGB)
    assert (drawn == EDGE).all(axis=2).sum() > 100  # the silhouette's edges are drawn

    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((H, W, 3), 90, np.uint8))
    with pytest.raises(BoardError, match=r"blank\.png: --board: found no checkerboard:5x4:0\.03 in the picture"):
        draw_overlay(robot, cal, blank, f"{episode}:1", tmp_path / "none.png", board)
    assert not (tmp_path / "none.png").exists()


def _at_state(model: mujoco.MjModel, qpos: np.ndarray, adr: int, pose: np.ndarray, joint: str) -> np.ndarray:
    return next(board_views(model, "head", ImageSize(H, W), joint, [pose], qpos=qpos))
