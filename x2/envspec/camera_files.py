"""The files a lab's calibration tools write, read into x2's terms: a camera's intrinsics (ROS `camera_info` YAML,
OpenCV FileStorage YAML/XML, or a plain YAML with fx fy cx cy) and a hand-eye result (easy_handeye YAML, or a 4x4
matrix as text, YAML or .npy). The pixel convention is OpenCV's (and ROS's): the first pixel's centre at 0, 0. A
hand-eye result is the camera's optical frame (x right, y down, z forward) in the robot's frame: easy_handeye's
`transformation` from `robot_base_frame` (eye-to-hand) or `robot_effector_frame` (eye-in-hand) to
`tracking_base_frame`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import yaml

from x2.base.arrays import Floats
from x2.base.errors import SpecError
from x2.envspec.camera_calibration import (
    CameraCalibration,
    CameraPose,
    checked,
    checked_rotation,
    coefficients,
    quat_to_rotation,
    unit_quaternion,
)


@dataclass(frozen=True)
class LensIntrinsics:
    """What a camera file says: size, focal lengths, principal point (pixels), OpenCV distortion."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: tuple[float, ...]
    model: str


@dataclass(frozen=True)
class HandEye:
    """A hand-eye result: the camera's optical frame in the reference frame (4x4), and the mount when the file
    says it (easy_handeye's `eye_on_hand`), with the frames it names."""

    matrix: Floats
    mount: Literal["eye-to-hand", "eye-in-hand"] | None
    frames: tuple[str, str] | None  # (robot frame, camera frame) as the file names them


