"""A calibrated camera: the `cameras` section of a calibration file (`specs/calibrations/<name>.yaml`,
docs/calibration_cameras.md), its compiled value, and the readers of the files a lab's calibration tools write.

One camera's entry, as `x2 calibrate camera` writes it:

    head:
      width: 640                  # the calibrated image size (pixels)
      height: 480
      fx: 615.0                   # focal lengths and principal point, pixels, OpenCV's convention
      fy: 615.0                   # (pixel centres at integer coordinates: the first pixel's centre is 0, 0)
      cx: 321.4
      cy: 238.7
      distortion: {model: plumb_bob, coefficients: [k1, k2, p1, p2, k3]}   # OpenCV's order; absent: none
      pose:                       # absent: the camera stays where the robot file put it
        mount: eye-to-hand        # or eye-in-hand
        relative_to: frame        # an x2 body or site of the robot the pose is given in
        position: [x, y, z]       # m
        quaternion: [w, x, y, z]  # the camera's OpenCV optical frame: x right, y down, z forward
      intrinsics_file: ...        # where they came from, as given
      hand_eye_file: ...

Nothing here imports a simulator: x2/sim/mujoco/camera_calibration.py applies a `CameraCalibration` to a world.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from x2.base.arrays import Floats
from x2.base.errors import SpecError

# OpenCV's distortion models by the names ROS's camera_info gives them; coefficient counts OpenCV takes.
DISTORTION_MODELS = {"plumb_bob": (4, 5), "rational_polynomial": (8,)}
ORTHONORMAL_TOLERANCE = 1e-3  # largest |R^T R - I| entry a hand-eye rotation may have (rounding in a text file)
MOUNTS = ("eye-to-hand", "eye-in-hand")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DistortionFile(_Strict):
    model: Literal["plumb_bob", "rational_polynomial"]
    coefficients: list[float]


class PoseFile(_Strict):
    mount: Literal["eye-to-hand", "eye-in-hand"]
    relative_to: str = Field(min_length=1)
    position: tuple[float, float, float]
    quaternion: tuple[float, float, float, float]


class CameraFile(_Strict):
    """One camera's entry of a calibration file's `cameras` section (see the module docstring)."""

    width: int = Field(ge=16, le=8192)
    height: int = Field(ge=16, le=8192)
    fx: float = Field(gt=0)
    fy: float = Field(gt=0)
    cx: float
    cy: float
    distortion: DistortionFile | None = None
    pose: PoseFile | None = None
    intrinsics_file: str | None = None
    hand_eye_file: str | None = None


@dataclass(frozen=True)
class CameraPose:
    """Where a camera is: its OpenCV optical frame (x right, y down, z forward) in the frame `relative_to` (an x2
    body or site) of the robot."""

    mount: Literal["eye-to-hand", "eye-in-hand"]
    relative_to: str
    position: tuple[float, float, float]
    quaternion: tuple[float, float, float, float]  # w x y z

    def matrix(self) -> Floats:
        """The 4x4 transform from the camera's optical frame to `relative_to`."""
        t = np.eye(4)
        t[:3, :3] = quat_to_rotation(np.asarray(self.quaternion))
        t[:3, 3] = self.position
        return t


@dataclass(frozen=True)
class CameraCalibration:
    """One camera's calibration, checked: intrinsics at (width, height), OpenCV distortion, pose (or None)."""

    name: str
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: tuple[float, ...] = ()  # OpenCV's order; () or all zeros: a pinhole
    distortion_model: str = "plumb_bob"
    pose: CameraPose | None = None
    intrinsics_file: str | None = None
    hand_eye_file: str | None = None

    @property
    def distorted(self) -> bool:
        return any(c != 0.0 for c in self.distortion)

    def matrix(self, height: int | None = None, width: int | None = None) -> Floats:
        """K (3x3) for a picture of `height` x `width` (default: the calibrated size): the same lens on a sensor
        scaled to that many pixels, pixel centres at integer coordinates."""
        sx = (width or self.width) / self.width
        sy = (height or self.height) / self.height
        return np.array([[self.fx * sx, 0.0, (self.cx + 0.5) * sx - 0.5],
                         [0.0, self.fy * sy, (self.cy + 0.5) * sy - 0.5],
                         [0.0, 0.0, 1.0]])

    def to_file(self) -> dict[str, object]:
        """The entry as written into a calibration file (plain YAML types, the module docstring's order)."""
        out: dict[str, object] = {"width": self.width, "height": self.height, "fx": self.fx, "fy": self.fy,
                                  "cx": self.cx, "cy": self.cy}
        if self.distorted:
            out["distortion"] = {"model": self.distortion_model, "coefficients": list(self.distortion)}
        if self.pose is not None:
            out["pose"] = {"mount": self.pose.mount, "relative_to": self.pose.relative_to,
                           "position": list(self.pose.position), "quaternion": list(self.pose.quaternion)}
        if self.intrinsics_file is not None:
            out["intrinsics_file"] = self.intrinsics_file
        if self.hand_eye_file is not None:
            out["hand_eye_file"] = self.hand_eye_file
        return out


