"""A calibrated camera checked against a real picture: the twin's render at the recorded joint state drawn over the
real frame (a blend where the robot is, its silhouette's edges in green), and, when the frame shows a calibration
board, the board's corners projected under the calibration and their reprojection error (x2.sim.boards). What
`x2 calibrate camera --frame IMAGE --state EPISODE:FRAME [--board ...]` writes and prints.

The joint state is the episode's `/observations/qpos` row FRAME by its `names`: a real recording's measured joints
(action names: each arm's joints by x2's names, `<arm>_gripper` its gripper's opening 0..1, drawn where that
command puts the fingers), or a simulated episode's joints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from x2 import format as fmt
from x2.base.arrays import Image
from x2.base.errors import DatasetError, X2Error
from x2.datasets import Dataset, Episode
from x2.envspec.calibration import cameras_text
from x2.envspec.camera_calibration import CameraCalibration
from x2.envspec.env import RobotSpec
from x2.files.atomic import write_bytes, write_text
from x2.sim.boards import Board, BoardError, Reprojection, find_board, reprojection
from x2.sim.camera import ImageSize
from x2.sim.mujoco.camera_twin import twin_picture

EDGE = (0, 255, 0)  # RGB of the twin's silhouette edges
PROJECTED = (255, 0, 255)  # RGB of the board's corners as the calibration projects them
_STATE = re.compile(r"^(.+?)(?::(\d+))?:(\d+)$")


@dataclass(frozen=True)
class Overlay:
    out: Path
    size: ImageSize
    joints: int  # joints set from the episode
    board: Reprojection | None
    corners: int
    png: bytes  # the picture's file, written to `out` (draw_overlay, write_calibration)


def state_joints(text: str, where: str = "--state") -> dict[str, float]:
    """`EPISODE_FILE:FRAME` or `DATASET:INDEX:FRAME` -> {joint name: qpos} of that frame's `/observations/qpos`."""
    m = _STATE.match(text)
    if m is None:
        raise DatasetError(f"{where}: found {text!r}; allowed: EPISODE_FILE:FRAME or DATASET:EPISODE:FRAME")
    path = Dataset.open(m[1]).episode_path(int(m[2])) if m[2] is not None else Path(m[1])
    frame = int(m[3])
    with Episode(path) as ep:
        if fmt.QPOS not in ep:
            raise DatasetError(f"{path}: {fmt.QPOS}: found nothing; allowed: an episode with measured joints")
        qpos = np.asarray(ep[fmt.QPOS], np.float64)
        names = [str(n) for n in ep.dataset_attrs(fmt.QPOS).get(fmt.NAMES_ATTR, [])]
    if not 0 <= frame < qpos.shape[0]:
        raise DatasetError(f"{where}: frame {frame}: found an episode of {qpos.shape[0]} frames; allowed: "
                           f"0..{qpos.shape[0] - 1}")
    if len(names) != qpos.shape[1]:
        raise DatasetError(f"{path}: {fmt.QPOS} names: found {len(names)} for {qpos.shape[1]} columns; allowed: one "
                           "name a column")
    return {n: float(v) for n, v in zip(names, qpos[frame], strict=True)}


def read_picture(path: Path, where: str = "--frame") -> Image:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise X2Error(f"{where}: found {str(path)!r}, which is no picture OpenCV reads; allowed: a PNG or JPEG")
    rgb: Image = np.asarray(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), np.uint8)
    return rgb


def draw_overlay(robot: RobotSpec, cal: CameraCalibration, frame: Path, state: str, out: Path,
                 board: Board | None = None) -> Overlay:
    """Write the overlay PNG `out` (see the module docstring). A board asked for but not found in the frame is one
    line, and nothing is written."""
    overlay = overlay_picture(robot, cal, frame, state, out, board)
    write_bytes(out, overlay.png)
    return overlay


def write_calibration(path: Path, robot: str, cal: CameraCalibration, made_by: str, overlay: Overlay | None) -> None:
    """Camera `cal` into the calibration file at `path` (x2.envspec.calibration.write_cameras) and the
    overlay PNG, if any, the file checked first: a file that refuses it (another robot's, an unreadable cameras
    section) leaves nothing written, not even the PNG."""
    text = cameras_text(path, robot, {cal.name: cal}, made_by)
    if overlay is not None:
        write_bytes(overlay.out, overlay.png)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)


def overlay_picture(robot: RobotSpec, cal: CameraCalibration, frame: Path, state: str, out: Path,
                    board: Board | None = None) -> Overlay:
    """The overlay PNG meant for `out`, in memory (draw_overlay writes it)."""
    real = read_picture(frame)
    size = ImageSize(real.shape[0], real.shape[1])
    if abs(size.width / size.height - cal.width / cal.height) > 0.01:
        raise X2Error(f"--frame: found a {size.width}x{size.height} picture; allowed: the calibrated camera's "
                      f"{cal.width}x{cal.height} or a picture of the same shape")
    k, d = cal.matrix(size.height, size.width), np.asarray(cal.distortion or (0.0,) * 5, np.float64)
    found = None
    if board is not None:
        view = find_board(real, board)
        if view is None:
            raise BoardError(f"{frame}: --board: found no {board} in the picture; allowed: a picture that shows the "
                             "whole board (the counts are inner corners, COLSxROWS)")
        found = (view, reprojection(view, k, d))
    joints = state_joints(state)
    twin, mask = twin_picture(robot, {cal.name: cal}, cal.name, joints, size)
    picture = real.astype(np.float32)
    picture[mask] = 0.5 * picture[mask] + 0.5 * twin[mask].astype(np.float32)
    result = picture.round().astype(np.uint8)
    edges = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)) > 0
    result[edges] = EDGE
    if found is not None:
        for x, y in found[1].projected:
            cv2.circle(result, (round(float(x)), round(float(y))), 3, PROJECTED, 1, cv2.LINE_AA)
    ok, png = cv2.imencode(".png", cv2.cvtColor(result, cv2.COLOR_RGB2BGR))
    assert ok
    return Overlay(out, size, len(joints), None if found is None else found[1],
                   0 if found is None else len(found[0].image_points), png.tobytes())
