"""A mesh file read and checked: one mesh in metres, its origin at the bottom centre, and its colour.

trimesh reads OBJ (with its MTL and textures), STL (ASCII or binary), GLB/GLTF and PLY; a file of several
meshes (an OBJ with one group per material, a GLB scene) becomes one mesh with each part where the file puts it.
What x2 refuses, each as one SpecError line naming the file: an unreadable or empty file, a texture that is not
an image, a mesh with no volume (flat, or all faces degenerate), one too large or too small for the booth after
`scale` (the refusal proposes a scale). Whether the mesh is watertight is reported, not refused here: its volume
(and so a mass from a density) needs it, the collision pieces do not (x2.meshes.build).

The object's colour is the area-weighted mean of its parts' colours as one rgba (a part's texture sampled at its
UVs): what its collision pieces are drawn with, and its look where the file has no one texture. A file whose every
part is textured by one image keeps it (`SourceMesh.skin`, x2.meshes.skin): the image and the UVs travel with the
object and with every world that holds it (x2/sim/mujoco/textures.py).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import trimesh
from PIL import Image, UnidentifiedImageError

from x2.base.arrays import Floats
from x2.base.errors import SpecError
from x2.meshes.skin import Skin, placed, read_skin

FORMATS = (".obj", ".stl", ".glb", ".gltf", ".ply")
MAX_EXTENT = 0.5  # m: the largest side the booth's table and the grippers' reach are built for
MIN_EXTENT = 0.005  # m: a thinner mesh is flat (no volume to collide or to weigh)
# the rotation that turns each axis of a file to x2's up (+z): a quarter turn about x or y, a half turn for -z
UP_AXES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "z": ((1, 0, 0), (0, 1, 0), (0, 0, 1)), "y": ((1, 0, 0), (0, 0, -1), (0, 1, 0)),
    "-y": ((1, 0, 0), (0, 0, 1), (0, -1, 0)), "x": ((0, 0, -1), (0, 1, 0), (1, 0, 0)),
    "-x": ((0, 0, 1), (0, 1, 0), (-1, 0, 0)), "-z": ((1, 0, 0), (0, -1, 0), (0, 0, -1))}
GREY = (0.7, 0.7, 0.7, 1.0)  # the colour of a mesh whose file gives none
_MAP = re.compile(r"^\s*(map_\w+|bump|disp|decal|refl)\s+(.+?)\s*$", re.IGNORECASE)
_MTLLIB = re.compile(r"^\s*mtllib\s+(.+?)\s*$")


@dataclass(frozen=True)
class SourceMesh:
    mesh: trimesh.Trimesh  # metres, origin at the centre of its bounding box's bottom face
    rgba: tuple[float, float, float, float]
    extents: Floats  # bounding box sides (m), x y z
    watertight: bool
    files: tuple[Path, ...]  # the mesh file and every file it names (MTL, textures): what the cache digests
    missing: tuple[str, ...]  # files the mesh file names that are not there (its colour is then the default's)
    skin: Skin | None = None  # its one texture and UVs, in the object frame (x2.meshes.skin), when it has one


def _refuse(path: Path, field: str, found: str, allowed: str) -> SpecError:
    return SpecError(str(path), None, field, found, allowed)


@dataclass(frozen=True)
class Linked:
    files: tuple[Path, ...]  # the MTL libraries and textures an OBJ names that are there
    missing: tuple[str, ...]  # the ones it names that are not (trimesh reads the OBJ without them)


def linked_files(path: Path) -> Linked:
    """The files an OBJ names (its MTL libraries and their texture maps), each present one checked: every texture
    an image PIL can read; the buffers and images a glTF names. Other formats carry their textures inside (GLB) or
    have none (STL, PLY)."""
    if path.suffix.lower() == ".gltf":
        return _gltf_linked(path)
    if path.suffix.lower() != ".obj":
        return Linked((), ())
    found: list[Path] = []
    missing: list[str] = []
    for line in path.read_text(errors="replace").splitlines():
        if (lib := _MTLLIB.match(line)) is None:
            continue
        mtl = path.parent / lib.group(1)
        if not mtl.is_file():
            missing.append(lib.group(1))
            continue
        found.append(mtl)
        for entry in mtl.read_text(errors="replace").splitlines():
            if (tex := _MAP.match(entry)) is None:
                continue
            name = tex.group(2).split()[-1]  # (options such as -s 1 1 1 come before the file name)
            image = mtl.parent / name
            if not image.is_file():
                missing.append(name)
                continue
            try:
                with Image.open(image) as opened:
                    opened.verify()
            except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
                raise _refuse(mtl, tex.group(1), f"{name!r}, which is not an image ({type(exc).__name__})",
                              "a PNG or JPEG texture") from None
            found.append(image)
    return Linked(tuple(found), tuple(missing))


def _gltf_linked(path: Path) -> Linked:
    """A glTF's external buffers (its vertices) and images: what the cache must digest beside the JSON itself."""
    try:
        doc = json.loads(path.read_text(errors="replace"))
    except ValueError:
        return Linked((), ())  # (not JSON: trimesh's read says so, in one line)
    uris = [entry.get("uri") for key in ("buffers", "images") for entry in (doc.get(key) or [])
            if isinstance(entry, dict)] if isinstance(doc, dict) else []
    names = [u for u in uris if isinstance(u, str) and not u.startswith("data:")]
    found = [path.parent / unquote(n) for n in names if (path.parent / unquote(n)).is_file()]
    return Linked(tuple(found), tuple(n for n in names if not (path.parent / unquote(n)).is_file()))