def parse_camera_calibrations(raw: object, where: str = "cameras") -> dict[str, CameraCalibration]:
    """A calibration file's `cameras` section (camera name -> entry) checked and compiled; any mistake is one
    line naming `where` and the field."""
    if not isinstance(raw, Mapping):
        raise SpecError(where, None, "cameras", type(raw).__name__, "a mapping of camera name -> calibration")
    out: dict[str, CameraCalibration] = {}
    for name, entry in raw.items():
        try:
            f = CameraFile.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in ("cameras", name, *err["loc"]))
            raise SpecError(where, None, field, repr(err.get("input")), err["msg"]) from None
        pose = None
        if f.pose is not None:
            q = unit_quaternion(np.asarray(f.pose.quaternion), where, f"cameras.{name}.pose.quaternion")
            pose = CameraPose(f.pose.mount, f.pose.relative_to, f.pose.position, q)
        dist: tuple[float, ...] = ()
        model = "plumb_bob"
        if f.distortion is not None:
            dist = coefficients(f.distortion.model, f.distortion.coefficients, where,
                                 f"cameras.{name}.distortion.coefficients")
            model = f.distortion.model
        out[str(name)] = checked(CameraCalibration(str(name), f.width, f.height, f.fx, f.fy, f.cx, f.cy, dist, model,
                                                    pose, f.intrinsics_file, f.hand_eye_file), where)
    return out


def checked(cal: CameraCalibration, where: str, prefix: str | None = None) -> CameraCalibration:
    """`cal` when its numbers make a camera, else one line naming the field (`prefix` + its name; by default the
    calibration file's `cameras.NAME.`). An uncalibrated ROS camera publishes K all zeros: refused here, before
    it poisons the calibration file for every later command."""
    at = f"cameras.{cal.name}." if prefix is None else prefix
    for axis, size in (("width", cal.width), ("height", cal.height)):
        if size <= 0:
            raise SpecError(where, None, f"{at}{axis}", str(size), "the calibrated image size in pixels, > 0")
    for axis, f in (("fx", cal.fx), ("fy", cal.fy)):
        if not (math.isfinite(f) and f > 0):
            raise SpecError(where, None, f"{at}{axis}", f"{f:g}", "a focal length in pixels > 0 (a calibrated "
                            "camera's; an uncalibrated camera_info has K all zeros)")
    for axis, c, size in (("cx", cal.cx, cal.width), ("cy", cal.cy, cal.height)):
        if not 0.0 <= c <= size - 1:  # (NaN fails this too)
            raise SpecError(where, None, f"{at}{axis}", f"{c:g}",
                            f"a principal point inside the {cal.width}x{cal.height} image (0..{size - 1})")
    return cal


def coefficients(model: str, coeffs: list[float], where: str, field: str) -> tuple[float, ...]:
    counts = DISTORTION_MODELS.get(model)
    if counts is None:
        raise SpecError(where, None, field.rsplit(".", 1)[0] + ".model", repr(model),
                        f"one of {', '.join(DISTORTION_MODELS)} (OpenCV's model)")
    if len(coeffs) not in counts and not (model == "plumb_bob" and len(coeffs) == 0):
        raise SpecError(where, None, field, f"{len(coeffs)} coefficients",
                        f"{' or '.join(map(str, counts))} for {model} (OpenCV's order k1 k2 p1 p2 k3 ...)")
    if not all(math.isfinite(c) for c in coeffs):
        raise SpecError(where, None, field, str(coeffs), "finite numbers")
    return tuple(float(c) for c in coeffs)


# --- rotations (numpy only: this layer has no simulator) ---------------------------------------------------------


def quat_to_rotation(q: Floats) -> Floats:
    w, x, y, z = (float(v) for v in q / np.linalg.norm(q))
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rotation_to_quat(r: Floats) -> tuple[float, float, float, float]:
    """w x y z, w >= 0, of a rotation matrix (Shepperd's method: stable for every rotation)."""
    m = np.asarray(r, dtype=np.float64)
    tr = float(np.trace(m))
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + m[i, i] - m[j, j] - m[k, k], 1e-300))
        q = np.empty(4)
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    q = q / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    w, x, y, z = (float(v) for v in q)
    return (w, x, y, z)


def unit_quaternion(q: Floats, where: str, field: str) -> tuple[float, float, float, float]:
    n = float(np.linalg.norm(q))
    if not math.isfinite(n) or abs(n - 1.0) > ORTHONORMAL_TOLERANCE:
        raise SpecError(where, None, field, f"a quaternion of norm {n:.6g}", "a unit quaternion (norm 1 +- 0.001)")
    w, x, y, z = (float(v) for v in q / n)
    return (w, x, y, z)


def checked_rotation(r: Floats, where: str, field: str) -> Floats:
    """`r` if it is a rotation to within ORTHONORMAL_TOLERANCE (then made exactly one), else a one-line error that
    says how far from orthonormal it is."""
    off = float(np.max(np.abs(r.T @ r - np.eye(3))))
    det = float(np.linalg.det(r))
    if not math.isfinite(off) or off > ORTHONORMAL_TOLERANCE or det < 0:
        raise SpecError(where, None, field, f"a 3x3 block with max |R^T R - I| = {off:.3g} and det {det:.3g}",
                        f"a rotation (max |R^T R - I| <= {ORTHONORMAL_TOLERANCE:g}, det +1)")
    u, _, vt = np.linalg.svd(r)
    exact: Floats = u @ vt
    return exact