def read_intrinsics(path: Path) -> LensIntrinsics:
    """A ROS `camera_info` YAML, an OpenCV FileStorage YAML/XML, or a plain YAML with fx, fy, cx, cy, width,
    height[, distortion]."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SpecError(where, None, "<file>", exc.strerror or type(exc).__name__, "a readable camera file") from None
    if text.lstrip().startswith(("%YAML:1", "<?xml")):
        return _read_opencv(path)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecError(where, None if mark is None else mark.line + 1, "<yaml>", "text YAML cannot read",
                        "a ROS camera_info or OpenCV calibration YAML") from None
    if not isinstance(raw, Mapping):
        raise SpecError(where, None, "<file>", type(raw).__name__, "a ROS camera_info or OpenCV calibration YAML")
    if "camera_matrix" in raw or "K" in raw or "k" in raw:
        return _read_camera_info(raw, where)
    return _read_plain(raw, where)


def _read_camera_info(raw: Mapping[object, object], where: str) -> LensIntrinsics:
    key = next(k for k in ("camera_matrix", "K", "k") if k in raw)
    cm = raw[key]
    data = cm.get("data") if isinstance(cm, Mapping) else cm
    k = _floats(data, where, f"{key}.data")
    for i, name in ((0, "fx"), (4, "fy"), (2, "cx"), (5, "cy")):
        if len(k) <= i:
            raise SpecError(where, None, f"{key}.data[{i}] ({name})", f"{len(k)} numbers",
                            "the 9 numbers of the 3x3 camera matrix, row by row: fx 0 cx 0 fy cy 0 0 1")
    dist_raw = raw.get("distortion_coefficients", raw.get("D", raw.get("d")))
    dist_data = dist_raw.get("data") if isinstance(dist_raw, Mapping) else dist_raw
    dist = _floats(dist_data, where, "distortion_coefficients.data") if dist_data is not None else []
    model = str(raw.get("distortion_model") or "plumb_bob")
    if model in ("radtan", "pinhole"):  # Kalibr's and some drivers' name for the same model
        model = "plumb_bob"
    return LensIntrinsics(_size(raw, ("image_width", "width"), where), _size(raw, ("image_height", "height"), where),
                      k[0], k[4], k[2], k[5], coefficients(model, dist, where, "distortion_coefficients.data"), model)


def _read_plain(raw: Mapping[object, object], where: str) -> LensIntrinsics:
    values = {}
    for name in ("fx", "fy", "cx", "cy"):
        if name not in raw:
            raise SpecError(where, None, name, "nothing", "a camera file with fx, fy, cx, cy: a ROS camera_info "
                            "(camera_matrix), an OpenCV calibration (camera_matrix) or a YAML with fx fy cx cy")
        values[name] = _floats([raw[name]], where, name)[0]
    dist_raw = raw.get("distortion", [])
    model = "plumb_bob"
    if isinstance(dist_raw, Mapping):
        model = str(dist_raw.get("model", model))
        dist_raw = dist_raw.get("coefficients", [])
    dist = _floats(dist_raw, where, "distortion")
    return LensIntrinsics(_size(raw, ("width", "image_width"), where), _size(raw, ("height", "image_height"), where),
                      values["fx"], values["fy"], values["cx"], values["cy"],
                      coefficients(model, dist, where, "distortion"), model)


def _read_opencv(path: Path) -> LensIntrinsics:
    import cv2  # (lazily: reading an OpenCV FileStorage file is the one use of it here)

    where = str(path)
    try:
        fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    except cv2.error:
        raise SpecError(where, None, "<file>", "a file OpenCV's FileStorage cannot read",
                        "an OpenCV calibration YAML (%YAML:1.0, !!opencv-matrix)") from None
    try:
        def node(*names: str) -> tuple[str, cv2.FileNode | None]:
            for n in names:
                nd = fs.getNode(n)
                if not nd.empty():
                    return n, nd
            return names[0], None

        kname, kn = node("camera_matrix", "cameraMatrix", "K", "intrinsic_matrix")
        k = kn.mat() if kn is not None and kn.isMap() else None
        if k is None or k.size != 9:
            raise SpecError(where, None, f"{kname} (fx)", "no 3x3 camera matrix",
                            "a !!opencv-matrix camera_matrix (or cameraMatrix, K) with fx, fy, cx, cy")
        k = np.asarray(k, np.float64).reshape(3, 3)
        dname, dn = node("distortion_coefficients", "dist_coeffs", "distCoeffs", "D")
        d = [] if dn is None else [float(v) for v in np.asarray(dn.mat(), np.float64).ravel()]
        sizes: list[int] = []
        for names in (("image_width", "imageWidth", "width"), ("image_height", "imageHeight", "height")):
            sname, sn = node(*names)
            if sn is None:
                iname, inode = node("image_size", "imageSize")
                if inode is None:
                    raise SpecError(where, None, sname, "nothing", "the calibrated image size (image_width, "
                                    "image_height or image_size)")
                sizes.append(int(inode.at(len(sizes)).real()))
            else:
                sizes.append(int(sn.real()))
        model = "rational_polynomial" if len(d) == 8 else "plumb_bob"
        return LensIntrinsics(_size({"w": sizes[0]}, ("w",), where), _size({"h": sizes[1]}, ("h",), where),
                          float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]),
                          coefficients(model, d, where, dname), model)
    finally:
        fs.release()


def _size(raw: Mapping[object, object], names: tuple[str, ...], where: str) -> int:
    for n in names:
        if n in raw:
            v = raw[n]
            if isinstance(v, int) and not isinstance(v, bool) and 16 <= v <= 8192:
                return v
            raise SpecError(where, None, n, repr(v), "the calibrated image size in pixels, 16..8192")
    raise SpecError(where, None, names[0], "nothing", "the calibrated image size in pixels")


def _floats(data: object, where: str, field: str) -> list[float]:
    if not isinstance(data, (list, tuple)) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                      for v in data):
        raise SpecError(where, None, field, repr(data)[:60], "a list of numbers")
    out = [float(v) for v in data]
    if not all(math.isfinite(v) for v in out):
        raise SpecError(where, None, field, str(out), "finite numbers")
    return out


def read_hand_eye(path: Path) -> HandEye:
    """An easy_handeye YAML (`transformation` {x y z qx qy qz qw}, `eye_on_hand`), or a 4x4 matrix: `.npy`, text
    (4 rows of 4 numbers) or YAML (a list of 4 rows, or a mapping whose `matrix`/`transform` is one)."""
    where = str(path)
    if path.suffix == ".npy":
        try:
            m = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise SpecError(where, None, "<file>", str(exc).splitlines()[0], "a .npy 4x4 matrix") from None
        return HandEye(_matrix(m, where, "<matrix>"), None, None)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SpecError(where, None, "<file>", exc.strerror or type(exc).__name__, "a readable hand-eye file") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError:
        raw = None
    if isinstance(raw, Mapping) and "transformation" in raw:
        t = raw["transformation"]
        if not isinstance(t, Mapping):
            raise SpecError(where, None, "transformation", repr(t)[:60], "x y z qx qy qz qw")
        vals = {}
        for k in ("x", "y", "z", "qw", "qx", "qy", "qz"):
            if k not in t:
                raise SpecError(where, None, f"transformation.{k}", "nothing", "x y z qx qy qz qw (easy_handeye)")
            vals[k] = _floats([t[k]], where, f"transformation.{k}")[0]
        q = unit_quaternion(np.array([vals["qw"], vals["qx"], vals["qy"], vals["qz"]]), where,
                             "transformation.q")
        m = np.eye(4)
        m[:3, :3] = quat_to_rotation(np.asarray(q))
        m[:3, 3] = (vals["x"], vals["y"], vals["z"])
        mount: Literal["eye-to-hand", "eye-in-hand"] | None = None
        if "eye_on_hand" in raw:
            mount = "eye-in-hand" if bool(raw["eye_on_hand"]) else "eye-to-hand"
        base = raw.get("robot_effector_frame") if mount == "eye-in-hand" else raw.get("robot_base_frame")
        frames = (str(base), str(raw.get("tracking_base_frame"))) if base is not None else None
        return HandEye(m, mount, frames)
    if isinstance(raw, Mapping):
        key = next((k for k in ("matrix", "transform", "T") if k in raw), None)
        if key is None:
            raise SpecError(where, None, "transformation", "nothing", "an easy_handeye YAML (transformation: x y z "
                            "qx qy qz qw) or a 4x4 matrix (text, YAML or .npy)")
        return HandEye(_matrix(raw[key], where, key), None, None)
    if isinstance(raw, list):
        return HandEye(_matrix(raw, where, "<matrix>"), None, None)
    try:
        m = np.loadtxt(path, ndmin=2, delimiter=None if "," not in text else ",")
    except ValueError:
        raise SpecError(where, None, "<matrix>", "text that is not 4 rows of 4 numbers",
                        "an easy_handeye YAML or a 4x4 matrix (text, YAML or .npy)") from None
    return HandEye(_matrix(m, where, "<matrix>"), None, None)


def _matrix(data: object, where: str, field: str) -> Floats:
    try:
        m = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpecError(where, None, field, repr(data)[:60], "a 4x4 matrix of numbers") from None
    if m.shape != (4, 4):
        raise SpecError(where, None, field, f"shape {m.shape}", "a 4x4 homogeneous transform")
    if not np.all(np.isfinite(m)):
        raise SpecError(where, None, field, "non-finite numbers", "finite numbers")
    if not np.allclose(m[3], [0, 0, 0, 1], atol=1e-9):
        raise SpecError(where, None, f"{field} last row", str(m[3].tolist()), "[0, 0, 0, 1]")
    out = m.copy()
    out[:3, :3] = checked_rotation(m[:3, :3], where, f"{field} rotation")
    return out


def calibration_of(name: str, intr: LensIntrinsics, pose: CameraPose | None, intrinsics_file: str | None,
                   hand_eye_file: str | None, where: str) -> CameraCalibration:
    """The checked calibration of camera `name` from what its files said."""
    return checked(CameraCalibration(name, intr.width, intr.height, intr.fx, intr.fy, intr.cx, intr.cy,
                                      intr.distortion, intr.model, pose, intrinsics_file, hand_eye_file), where)
