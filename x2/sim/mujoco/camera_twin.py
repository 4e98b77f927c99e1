"""A robot's camera calibrated from a lab's files (`x2 calibrate camera`) and the robot alone drawn through it.

`calibrated_camera` reads the camera and hand-eye files (x2/envspec/camera_files.py) and checks the result by
applying it to the robot's own model (x2/sim/mujoco/camera_calibration.py); `twin_picture` draws the robot at a
recorded joint state through the calibrated lens, for the overlay on a real frame (x2/render/calibration_overlay.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Image
from x2.base.errors import SpecError
from x2.envspec.camera_calibration import CameraCalibration, CameraPose, rotation_to_quat
from x2.envspec.camera_files import calibration_of, read_hand_eye, read_intrinsics
from x2.envspec.env import RobotSpec
from x2.sim.camera import ImageSize
from x2.sim.mujoco.camera_calibration import apply_camera_calibration
from x2.sim.mujoco.jaw import world_jaw
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.robot import robot_mjcf_spec
from x2.sim.mujoco.state import STATE_SPEC


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
