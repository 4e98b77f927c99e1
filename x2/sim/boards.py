"""Calibration boards in pictures: a checkerboard or an ArUco grid board named on the command line, its corners found by
OpenCV, and the reprojection error of those corners under a camera's calibration (solvePnP + projectPoints): what `x2
calibrate camera --frame --board` prints and bench/bench_camera_calibration.py measures. No simulator here;
x2/sim/mujoco/checkerboard.py puts a checkerboard into a world.

`checkerboard:COLSxROWS:SQUARE_M` counts inner corners (OpenCV's pattern size, ROS camera_calibration's --size): a 9x6
board has 10 x 7 squares. Corner (i, j) is at (i, j) * SQUARE in the board's frame, in OpenCV's order (along a row
first), and the square outside corner (0, 0) is black; a board whose two counts differ in parity (9x6) has one pose, one
whose counts do not (8x6) looks the same turned half a turn, which its pose cannot tell.
`aruco:DICT:COLSxROWS:MARKER_M:SEPARATION_M` is an ArUco grid board (cv2.aruco.GridBoard) of that dictionary (e.g.
DICT_4X4_50), its markers' corners in the board's frame as OpenCV defines them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import cv2
import numpy as np

from x2.base.arrays import Floats, Image
from x2.base.errors import X2Error

_CHECKER = re.compile(r"^checkerboard:(\d+)x(\d+):([0-9.eE+-]+)$")
_ARUCO = re.compile(r"^aruco:(DICT_\w+):(\d+)x(\d+):([0-9.eE+-]+):([0-9.eE+-]+)$")


class BoardError(X2Error):
    """A board named wrongly, or not found in a picture."""


@dataclass(frozen=True)
class Board:
    kind: str  # checkerboard | aruco
    cols: int
    rows: int
    square: float  # m: a checkerboard's square, an ArUco board's marker side
    dictionary: str = ""
    separation: float = 0.0

    @classmethod
    def parse(cls, text: str, where: str = "--board") -> Board:
        m = _CHECKER.match(text)
        try:
            if m:
                board = cls("checkerboard", int(m[1]), int(m[2]), float(m[3]))
            elif (a := _ARUCO.match(text)) is not None:
                if not hasattr(cv2.aruco, a[1]):
                    raise ValueError
                board = cls("aruco", int(a[2]), int(a[3]), float(a[4]), a[1], float(a[5]))
            else:
                raise ValueError
        except ValueError:
            raise BoardError(f"{where}: found {text!r}; allowed: checkerboard:COLSxROWS:SQUARE_M (inner corners, e.g. "
                             "checkerboard:9x6:0.025) or aruco:DICT_4X4_50:COLSxROWS:MARKER_M:SEPARATION_M") from None
        if board.cols < 2 or board.rows < 2 or not 0 < board.square < 1:
            raise BoardError(f"{where}: found {text!r}; allowed: at least 2x2 corners, a square of 0..1 m")
        return board

    def __str__(self) -> str:
        if self.kind == "checkerboard":
            return f"checkerboard:{self.cols}x{self.rows}:{self.square:g}"
        return f"aruco:{self.dictionary}:{self.cols}x{self.rows}:{self.square:g}:{self.separation:g}"


@dataclass(frozen=True)
class BoardView:
    """A board found in a picture: its corners' 3D points (board frame, m) and their pixels."""

    object_points: Floats  # (N, 3)
    image_points: Floats  # (N, 2)


def checkerboard_corners(cols: int, rows: int, square: float) -> Floats:
    """(cols*rows, 3) a checkerboard's inner corners in its frame, OpenCV's order: corner (i, j) at (i, j)*square."""
    j, i = np.mgrid[0:rows, 0:cols]
    return np.stack([i.ravel() * square, j.ravel() * square, np.zeros(cols * rows)], axis=1).astype(np.float64)


