"""Images and cameras: `render(camera, w, h)` is an (h, w, 3) uint8 picture of the current state, and
`camera_info` is the pinhole model that picture was taken with (exporters store it: a point projected with it
lands where the picture shows that point), with the camera where the MuJoCo view has it."""

from __future__ import annotations

import numpy as np

from x2.envspec.env import EnvSpec
from x2.sim import Backend, CameraInfo, ImageSize

W, H = 128, 96  # small: the contract is about shapes and geometry, not the look


def _pixel(info: CameraInfo, point: np.ndarray) -> tuple[int, int]:
    """(u, v) of a world point (OpenGL camera axes: -z forward, +y up; v grows downwards)."""
    rot, pos = info.extrinsics[:3, :3], info.extrinsics[:3, 3]
    cam = rot.T @ (point - pos)
    assert cam[2] < 0, "behind the camera"
    k = info.intrinsics
    u, v = k[0, 2] + k[0, 0] * cam[0] / -cam[2], k[1, 2] - k[1, 1] * cam[1] / -cam[2]
    assert 0 <= u < info.width and 0 <= v < info.height, (u, v)
    return int(u), int(v)


def test_every_camera_renders_an_h_by_w_rgb_picture(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    for camera in env.robot.cameras:
        img = backend.render(camera, W, H)
        assert img.shape == (H, W, 3) and img.dtype == np.uint8
        assert img.std() > 5  # a picture, not a blank
    assert backend.render("head", W // 2, H // 2).shape == (H // 2, W // 2, 3)  # sizes mix in one backend


def test_camera_info_is_a_pinhole_of_that_size(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    for camera in env.robot.cameras:
        for w, h in ((W, H), (W // 2, H // 2)):
            info = backend.camera_info(camera, w, h)
            assert (info.name, info.width, info.height) == (camera, w, h)
            assert 0 < info.fovy_deg < 180
            f = 0.5 * h / np.tan(np.deg2rad(info.fovy_deg) / 2)  # square pixels, principal point at the centre
            np.testing.assert_allclose(info.intrinsics, [[f, 0, w / 2], [0, f, h / 2], [0, 0, 1]])
            rot = info.extrinsics[:3, :3]
            np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-9)
            assert np.linalg.det(rot) > 0
            np.testing.assert_array_equal(info.extrinsics[3], [0, 0, 0, 1])


def test_camera_poses_agree_with_the_mujoco_view_and_follow_the_arm(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    for camera in env.robot.cameras:
        info = backend.camera_info(camera, W, H)
        cid = backend.model.camera(camera).id
        np.testing.assert_allclose(info.extrinsics[:3, 3], backend.data.cam_xpos[cid], atol=1e-9)
        np.testing.assert_allclose(info.extrinsics[:3, :3], backend.data.cam_xmat[cid].reshape(3, 3), atol=1e-9)
        assert info.fovy_deg == float(backend.model.cam_fovy[cid])
    wrist = f"{env.robot.arms[0].name}_wrist"
    before = {c: backend.camera_info(c, W, H).extrinsics for c in (wrist, "head")}
    joint = env.robot.arms[0].joints[0]
    backend.set_joint_values({joint: backend.joint_value(joint) + 0.4})
    assert not np.allclose(backend.camera_info(wrist, W, H).extrinsics, before[wrist])  # rides on the arm
    np.testing.assert_array_equal(backend.camera_info("head", W, H).extrinsics, before["head"])


def test_a_projected_object_is_where_the_picture_shows_it(backend: Backend) -> None:
    backend.reset(0)
    centre = backend.object_pos("block") + np.array([0.0, 0.0, 0.025])  # (its origin is its bottom face)
    u, v = _pixel(backend.camera_info("head", W, H), centre)
    seen = backend.render("head", W, H)[v, u].astype(int)
    backend.set_object_pose("block", backend.object_pos("block") + np.array([0.0, 0.4, 0.0]))
    gone = backend.render("head", W, H)[v, u].astype(int)  # the picture follows the state
    assert np.abs(seen - gone).sum() > 60, (u, v, seen, gone)


def test_shot_draws_the_current_states_streams_in_one_call(backend: Backend, env: EnvSpec) -> None:
    """`shot(camera, streams, w, h)`: what a renderer of the world set to `get_state()` shoots; its rgb is `render`'s
    picture (what `x2 eval` sends a policy that reads depth beside the picture)."""
    backend.reset(0)
    for camera in env.robot.cameras:
        shot = backend.shot(camera, ("rgb", "depth"), W, H)
        assert shot.rgb is not None and shot.depth is not None and shot.segmentation is None
        np.testing.assert_array_equal(shot.rgb, backend.render(camera, W, H))
        assert shot.depth.shape == (H, W) and shot.depth.dtype == np.float32
        with backend.renderer([camera], ImageSize(H, W)) as renderer:
            renderer.set_state(backend.get_state())
            want = renderer.shot(camera, ("depth",)).depth
        np.testing.assert_array_equal(shot.depth, want)
        assert backend.shot(camera, ("depth",), W, H).rgb is None
