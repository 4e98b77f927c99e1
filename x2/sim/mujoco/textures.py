"""Texture images a world carries: named PNG bytes beside its MJCF text.

A world x2 records is self-contained (x2.sim.mujoco.recorded_xml): MJCF text that names no file. An object made
from a textured mesh (`x2 objects add`, x2.meshes) keeps its image, so a world that holds it is the text plus a few
images, each referred to by ``<texture file="NAME">`` where NAME is `texture_name` of its bytes
(``tex-<16 hex digits of sha256>.png``): the same image always has the same name, so worlds that share it name it
alike and a name cannot mean two images. MuJoCo compiles such a world from the text and a mapping NAME -> bytes
(`MjModel.from_xml_string(text, assets)`), reading no file.

`carry_textures` renames the textures of an object's MJCF (its ``file="NAME.png"`` beside the MJCF) to their
digest names and returns the bytes; `check_textures` is what a world read from a file must satisfy: digest
names that match their bytes, PNG images of bounded size.
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
from collections.abc import Mapping
from pathlib import Path

import mujoco

from x2.base.errors import DatasetError, SpecError

TEXTURE_NAME = re.compile(r"^tex-[0-9a-f]{16}\.png$")
MAX_TEXTURE_BYTES = 4 * 1024 * 1024  # a 512x512 RGB PNG (what `x2 objects add` writes at most) is < 1 MB
MAX_TEXTURE_SIDE = 1024  # pixels: MuJoCo decodes the PNG into width x height x 3 bytes
MAX_TEXTURES = 32  # per world
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def texture_name(data: bytes) -> str:
    """The name a world gives the image `data`: its digest, so that equal images share a name."""
    return f"tex-{hashlib.sha256(data).hexdigest()[:16]}.png"


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's header; None when `data` is not a PNG."""
    if len(data) < 24 or not data.startswith(_PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def texture_problem(name: str, data: bytes) -> str | None:
    """What is wrong with the image `data` carried as `name` (None: nothing)."""
    if not TEXTURE_NAME.match(name):
        return f"texture name {name[:40]!r} (allowed: tex-<16 hex digits>.png)"
    if len(data) > MAX_TEXTURE_BYTES:
        return f"texture {name} of {len(data)} bytes (allowed: at most {MAX_TEXTURE_BYTES})"
    size = png_size(data)
    if size is None:
        return f"texture {name} that is not a PNG image"
    if not all(0 < side <= MAX_TEXTURE_SIDE for side in size):
        return f"texture {name} of {size[0]}x{size[1]} pixels (allowed: at most {MAX_TEXTURE_SIDE} a side)"
    if texture_name(data) != name:
        return f"texture {name} whose bytes have another digest ({texture_name(data)})"
    return None


def check_textures(textures: Mapping[str, bytes], where: str) -> None:
    """Raise DatasetError("<where>: textures: found ...; allowed: ...") unless every image is sound."""
    if len(textures) > MAX_TEXTURES:
        raise DatasetError(f"{where}: textures: found {len(textures)} images; allowed: at most {MAX_TEXTURES}")
    for name, data in textures.items():
        if not isinstance(data, bytes):
            raise DatasetError(f"{where}: textures: found {type(data).__name__} for {name[:40]!r}; allowed: PNG bytes")
        problem = texture_problem(name, data)
        if problem is not None:
            raise DatasetError(f"{where}: textures: found {problem}; allowed: digest-named PNG images")


@functools.lru_cache(maxsize=64)
def _read_image(path: Path, mtime_ns: int) -> bytes:
    return path.read_bytes()


def carry_textures(spec: mujoco.MjSpec, mjcf: Path) -> dict[str, bytes]:
    """Rename each texture file of `spec` (an object's MJCF read from `mjcf`) to its digest name and return the
    images by that name. Only PNG files beside the MJCF are taken (as `x2 objects add` writes them)."""
    carried: dict[str, bytes] = {}
    for texture in spec.textures:
        if not texture.file:
            continue
        path = mjcf.parent / (spec.texturedir or "") / texture.file
        if path.suffix.lower() != ".png" or not path.is_file():
            raise SpecError(str(mjcf), None, "texture", f"file {texture.file!r} (not a PNG file beside it)",
                            "a PNG image in the object's folder")
        data = _read_image(path.resolve(), path.stat().st_mtime_ns)
        name = texture_name(data)
        problem = texture_problem(name, data)
        if problem is not None:
            raise SpecError(str(mjcf), None, "texture", problem, "a PNG image of at most "
                            f"{MAX_TEXTURE_SIDE}x{MAX_TEXTURE_SIDE} pixels")
        texture.file = name
        carried[name] = data
    return carried
