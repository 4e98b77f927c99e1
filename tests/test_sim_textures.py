"""A world's images (x2/sim/mujoco/textures.py): a recorded world may name a texture file only when it carries the
image under its digest name, as a sound PNG of bounded size; anything else is one DatasetError line before MuJoCo
reads a byte."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from x2.base.errors import DatasetError
from x2.sim.mujoco.recorded_xml import check_world_xml, compile_world
from x2.sim.mujoco.textures import MAX_TEXTURE_SIDE, png_size, texture_name


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((height, width, 3), 200, np.uint8)).save(out, format="PNG")
    return out.getvalue()


def world(file: str) -> str:
    return (f'<mujoco><asset><texture name="t" type="2d" file="{file}"/><material name="m" texture="t"/></asset>'
            '<worldbody><geom type="box" size="0.1 0.1 0.1" material="m"/></worldbody></mujoco>')


def test_a_carried_image_compiles_from_its_bytes_alone() -> None:
    data = png(8, 4)
    name = texture_name(data)
    assert png_size(data) == (8, 4) and name.startswith("tex-") and name == texture_name(png(8, 4))
    model = compile_world(world(name), "episode.h5", {name: data})
    assert model.ntex == 1 and (model.tex_width[0], model.tex_height[0]) == (8, 4)


@pytest.mark.parametrize(("file", "textures", "found"), [
    ("tex-0123456789abcdef.png", {}, '<texture file="tex-0123456789abcdef.png">'),  # named, not carried
    ("/etc/passwd", {}, '<texture file="/etc/passwd">'),
    ("cup.png", {"cup.png": png(4, 4)}, "texture name 'cup.png'"),
    ("x", {"tex-0123456789abcdef.png": png(4, 4)}, "whose bytes have another digest"),
    ("x", {texture_name(b"GIF89a" + bytes(40)): b"GIF89a" + bytes(40)}, "that is not a PNG image"),
    ("x", {texture_name(png(MAX_TEXTURE_SIDE + 1, 2)): png(MAX_TEXTURE_SIDE + 1, 2)}, f"{MAX_TEXTURE_SIDE + 1}x2"),
])
def test_anything_else_is_refused_before_mujoco(file: str, textures: dict[str, bytes], found: str) -> None:
    with pytest.raises(DatasetError) as err:
        check_world_xml(world(file), "episode.h5", textures)
    message = str(err.value)
    assert message.startswith("episode.h5: ") and found in message and "\n" not in message
