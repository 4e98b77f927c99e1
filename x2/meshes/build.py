"""One mesh file -> one object's MJCF and YAML text, and what was measured on the way (no simulator here).

`cache_key` digests the file, every file it names and the options, so that an unchanged object is not made
again; `build_object` reads, decomposes, weighs and writes the text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from x2.base.arrays import Floats
from x2.base.errors import SpecError
from x2.meshes.fragment import ObjectText, object_text
from x2.meshes.inertia import DENSITY, MassProperties, mass_properties
from x2.meshes.pieces import THRESHOLD, VISUAL_VERTICES, Piece, convex_pieces, visual_mesh
from x2.meshes.skin import skin_uv
from x2.meshes.source import linked_files, read_mesh

VERSION = 3  # of what build_object makes from the same input: a new one makes every cached object again


@dataclass(frozen=True)
class MeshOptions:
    name: str
    scale: float = 1.0
    up: str = "z"  # the file's axis that points up (x2.meshes.source.UP_AXES)
    mass: float | None = None  # kg; else density x volume
    density: float | None = None  # kg/m^3; neither: DENSITY
    display: str | None = None  # what instructions call it ("red mug")
    threshold: float = THRESHOLD  # CoACD's concavity threshold
    visual_vertices: int = VISUAL_VERTICES


@dataclass(frozen=True)
class MeshObject:
    text: ObjectText
    pieces: tuple[Piece, ...]
    props: MassProperties
    extents: Floats  # bounding box sides (m)
    visual_vertices: int
    watertight: bool
    rgba: tuple[float, float, float, float]
    missing: tuple[str, ...]  # files the mesh file names that are not there
    texture: bytes | None = None  # the PNG the MJCF names (fragment.texture_file), when the object has a texture


def cache_key(path: Path, options: MeshOptions) -> str:
    """sha256 of the build's version, the options and the bytes of the file and of every file it names."""
    digest = hashlib.sha256(json.dumps({"version": VERSION, **asdict(options)}, sort_keys=True).encode())
    for file in (path, *linked_files(path).files):
        digest.update(file.name.encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def build_object(path: Path, options: MeshOptions, key: str) -> MeshObject:
    if options.mass is not None and options.density is not None:
        raise SpecError(str(path), None, "mass", "both a mass and a density", "one of them")
    for field, value in (("mass", options.mass), ("density", options.density)):
        if value is not None and not value > 0:
            raise SpecError(str(path), None, field, f"{value:g}", "a positive number")
    source = read_mesh(path, options.scale, options.up)
    if not source.watertight and options.mass is None:
        raise SpecError(str(path), None, "mesh", "a mesh that is not watertight (holes or non-manifold edges: it "
                        "has no volume to weigh)", "a closed mesh, or --mass KG (its inertia then comes from its "
                        "convex pieces)")
    pieces = convex_pieces(source.mesh, options.threshold)
    props = mass_properties(source.mesh, source.watertight, pieces, options.mass, options.density)
    visual, uv = visual_mesh(source.mesh, options.visual_vertices), None
    if source.skin is not None:
        visual, uv = skin_uv(source.skin, visual)
    weighed = (f"mass {options.mass:g} kg" if options.mass is not None else
               f"density {options.density if options.density is not None else DENSITY:g} kg/m^3")
    about = (f"made by `x2 objects add` from {path.name} at scale {options.scale:g}, up {options.up}, {weighed}, "
             f"CoACD threshold {options.threshold:g}")
    text = object_text(options.name, options.display, visual, pieces, props, source.rgba, about, key, uv)
    return MeshObject(text=text, pieces=tuple(pieces), props=props, extents=source.extents,
                      visual_vertices=len(visual.vertices), watertight=source.watertight, rgba=source.rgba,
                      missing=source.missing, texture=None if source.skin is None else source.skin.png)