def _parts(path: Path) -> list[trimesh.Trimesh]:
    try:
        loaded = trimesh.load(str(path), force="scene")
        parts = [g for g in loaded.dump() if isinstance(g, trimesh.Trimesh)] if isinstance(loaded, trimesh.Scene) \
            else [loaded] if isinstance(loaded, trimesh.Trimesh) else []
    except Exception as exc:  # noqa: BLE001 - trimesh's readers raise anything (struct, KeyError, ValueError...)
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise _refuse(path, "mesh", f"a file trimesh cannot read ({reason})",
                      "an OBJ, STL, GLB or PLY mesh file") from None
    return [p for p in parts if len(p.faces)]


def _texture_samples(visual: trimesh.visual.TextureVisuals) -> Floats | None:
    """The colours (n, 3 or 4, 0-255) of the visual's texture at its UVs (wrapped into [0, 1)), or None."""
    material = visual.material
    image = getattr(material, "image", None) or getattr(material, "baseColorTexture", None)
    if image is None or visual.uv is None or not len(visual.uv):
        return None
    pixels = np.asarray(image.convert("RGBA"))
    h, w = pixels.shape[:2]
    uv = np.mod(np.asarray(visual.uv, dtype=np.float64), 1.0)
    rows = np.clip(((1.0 - uv[:, 1]) * h).astype(int), 0, h - 1)  # (v runs up the image)
    cols = np.clip((uv[:, 0] * w).astype(int), 0, w - 1)
    samples: Floats = pixels[rows, cols].astype(np.float64)
    return samples


def _colour(part: trimesh.Trimesh) -> tuple[float, float, float, float] | None:
    """The part's mean colour: its texture sampled at its UVs, else its face colours, else its material's main
    colour; None where the file gives none."""
    visual = part.visual
    colours: Floats | None = None
    if isinstance(visual, trimesh.visual.TextureVisuals):
        colours = _texture_samples(visual)
        main = getattr(visual.material, "main_color", None)
        if colours is None and main is not None:
            colours = np.asarray(main, dtype=np.float64).reshape(1, -1)
    elif isinstance(visual, trimesh.visual.ColorVisuals) and visual.defined:
        colours = np.asarray(visual.face_colors, dtype=np.float64)
    if colours is None or not len(colours):
        return None
    mean = colours.reshape(len(colours), -1)[:, :4].mean(axis=0) / 255.0
    rgba = [*mean[:3], mean[3] if len(mean) > 3 else 1.0]
    return (round(float(rgba[0]), 3), round(float(rgba[1]), 3), round(float(rgba[2]), 3),
            round(max(float(rgba[3]), 0.1), 3))


