"""An object's texture: the image and the UVs of its visual mesh, kept so that a world shows what the file shows.

A mesh file whose every part is textured by one image (an OBJ with one `map_Kd`, a GLB with one base colour
texture: most scanned or modelled household objects) keeps it: the image resized to at most `MAX_SIDE` pixels a
side (a world carries its images in every episode file, x2/sim/mujoco/textures.py) and saved as RGB PNG, and the
visual mesh gets a UV per vertex (MJCF `<mesh texcoord>`, inline like its vertices). A file with several images,
or parts without one, keeps its mean colours instead (x2.meshes.source): one image per object is what a world
names by digest and what a contact sheet can show.

The visual mesh is decimated (x2.meshes.pieces.visual_mesh) from the merged mesh, which has one vertex where the
file has several at a UV seam; each kept vertex takes the UV of the file's nearest vertex, so the picture is the
file's but for a smear along seams. A skin of at most the vertex budget is kept exactly as the file has it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import trimesh
from PIL import Image

from x2.base.arrays import Floats, Ints

MAX_SIDE = 512  # pixels: a 512x512 RGB PNG is < 1 MB, and an object fills a few hundred pixels of a camera


@dataclass(frozen=True)
class Skin:
    vertices: Floats  # (n, 3) as the file has them (not merged), in the object frame once `placed`
    faces: Ints  # (m, 3)
    uv: Floats  # (n, 2) u right, v up the image, as OBJ and glTF readers give them (trimesh)
    png: bytes  # RGB, at most MAX_SIDE a side


def _image(part: trimesh.Trimesh) -> Image.Image | None:
    visual = part.visual
    if not isinstance(visual, trimesh.visual.TextureVisuals) or visual.uv is None or len(visual.uv) != len(
            part.vertices):
        return None
    material = visual.material
    image = getattr(material, "image", None) or getattr(material, "baseColorTexture", None)
    return image if isinstance(image, Image.Image) else None


def png_of(image: Image.Image) -> bytes:
    """The image as RGB PNG of at most MAX_SIDE a side (the same image: the same bytes)."""
    rgb = image.convert("RGB")
    if max(rgb.size) > MAX_SIDE:
        scale = MAX_SIDE / max(rgb.size)
        rgb = rgb.resize((max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale))),
                         Image.Resampling.LANCZOS)
    out = io.BytesIO()
    rgb.save(out, format="PNG")
    return out.getvalue()


def read_skin(parts: list[trimesh.Trimesh], scale: float) -> Skin | None:
    """The parts' one texture and UVs (vertices scaled to metres, not yet turned or moved); None unless every part
    is textured by the same image."""
    images = [_image(p) for p in parts]
    if not images or any(i is None for i in images):
        return None
    first = images[0]
    assert first is not None
    if any(i is not first and (i is None or i.tobytes() != first.tobytes()) for i in images[1:]):
        return None
    uvs = [np.asarray(p.visual.uv, dtype=np.float64) for p in parts  # (each a TextureVisuals: _image says so)
           if isinstance(p.visual, trimesh.visual.TextureVisuals)]
    offsets = np.cumsum([0, *(len(p.vertices) for p in parts[:-1])])
    return Skin(vertices=np.concatenate([p.vertices for p in parts]).astype(np.float64) * scale,
                faces=np.concatenate([p.faces + o for p, o in zip(parts, offsets, strict=True)]).astype(np.int64),
                uv=np.concatenate(uvs),
                png=png_of(first))


def placed(skin: Skin, turn: Floats, shift: Floats, inverted: bool) -> Skin:
    """The skin turned and moved as its mesh was (x2.meshes.source.read_mesh); faces reversed if the mesh's were."""
    faces = skin.faces[:, ::-1] if inverted else skin.faces
    return Skin(vertices=skin.vertices @ turn.T + shift, faces=np.ascontiguousarray(faces), uv=skin.uv, png=skin.png)


def skin_uv(skin: Skin, visual: trimesh.Trimesh) -> tuple[trimesh.Trimesh, Floats]:
    """The visual mesh to draw and its UVs: the skin itself when `visual` was not decimated (as many vertices or
    more), else `visual` with each vertex given the UV of the skin's nearest vertex."""
    if len(visual.vertices) >= len(np.unique(skin.vertices, axis=0)):
        return trimesh.Trimesh(vertices=skin.vertices, faces=skin.faces, process=False), skin.uv
    points = np.asarray(visual.vertices, dtype=np.float64)
    nearest = np.concatenate([  # (brute force in blocks: at most VISUAL_VERTICES x the file's vertices)
        np.argmin(((points[i:i + 64, None, :] - skin.vertices[None, :, :]) ** 2).sum(axis=2), axis=1)
        for i in range(0, len(points), 64)])
    return visual, skin.uv[nearest]
