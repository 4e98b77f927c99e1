"""The textured lab look (x2/assets/looks/lab_looks.yaml, x2/sim/mujoco/surface_images.py, x2/sim/mujoco/look.py)
and the renderer choice (x2/sim/camera.py: RENDERERS): the look's world compiles and draws, the same seed gives
the same bytes, the booth stays as it was unless the look is asked for, the white plate stands out from the lab's
table as it does not from the booth's, and a look or renderer x2 lacks is one line, exit 2.

Worlds of hook_pull drawn at 60x80 from the head camera: a few seconds.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers.x2_cli import run_x2

from x2.augment.compose import compose_world
from x2.base.errors import X2Error
from x2.envspec import load_env
from x2.envspec.scenery import find_look
from x2.envspec.schema import IMAGE_TEXTURES
from x2.sim import make_backend
from x2.sim.camera import RENDERER_ENV, CameraError, ImageSize, choose_renderer
from x2.sim.mujoco.look import sample_look
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.state import STATE_SPEC
from x2.sim.mujoco.surface_images import SIDE, surface_png
from x2.sim.mujoco.textures import check_textures
from x2.sim.mujoco.world import object_body

SEED = 11
SIZE = ImageSize(60, 80)


def _world(look: str | None) -> tuple[str, dict[str, bytes], np.ndarray]:
    env = load_env("hook_pull")
    if look is not None:
        env = dataclasses.replace(env, appearance=(find_look(env.scene_name, look),))
    backend = make_backend(env)
    try:
        info = backend.reset(SEED)
        assert (info.appearance is None) == (look is None)
        return backend.model_xml(), backend.model_textures(), backend.get_state()
    finally:
        backend.close()


def test_surface_images_are_pure_functions_of_kind_and_colours() -> None:
    for kind in IMAGE_TEXTURES:
        png = surface_png(kind, (0.6, 0.4, 0.2), (0.3, 0.2, 0.1))
        surface_png.cache_clear()
        assert surface_png(kind, (0.6, 0.4, 0.2), (0.3, 0.2, 0.1)) == png  # made again, not only cached
        assert png != surface_png(kind, (0.5, 0.4, 0.2), (0.3, 0.2, 0.1))
        assert png[16:24] == SIDE.to_bytes(4, "big") * 2  # the PNG header's width and height
    assert len({surface_png(k, (0.6, 0.4, 0.2), (0.3, 0.2, 0.1)) for k in IMAGE_TEXTURES}) == 3
    with pytest.raises(X2Error, match=r"^texture: found 'marble'; allowed: one of wood, concrete, fabric$"):
        surface_png("marble", (0.6, 0.4, 0.2), (0.3, 0.2, 0.1))


def _plate_contrast(xml: str, textures: dict[str, bytes], state: np.ndarray) -> float:
    """Mean colour distance (0..255) between the plate's pixels and the table top's around it, head camera."""
    model = mujoco.MjModel.from_xml_string(xml, textures)
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, state, STATE_SPEC)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, SIZE.height, SIZE.width) as renderer:
        renderer.update_scene(data, camera="head")
        rgb = renderer.render().astype(np.float64)
        renderer.enable_segmentation_rendering()
        renderer.update_scene(data, camera="head")
        ids = renderer.render()
    geom = ids[..., 0] * (ids[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM))  # geom ids where a geom is seen
    plate_body = model.body(object_body("plate")).id
    plate = np.isin(geom, [g for g in range(model.ngeom) if model.geom_bodyid[g] == plate_body]) & (ids[..., 1] >= 0)
    table = (geom == model.geom("table_top").id) & (ids[..., 1] >= 0)
    assert plate.sum() > 20 and table.sum() > 200
    return float(np.linalg.norm(rgb[plate].mean(axis=0) - rgb[table].mean(axis=0)))


def test_the_lab_look_compiles_draws_deterministically_and_shows_the_plate() -> None:
    booth_xml, booth_textures, state = _world(None)
    lab_xml, lab_textures, lab_state = _world("lab")
    assert np.array_equal(state, lab_state)  # the look draws from its own stream: layout and state unchanged
    assert booth_textures == {} and "scenery_" not in booth_xml  # the booth as it always was
    assert len(lab_textures) == 3 and all(name in lab_xml for name in lab_textures)  # wood, concrete, fabric
    check_textures(lab_textures, "the lab world")  # digest names, PNGs: what a recorded world must carry
    assert _world("lab")[:2] == (lab_xml, lab_textures)  # same seed, same bytes
    booth, lab = _plate_contrast(booth_xml, booth_textures, state), _plate_contrast(lab_xml, lab_textures, state)
    assert booth < 25 < lab, (booth, lab)  # white on white in the booth; a white plate on wood in the lab


def test_an_augmented_world_carries_the_look_images() -> None:
    xml, textures, _ = _world(None)
    look = sample_look(find_look("hook_booth", "lab_plain"), np.random.default_rng(0))
    text, images = compose_world(xml, look, [], {}, 1 / 480, "test world", textures)
    assert len(images) == 3 and all(name in text for name in images)
    assert mujoco.MjModel.from_xml_string(text, images).ntex >= 3


def test_unknown_look_or_renderer_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "p.png"
    for args, pattern in ((["tasks", "preview", "hook_pull", "--seeds", "1", "--out", str(out), "--look", "marble"],
                           r"error: --look: found 'marble'; allowed: one of lab, lab_plain, "),  # (and more)
                          (["render", str(tmp_path / "none"), "--renderer", "vulkan"],
                           r"error: --renderer: found 'vulkan'; allowed: one of classic, filament$")):
        done = run_x2(args, cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert re.match(pattern, done.stderr.strip()), done.stderr
    assert not out.exists()
    with pytest.raises(X2Error, match=r"^--renderer: found 'ogl'; allowed: one of classic, filament$"):
        choose_renderer("ogl")
    # Filament without an X display: refused when the renderer is made, before any frame
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv(RENDERER_ENV, "filament")
    model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><camera name='c'/></worldbody></mujoco>")
    with pytest.raises(CameraError, match=r"^renderer: found 'filament' without an X display .*; allowed: classic"):
        MujocoRenderer(model, ["c"], SIZE)
    monkeypatch.setenv(RENDERER_ENV, "vulkan")
    with pytest.raises(X2Error, match=r"^X2_RENDERER: found 'vulkan'; allowed: one of classic, filament$"):
        MujocoRenderer(model, ["c"], SIZE)