def find_board(image: Image, board: Board) -> BoardView | None:
    """The board's corners in an RGB picture (sub-pixel), or None when it is not there whole."""
    gray: Image = np.asarray(cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY), np.uint8)
    if board.kind == "aruco":
        return _find_aruco(gray, board)
    ok, pts = cv2.findChessboardCorners(gray, (board.cols, board.rows), flags=cv2.CALIB_CB_ADAPTIVE_THRESH)
    if not ok:
        return None
    pts = cv2.cornerSubPix(gray, pts, (5, 5), (-1, -1), (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 100, 1e-4))
    grid = _ordered(gray, pts.reshape(board.rows, board.cols, 2).astype(np.float64))
    return BoardView(checkerboard_corners(board.cols, board.rows, board.square), grid.reshape(-1, 2))


def _ordered(gray: Image, grid: Floats) -> Floats:
    """OpenCV's corner grid relabelled to this module's board frame. OpenCV may start at any of the four outer
    corners and run either way along a row; only two of those labellings see the board from its front (its x and y
    axes turning clockwise in the picture, whose y points down, as a right-handed frame whose z faces the camera
    does), and of those two the one whose first corner has the black square outside it is the board's (a board
    whose two counts have the same parity looks the same turned half a turn: the first is kept)."""
    def front(g: Floats) -> bool:
        ex, ey = g[0, 1] - g[0, 0], g[1, 0] - g[0, 0]
        return bool(ex[0] * ey[1] - ex[1] * ey[0] < 0)

    def shade(g: Floats, corner: tuple[int, int], inner: tuple[int, int]) -> float:
        p, q = g[corner], g[inner]
        x, y = (p + (p - q) * 0.5).round().astype(int)
        h, w = gray.shape[:2]
        return float(gray[min(max(y, 0), h - 1), min(max(x, 0), w - 1)])

    g = next(c for c in (grid, grid[::-1], grid[:, ::-1], grid[::-1, ::-1]) if front(c))
    if (grid.shape[0] + grid.shape[1]) % 2 == 1 and shade(g, (0, 0), (1, 1)) > shade(g, (-1, -1), (-2, -2)):
        g = g[::-1, ::-1]
    return np.ascontiguousarray(g)


def _find_aruco(gray: Image, board: Board) -> BoardView | None:
    dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, board.dictionary))
    grid = cv2.aruco.GridBoard((board.cols, board.rows), board.square, board.separation, dictionary)
    found, ids, _ = cv2.aruco.ArucoDetector(dictionary).detectMarkers(gray)
    if ids is None or len(ids) == 0:
        return None
    obj, img = grid.matchImagePoints(found, ids)
    if obj is None or len(obj) < 4:
        return None
    return BoardView(np.asarray(obj, np.float64).reshape(-1, 3), np.asarray(img, np.float64).reshape(-1, 2))


@dataclass(frozen=True)
class Reprojection:
    """The board's corners projected back under a calibration: the error (px) and the board's pose in the camera's
    optical frame."""

    rms: float
    max: float
    board_in_camera: Floats  # 4x4
    projected: Floats  # (N, 2)


def reprojection(view: BoardView, k: Floats, distortion: Floats) -> Reprojection:
    """solvePnP of the found corners under intrinsics `k` and OpenCV `distortion`, then projectPoints: how far (px)
    each found corner is from where the calibrated camera puts the board's corner."""
    ok, rvec, tvec = cv2.solvePnP(view.object_points, view.image_points, k, distortion, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok:
        raise BoardError("--board: found corners solvePnP cannot place; allowed: a board seen whole and flat")
    projected, _ = cv2.projectPoints(view.object_points, rvec, tvec, k, distortion)
    pixels = np.asarray(projected, np.float64).reshape(-1, 2)
    err = np.linalg.norm(pixels - view.image_points, axis=1)
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = cv2.Rodrigues(rvec)[0], np.asarray(tvec).ravel()
    return Reprojection(float(np.sqrt(np.mean(err ** 2))), float(err.max()), pose, pixels)
