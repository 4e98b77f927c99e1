"""The renderer: `cameras` lists the world's cameras and its largest picture, and `renderer(cameras, size)` draws any
stored state of the world (kinematics only, its own state: the backend's stays as it was) with the picture, pose and
pinhole `render` and `camera_info` give at that state. The render pass, the readers of recorded episodes, the teleop
preview, the robot's portrait and `x2 doctor` draw through it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from x2.base.errors import DatasetError
from x2.envspec.env import EnvSpec
from x2.sim import Backend, ImageSize
from x2.sim.camera import FreeCamera

W, H = 128, 96
SIZE = ImageSize(H, W)


def _stored(backend: Backend, busy: Callable[[Backend, int], np.ndarray], ticks: int = 12) -> np.ndarray:
    """(ticks, S) states of a busy stretch after reset(0)."""
    backend.reset(0)
    states = []
    for action in busy(backend, ticks):
        backend.step(action)
        states.append(backend.get_state())
    return np.array(states)


def test_the_world_lists_its_cameras_and_its_largest_picture(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    have = backend.cameras
    assert set(env.robot.cameras) <= set(have.names) and len(set(have.names)) == len(have.names)
    assert have.fits(SIZE) and not have.fits(ImageSize(have.largest.height + 1, have.largest.width))
    assert have.missing(["head", "nope"]) == ["nope"]


def test_a_stored_state_is_drawn_as_render_draws_it_then(backend: Backend, env: EnvSpec,
                                                         busy: Callable[[Backend, int], np.ndarray]) -> None:
    states = _stored(backend, busy)
    cameras = env.robot.cameras
    seen = {}
    for t in (0, len(states) - 1):
        backend.set_state(states[t])
        seen[t] = {c: (backend.render(c, W, H), backend.camera_info(c, W, H)) for c in cameras}
    now = backend.get_state()
    with backend.renderer(cameras, SIZE) as renderer:
        assert renderer.cameras == tuple(cameras) and renderer.size == SIZE
        assert renderer.state_size == backend.state_size and renderer.description
        for t, frame in zip((0, len(states) - 1), renderer.frames(states[[0, -1]]), strict=True):
            for c in cameras:
                image, info = seen[t][c]
                assert frame[c].shape == (H, W, 3) and frame[c].dtype == np.uint8
                np.testing.assert_array_equal(frame[c], image)  # the very picture render drew at that state
                pinhole = renderer.intrinsics(c)
                assert (pinhole["height"], pinhole["width"], pinhole["fovy_deg"]) == (H, W, info.fovy_deg)
                np.testing.assert_array_equal(pinhole["intrinsics"], info.intrinsics)
                pos, rot = renderer.camera_frame(c)
                np.testing.assert_array_equal(pos, info.extrinsics[:3, 3])
                np.testing.assert_allclose(rot, info.extrinsics[:3, :3], atol=1e-12)
                pose = renderer.camera_pose(c)
                np.testing.assert_array_equal(pose[:3], pos)
                assert abs(np.linalg.norm(pose[3:]) - 1) < 1e-9
    np.testing.assert_array_equal(backend.get_state(), now)  # the backend's own state was left alone


def test_the_cameras_sit_on_their_bodies(backend: Backend, env: EnvSpec) -> None:
    backend.reset(0)
    wrist = f"{env.robot.arms[0].name}_wrist"
    with backend.renderer(("front", wrist), SIZE) as renderer:
        assert renderer.camera_body("front") == "world"  # the booth's
        assert renderer.camera_body(wrist) not in ("world", "")  # rides on the arm


def test_a_free_camera_sees_the_world_from_where_it_says(backend: Backend) -> None:
    backend.reset(0)
    with backend.renderer((), SIZE) as renderer:
        renderer.set_state(backend.get_state())
        lookat = backend.object_pos("block")
        image, view = renderer.render_free(FreeCamera(lookat, 1.5, 180.0, -30.0))
        assert image.shape == (H, W, 3) and image.std() > 5
        np.testing.assert_allclose([np.linalg.norm(view.forward), np.linalg.norm(view.up)], 1.0, atol=1e-6)
        assert abs(float(view.forward @ view.up)) < 1e-6
        np.testing.assert_allclose(np.linalg.norm(lookat - view.pos), 1.5, atol=1e-3)  # distance 1.5 m
        assert view.pos[2] > lookat[2] and 0 < view.fovy_deg < 180  # from above


def test_cameras_the_world_lacks_and_pictures_too_large_are_refused(backend: Backend) -> None:
    backend.reset(0)
    with pytest.raises(DatasetError, match=r"^cameras: found \['nope'\]; allowed: the model's cameras \["):
        backend.renderer(("head", "nope"), SIZE)
    largest = backend.cameras.largest
    with pytest.raises(DatasetError, match=rf"^size: found {largest.height + 1}x{largest.width}; allowed: up to "):
        backend.renderer(("head",), ImageSize(largest.height + 1, largest.width))


def test_the_streams_of_a_state_are_its_picture_a_depth_and_named_ids(
        backend: Backend, env: EnvSpec, busy: Callable[[Backend, int], np.ndarray]) -> None:
    """`shot` gives the picture `render` gives, a depth in metres and ids that the renderer's `segment_table` names
    (x2/sim/streams.py): what `x2 render --streams` stores."""
    states = _stored(backend, busy, ticks=2)
    cam = env.robot.cameras[0]
    with backend.renderer([cam], SIZE) as renderer:
        renderer.set_state(states[-1])
        shot = renderer.shot(cam, ("rgb", "depth", "segmentation"))
        assert shot.rgb is not None and shot.depth is not None and shot.segmentation is not None
        np.testing.assert_array_equal(shot.rgb, renderer.render(cam))
        assert shot.depth.shape == (H, W) and shot.depth.dtype == np.float32 and (shot.depth > 0).all()
        table = renderer.segment_table
        assert shot.segmentation.shape == (H, W) and int(shot.segmentation.max()) < len(table.names)
        assert table.kinds[0] == "background" and {"robot", "object", "scenery"} <= set(table.kinds)
        assert renderer.shot(cam, ("depth",)).rgb is None