def read_mesh(path: Path, scale: float, up: str = "z") -> SourceMesh:
    """The mesh of `path` scaled by `scale` (file units -> metres), turned so that its axis `up` (one of UP_AXES:
    glTF files and many OBJ files are drawn y-up) points up, checked and moved to x2's object frame."""
    if not path.is_file():
        raise _refuse(path, "mesh", "no such file", "an OBJ, STL, GLB or PLY mesh file")
    if path.suffix.lower() not in FORMATS:
        raise _refuse(path, "mesh", f"a {path.suffix or 'suffix-less'} file", "one of " + ", ".join(FORMATS))
    if not (math.isfinite(scale) and scale > 0):
        raise _refuse(path, "scale", f"{scale:g}", "a positive number (file units -> metres)")
    if up not in UP_AXES:
        raise _refuse(path, "up", repr(up), "one of " + ", ".join(UP_AXES))
    linked = linked_files(path)
    parts = _parts(path)
    if not parts:
        raise _refuse(path, "mesh", f"no triangles in its {path.stat().st_size} bytes (an empty mesh, or not a "
                      f"{path.suffix.lstrip('.').upper()} file trimesh can read)", "a mesh with triangles")
    coloured = [(c, float(p.area)) for p in parts if (c := _colour(p)) is not None]
    weights = sum(w for _, w in coloured)
    rgba = GREY if not coloured or weights <= 0 else tuple(
        round(sum(c[k] * w for c, w in coloured) / weights, 3) for k in range(4))
    mesh = trimesh.Trimesh(vertices=np.concatenate([p.vertices for p in parts]) * scale,
                           faces=np.concatenate([p.faces + sum(len(q.vertices) for q in parts[:i])
                                                 for i, p in enumerate(parts)]), process=True)
    turn = np.eye(4)
    turn[:3, :3] = UP_AXES[up]
    if up != "z":
        mesh.apply_transform(turn)
    if not np.isfinite(mesh.vertices).all():
        raise _refuse(path, "mesh", "vertices that are not finite numbers", "a mesh of finite coordinates")
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.remove_unreferenced_vertices()
    if not len(mesh.faces):
        raise _refuse(path, "mesh", "only degenerate faces (no area)", "a mesh with triangles of some area")
    extents = np.asarray(mesh.extents, dtype=np.float64)
    largest, smallest = float(extents.max()), float(extents.min())
    if largest > MAX_EXTENT:
        # the largest power of ten that fits it (a unit's factor: mm 0.001, cm 0.01, dm 0.1), not one that shrinks
        # it below a hand's size
        proposal = 10.0 ** math.floor(math.log10(MAX_EXTENT / largest * scale))
        raise _refuse(path, "scale", f"a mesh {largest:.3g} m across at scale {scale:g}",
                      f"at most {MAX_EXTENT} m across to fit the booth (try --scale {proposal:g}: a file in mm "
                      "takes 0.001)")
    if smallest < MIN_EXTENT:
        raise _refuse(path, "mesh", f"a mesh {smallest * 1000:.2g} mm thin (sides {_sides(extents)})",
                      f"a solid at least {MIN_EXTENT * 1000:g} mm in every direction (--scale for units)")
    watertight = bool(mesh.is_watertight)
    inverted = watertight and bool(mesh.volume < 0)
    if inverted:  # inside out: a volume and an inertia need outward faces
        mesh.invert()
    lo, hi = mesh.bounds
    shift = np.array([-(lo[0] + hi[0]) / 2, -(lo[1] + hi[1]) / 2, -lo[2]])
    mesh.apply_translation(shift)
    skin = read_skin(parts, scale)
    rgba4 = (float(rgba[0]), float(rgba[1]), float(rgba[2]), float(rgba[3]))
    return SourceMesh(mesh=mesh, rgba=rgba4, extents=extents, watertight=watertight,
                      files=(path, *linked.files), missing=linked.missing,
                      skin=None if skin is None else placed(skin, turn[:3, :3], shift, inverted))


def _sides(extents: Floats) -> str:
    return " x ".join(f"{e * 1000:.3g}" for e in extents) + " mm"
