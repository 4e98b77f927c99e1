"""A camera's calibration (x2/envspec/camera_calibration.py) applied to a MuJoCo world spec before it compiles.

MuJoCo takes real intrinsics on a camera: `resolution` (pixels), `sensor_size` (m; setting it makes MuJoCo use the
rest and derive `fovy`), `focal_pixel` (fx, fy) and `principal_pixel`, an offset of the principal point from the
image centre. Its sign is the thing to mind: MuJoCo's convention changed across releases, so it is measured, not
assumed: tests/test_sim_mujoco_camera_calibration.py renders a sphere at a known point and checks its pixel
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
from pathlib import Path

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Image
from x2.base.errors import SpecError
from x2.envspec.camera_calibration import CameraCalibration, CameraPose, quat_to_rotation, rotation_to_quat
from x2.envspec.camera_files import calibration_of, read_hand_eye, read_intrinsics
from x2.envspec.env import RobotSpec
from x2.sim.camera import ImageSize
from x2.sim.mujoco.jaw import world_jaw
from x2.sim.mujoco.lens import DISTORTION_SLOTS, PRINCIPAL_SIGN
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.robot import robot_mjcf_spec
from x2.sim.mujoco.state import STATE_SPEC

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


def default_reference(spec: mujoco.MjSpec, model: mujoco.MjModel, camera: str, arms: tuple[str, ...],
                      mount: str) -> str:
    """The x2 frame a hand-eye result is relative to when the user names none: eye-to-hand, the robot's root body
    (its mount: `frame`, `stand`, the mobile base), the robot_base_frame of a fixed camera; eye-in-hand, the
    `<arm>_flange` site (where x2 mounts the gripper: the robot_effector_frame) of the arm whose hand carries the
    camera."""
    if mount == "eye-to-hand":
        return str(spec.worldbody.first_body().name)
    body = int(model.cam_bodyid[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)])
    for arm in arms:
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"{arm}_flange")
        if sid >= 0 and model.body_weldid[model.site_bodyid[sid]] == model.body_weldid[body]:
            return f"{arm}_flange"
    raise SpecError(f"camera {camera!r}", None, "--eye-in-hand", f"camera {camera!r}, which no arm's hand carries",
                    "--eye-to-hand for a fixed camera, or --relative-to BODY_OR_SITE")


def rigid_to_world(model: mujoco.MjModel, camera: str) -> bool:
    """Whether `camera` is fixed in the world (no joint between it and the world body)."""
    return bool(model.body_weldid[model.cam_bodyid[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)]]
                == 0)


def calibrated_camera(robot: RobotSpec, camera: str, intrinsics: Path, hand_eye: Path | None = None,
                     mount: str | None = None, relative_to: str | None = None) -> CameraCalibration:
    """Camera `camera` of `robot` calibrated from a camera file and a hand-eye result (read by
    x2/envspec/camera_calibration.py), checked by applying it to the robot's own model: a camera the robot lacks,
    a reference frame it lacks or one that moves against the camera is refused in one line."""
    if camera not in robot.cameras:
        raise SpecError(f"robot {robot.name!r}", None, "--camera", repr(camera),
                        f"a camera of robot {robot.name!r}: {', '.join(robot.cameras) or 'none'}")
    intr = read_intrinsics(intrinsics)
    pose = None
    if hand_eye is not None:
        he = read_hand_eye(hand_eye)
        if mount is not None and he.mount is not None and he.mount != mount:
            raise SpecError(str(hand_eye), None, "eye_on_hand", he.mount, f"--{mount} as asked (or drop the flag)")
        spec = robot_mjcf_spec(robot)
        model = spec.compile()
        chosen = mount or he.mount or ("eye-to-hand" if rigid_to_world(model, camera) else "eye-in-hand")
        ref = relative_to or default_reference(spec, model, camera, tuple(a.name for a in robot.arms), chosen)
        pose = CameraPose("eye-in-hand" if chosen == "eye-in-hand" else "eye-to-hand", ref,
                          (float(he.matrix[0, 3]), float(he.matrix[1, 3]), float(he.matrix[2, 3])),
                          rotation_to_quat(he.matrix[:3, :3]))
    cal = calibration_of(camera, intr, pose, str(intrinsics), None if hand_eye is None else str(hand_eye),
                         str(intrinsics))
    apply_camera_calibration(robot_mjcf_spec(robot), {camera: cal}, f"robot {robot.name!r}")
    return cal


def twin_picture(robot: RobotSpec, cameras: Mapping[str, CameraCalibration], camera: str,
                 joints: Mapping[str, float], size: ImageSize) -> tuple[Image, Bools]:
    """The robot alone (no booth, no objects), its cameras calibrated, at `joints` (joint name -> qpos, and
    `<arm>_gripper` -> the gripper's opening 0..1 as the action gives it; the rest at their rest), drawn by
    `camera` at `size` through its lens: the picture and where the robot is in it. What a real frame taken by that
    camera at that joint state should show of the robot."""
    spec = robot_mjcf_spec(robot)
    spec.visual.global_.offwidth = max(spec.visual.global_.offwidth, size.width)
    spec.visual.global_.offheight = max(spec.visual.global_.offheight, size.height)
    apply_camera_calibration(spec, cameras, f"robot {robot.name!r}")
    model = spec.compile()
    data = mujoco.MjData(model)
    openings = {f"{a.name}_gripper": a for a in robot.arms}
    g = robot.gripper
    jaw = world_jaw(spec.to_xml(), robot) if g.drive != "slide" and any(n in openings for n in joints) else None
    for name, value in joints.items():
        arm = openings.get(name)
        if arm is not None:  # an opening: the gripper's joints where that command puts them
            values: Floats
            if jaw is None:
                values = np.full(len(arm.gripper_joints), g.closed_ctrl + value * (g.open_ctrl - g.closed_ctrl))
            else:
                values = np.array([np.interp(value, jaw.commands, jaw.qpos[:, j]) for j in range(jaw.qpos.shape[1])])
            for joint, q in zip(arm.gripper_joints, values, strict=True):
                data.qpos[model.jnt_qposadr[model.joint(joint).id]] = q
            continue
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise SpecError(f"robot {robot.name!r}", None, "joints", repr(name), "the robot's joints")
        data.qpos[model.jnt_qposadr[jid]] = value
    state = np.empty(mujoco.mj_stateSize(model, STATE_SPEC))
    mujoco.mj_getState(model, data, state, STATE_SPEC)
    with MujocoRenderer(model, [camera], size) as renderer:
        renderer.set_state(state)
        return renderer.render(camera), renderer.silhouette(camera)
