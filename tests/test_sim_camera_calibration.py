"""A calibration applied to a MuJoCo camera: the principal point's sign measured by a render, the pose carried into
the camera's body, and the refusals (x2/sim/mujoco/camera_calibration.py)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from x2.base.errors import SpecError
from x2.envspec.camera_calibration import CameraCalibration, CameraPose, rotation_to_quat
from x2.envspec.robot import load_robot
from x2.sim.mujoco.camera_calibration import apply_camera_calibration, optical_pose
from x2.sim.mujoco.robot import robot_mjcf_spec


def _sphere_world(point: tuple[float, float, float], width: int, height: int) -> mujoco.MjSpec:
    spec = mujoco.MjSpec()
    spec.visual.global_.offwidth, spec.visual.global_.offheight = width, height
    spec.worldbody.add_light(pos=[0, 0, 3], dir=[0, 0, -1])
    spec.worldbody.add_camera(name="cam", pos=[0.3, -0.2, 0.1], quat=[1, 0, 0, 0], fovy=45)
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.015, 0, 0], pos=list(point),
                            rgba=[1, 0, 0, 1])
    return spec


def _red_centroid(spec: mujoco.MjSpec, height: int, width: int) -> tuple[float, float]:
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, height, width) as r:
        r.update_scene(data, camera="cam")
        img = r.render()
    ys, xs = np.nonzero((img[..., 0] > 100) & (img[..., 1] < 80))
    assert xs.size > 3, "the sphere is not in the picture"
    return float(xs.mean()), float(ys.mean())  # pixel indices: OpenCV's convention


@pytest.mark.parametrize("size", [(120, 160), (60, 80)])
def test_a_rendered_point_lands_where_k_puts_it(size: tuple[int, int]) -> None:
    # a 160x120 calibration with the principal point well off centre on both axes; drawn at its size and at half
    pose = CameraPose("eye-to-hand", "world", (0.0, 0.0, 0.0), rotation_to_quat(np.eye(3)))  # optical = world axes
    cal = CameraCalibration("cam", 160, 120, 150.0, 160.0, 95.3, 48.6, pose=pose)
    point = np.array([0.06, -0.045, 0.7])  # world = optical frame: right, up (y down), ahead
    spec = _sphere_world(tuple(point), 160, 120)
    apply_camera_calibration(spec, {"cam": cal})
    h, w = size
    u, v = _red_centroid(spec, h, w)
    k = cal.matrix(h, w)
    expected = k @ (point / point[2])
    assert abs(u - expected[0]) < 0.35 * w / 160 + 0.2 and abs(v - expected[1]) < 0.35 * h / 120 + 0.2, \
        (u, v, expected)


def test_a_pose_is_carried_into_the_cameras_body() -> None:
    robot = load_robot("aloha").model
    spec = robot_mjcf_spec(robot)
    rot = np.array([[0.0, -1.0, 0.0], [-0.6, 0.0, -0.8], [0.8, 0.0, -0.6]])  # looking forward and down
    pose = CameraPose("eye-to-hand", "frame", (0.1, 0.02, 0.6), rotation_to_quat(rot))
    apply_camera_calibration(spec, {"head": CameraCalibration("head", 64, 48, 60.0, 60.0, 31.5, 23.5, pose=pose)})
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    frame = model.body("frame").id
    frame_world = np.eye(4)
    frame_world[:3, :3], frame_world[:3, 3] = data.xmat[frame].reshape(3, 3), data.xpos[frame]
    np.testing.assert_allclose(optical_pose(model, data, "head"), frame_world @ pose.matrix(), atol=2e-6)
    assert model.camera("head").id == [c.name for c in spec.cameras].index("head")  # the world's order is kept


def test_refusals_name_the_camera_and_frame() -> None:
    robot = load_robot("aloha").model
    cal = CameraCalibration("top", 64, 48, 60.0, 60.0, 31.5, 23.5)
    with pytest.raises(SpecError, match=r"cameras\.top: found camera 'top'; allowed: .*head"):
        apply_camera_calibration(robot_mjcf_spec(robot), {"top": cal})
    moving = CameraPose("eye-in-hand", "frame", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    with pytest.raises(SpecError, match=r"relative_to: found 'frame'; allowed: a frame rigidly joined"):
        apply_camera_calibration(robot_mjcf_spec(robot), {"left_wrist": CameraCalibration(
            "left_wrist", 64, 48, 60.0, 60.0, 31.5, 23.5, pose=moving)})


def test_calibrate_camera_refuses_a_camera_the_robot_lacks(tmp_path) -> None:
    from x2.sim.mujoco.camera_twin import calibrated_camera

    (tmp_path / "c.yaml").write_text("width: 64\nheight: 48\nfx: 60\nfy: 60\ncx: 31.5\ncy: 23.5\n")
    with pytest.raises(SpecError, match=r"robot 'aloha': --camera: found 'top'; allowed: a camera of robot 'aloha': "
                                        r"head, left_wrist, right_wrist"):
        calibrated_camera(load_robot("aloha").model, "top", tmp_path / "c.yaml")
    wrist = calibrated_camera(load_robot("aloha").model, "left_wrist", tmp_path / "c.yaml")
    assert wrist.pose is None and wrist.fx == 60.0



def test_a_reference_frame_the_robot_lacks_is_named_with_what_it_has() -> None:
    pose = CameraPose("eye-to-hand", "base_link", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    cal = CameraCalibration("head", 64, 48, 60.0, 60.0, 31.5, 23.5, pose=pose)
    with pytest.raises(SpecError, match=r"pose\.relative_to: found 'base_link'; allowed: a body or site of the "
                                        r"robot's model, e\.g\. its root frame or left_flange, right_flange"):
        apply_camera_calibration(robot_mjcf_spec(load_robot("arx-r5").model), {"head": cal})
