"""A camera's calibration (x2/envspec/camera_calibration.py) applied to a MuJoCo world spec before it compiles.

MuJoCo takes real intrinsics on a camera: `resolution` (pixels), `sensor_size` (m; setting it makes MuJoCo use the
rest and derive `fovy`), `focal_pixel` (fx, fy) and `principal_pixel`, an offset of the principal point from the
image centre. Its sign is the thing to mind: MuJoCo's convention changed across releases, so it is measured, not
assumed: tests/test_sim_camera_calibration.py renders a sphere at a known point and checks its pixel
against K. With MuJoCo 4.0.1 a positive offset moves the principal point left and up (towards smaller pixel
coordinates) on both axes: PRINCIPAL_SIGN (x2/sim/mujoco/lens.py, which reads K back from a model). A lens's
distortion travels as the camera's user data (lens.py says how, and draws it).

x2 states pixels in OpenCV's convention (the first pixel's centre at 0, 0): MuJoCo's image centre (W/2, H/2 in
continuous coordinates) is ((W - 1) / 2, (H - 1) / 2) in it.

A pose is given for the camera's OpenCV optical frame (x right, y down, z forward) in a robot frame (a body or a
site); a MuJoCo camera looks along its -z with +y up, so its frame is the optical frame turned half a turn about x
(OPTICAL_TO_MUJOCO). The camera stays on the body the robot file put it on (the world's camera order and the
bodies its stored poses name stay as they were): the pose is carried into that body's frame, which must be
rigidly joined to the reference frame (MuJoCo's weld groups), else the calibration is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import SpecError
from x2.envspec.camera_calibration import CameraCalibration, quat_to_rotation, rotation_to_quat
from x2.sim.mujoco.lens import DISTORTION_SLOTS, PRINCIPAL_SIGN

SENSOR_PITCH = 3e-6  # m per pixel of the sensor x2 declares (any pitch gives the same picture; this one is real)
OPTICAL_TO_MUJOCO = np.diag([1.0, -1.0, -1.0])  # columns: MuJoCo's camera axes in the optical frame


def principal_pixel(cal: CameraCalibration) -> tuple[float, float]:
    """MuJoCo's `principal_pixel` for the calibration's cx, cy (OpenCV pixel convention)."""
    return ((cal.cx + 0.5 - cal.width / 2) / PRINCIPAL_SIGN, (cal.cy + 0.5 - cal.height / 2) / PRINCIPAL_SIGN)


def apply_camera_calibration(spec: mujoco.MjSpec, cameras: Mapping[str, CameraCalibration],
                             where: str = "calibration") -> None:
    """Give each camera of `spec` named in `cameras` its intrinsics and, where one is given, its pose, in place.
    A camera the world lacks, a reference frame it lacks, or one not rigidly joined to the camera's body is one
    line naming `where`."""
    names = [c.name for c in spec.cameras]
    posed: list[tuple[mujoco.MjsCamera, CameraCalibration]] = []
    for name, cal in cameras.items():
        cam = spec.camera(name)
        if cam is None:
            raise SpecError(where, None, f"cameras.{name}", f"camera {name!r}",
                            f"a camera of the robot's world: {', '.join(names) or 'none'}")
        cam.resolution = [cal.width, cal.height]
        cam.sensor_size = [cal.width * SENSOR_PITCH, cal.height * SENSOR_PITCH]
        cam.focal_pixel = [cal.fx, cal.fy]
        cam.principal_pixel = list(principal_pixel(cal))
        if cal.distorted:  # the lens travels in the world's text as the camera's user data (x2/sim/mujoco/lens.py)
            spec.nuser_cam = max(spec.nuser_cam, DISTORTION_SLOTS)
            cam.userdata = [*cal.distortion, *[0.0] * (DISTORTION_SLOTS - len(cal.distortion))]
        if cal.pose is not None:
            # identity first: the compiled pose of the camera is then its frame's pose in its body
            cam.mode = mujoco.mjtCamLight.mjCAMLIGHT_FIXED
            cam.targetbody = ""
            cam.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
            cam.pos, cam.quat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
            posed.append((cam, cal))
    if not posed:
        return
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)  # at qpos0: only rigid offsets are read, which hold at any pose
    for cam, cal in posed:
        assert cal.pose is not None
        cid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, cal.name)
        body = int(model.cam_bodyid[cid])
        ref_world, ref_body = reference_frame(model, data, cal.pose.relative_to, where, cal.name)
        if model.body_weldid[ref_body] != model.body_weldid[body]:
            raise SpecError(where, None, f"cameras.{cal.name}.pose.relative_to", repr(cal.pose.relative_to),
                            f"a frame rigidly joined to the body camera {cal.name!r} is on "
                            f"({model.body(body).name}); a joint moves one against the other")
        body_world = _transform(data.xpos[body], data.xmat[body].reshape(3, 3))
        frame_in_body = _transform(model.cam_pos[cid], quat_to_rotation(np.asarray(model.cam_quat[cid])))
        cam_ref = cal.pose.matrix()
        cam_ref[:3, :3] = cam_ref[:3, :3] @ OPTICAL_TO_MUJOCO
        local = np.linalg.inv(frame_in_body) @ np.linalg.inv(body_world) @ ref_world @ cam_ref
        cam.pos = local[:3, 3].tolist()
        cam.quat = list(rotation_to_quat(local[:3, :3]))


def reference_frame(model: mujoco.MjModel, data: mujoco.MjData, name: str, where: str,
                    camera: str) -> tuple[Floats, int]:
    """The world transform (4x4) of body or site `name` at the data's state, and the body it belongs to."""
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    if bid >= 0:
        return _transform(data.xpos[bid], data.xmat[bid].reshape(3, 3)), bid
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
    if sid >= 0:
        return _transform(data.site_xpos[sid], data.site_xmat[sid].reshape(3, 3)), int(model.site_bodyid[sid])
    roots = [model.body(b).name for b in range(1, model.nbody) if model.body_parentid[b] == 0]
    flanges = [model.site(i).name for i in range(model.nsite) if model.site(i).name.endswith("_flange")]
    raise SpecError(where, None, f"cameras.{camera}.pose.relative_to", repr(name),
                    f"a body or site of the robot's model, e.g. its root {', '.join(roots) or 'body'} or "
                    f"{', '.join(flanges) or 'a flange site'}")


def optical_pose(model: mujoco.MjModel, data: mujoco.MjData, camera: str) -> Floats:
    """The 4x4 world transform of `camera`'s OpenCV optical frame at the data's state (cam_xpos/xmat current)."""
    cid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
    return _transform(data.cam_xpos[cid], data.cam_xmat[cid].reshape(3, 3) @ OPTICAL_TO_MUJOCO)


def _transform(pos: Floats, rot: Floats) -> Floats:
    t = np.eye(4)
    t[:3, :3] = rot
    t[:3, 3] = pos
    return t
