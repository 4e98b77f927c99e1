"""The operator's camera preview: a real render process fed through the loop hook, and its picture in
the terminal (half blocks, two pixel rows per text row); its depth and segmentation as pictures."""

from __future__ import annotations

import time

import numpy as np
import pytest
from rich.console import Console

from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.stream_colours import BACKGROUND_COLOUR, DEPTH_STOPS, depth_colours, segment_colour
from x2.sim.streams import SegmentTable, Shot
from x2.teleop.live import Picture
from x2.teleop.preview import Preview, PreviewConfig, stream_picture


def _next_frame(view: Preview, after: int) -> np.ndarray:
    while view.frames <= after:  # (a preview that never renders again is the test timeout's to end)
        time.sleep(0.05)
    image = view.image()
    assert image is not None
    return image


@pytest.mark.timeout(90)
def test_preview_renders_what_the_loop_publishes() -> None:
    backend = MujocoBackend(load_env("pick_place"))
    backend.reset(0)
    with Preview(PreviewConfig(camera="head", width=48, height=32, hz=10.0)) as view:
        assert view.image() is None
        view.hook(0, backend)  # an episode's first tick: the world, then the state
        first = _next_frame(view, 0)
        assert first.shape == (32, 48, 3) and first.std() > 10  # a scene, not a blank
        # Both arms raised in front of the head camera: the next frames show it.
        action = backend.home_action()
        for j in (1, 8):
            action[j] += 0.9
        for _ in range(60):
            backend.step(action)
        view.hook(5, backend)  # a later tick: only the state is sent
        moved = _next_frame(view, view.frames)
        assert np.abs(moved.astype(int) - first.astype(int)).mean() > 2
    console = Console(width=80, force_terminal=True, color_system="truecolor", record=True)
    console.print(Picture(moved))
    text = console.export_text()
    assert text.count("▀") == 48 * 16 and len(text.splitlines()) == 16


@pytest.mark.timeout(90)
def test_preview_shows_depth_as_contact_sheets_colour_it() -> None:
    backend = MujocoBackend(load_env("pick_place"))
    backend.reset(0)
    with Preview(PreviewConfig(camera="head", width=48, height=32, hz=10.0, stream="depth")) as view:
        view.hook(0, backend)
        frame = _next_frame(view, 0)
    assert frame.shape == (32, 48, 3)
    # MuJoCo's own depth and segmentation render of the same state, coloured by the sheets' colormap over the
    # depth the camera sees; where it sees nothing (the far clip), the background's colour
    import mujoco

    model = backend.model
    with mujoco.Renderer(model, 32, 48) as r:
        r.update_scene(backend.data, camera="head")
        r.enable_depth_rendering()
        depth = r.render().astype(np.float64)
        r.disable_depth_rendering()
        r.enable_segmentation_rendering()
        seen = r.render()[..., 0] >= 0
    assert seen.any()  # (the booth fills the head camera: the far-clip case is the test below)
    near, far = np.floor(depth[seen].min() * 100) / 100, np.ceil(depth[seen].max() * 100) / 100
    expected = depth_colours((depth - near) / (far - near))
    assert np.abs(frame[seen].astype(int) - expected[seen]).max() <= 2
    assert (frame[~seen] == BACKGROUND_COLOUR).all()


def test_stream_picture_colours_depth_and_ids_as_the_sheets_do() -> None:
    table = SegmentTable(("nothing", "link1", "plate"), ("background", "robot", "object"))
    ids = np.array([[1, 2], [1, 0]], np.uint16)
    depth = np.array([[0.5, 1.0], [1.5, 50.0]], np.float32)
    coloured = stream_picture(Shot(depth=depth, segmentation=ids), "depth", table)
    # the range is that of the pixels that see something (0.5-1.5 m): near the first stop, far the last
    assert coloured[0, 0].tolist() == list(DEPTH_STOPS[0]) and coloured[1, 0].tolist() == list(DEPTH_STOPS[-1])
    assert coloured[1, 1].tolist() == list(BACKGROUND_COLOUR)
    colours = stream_picture(Shot(segmentation=ids), "segmentation", table)
    assert colours[0, 0].tolist() == list(segment_colour("robot", "link1")) == colours[1, 0].tolist()
    assert colours[0, 1].tolist() == list(segment_colour("object", "plate"))
    assert colours[1, 1].tolist() == list(BACKGROUND_COLOUR)
    rgb = np.zeros((2, 2, 3), np.uint8)
    assert stream_picture(Shot(rgb=rgb), "rgb", table) is rgb
