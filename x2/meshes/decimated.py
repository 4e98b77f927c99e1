"""A vendor robot's visual meshes decimated to a face budget, cached on disk by what they were made from.

A vendor arm's visual meshes are too fine to carry in every episode file (the Panda's: 126,562 faces, 32 MB of
OBJ), and a recorded world carries its meshes inline (x2.sim.mujoco.recorded_xml). So each visual piece is
decimated (quadric edge collapse: trimesh's `simplify_quadric_decimation`, which runs fast-simplification) to at
most `budget` faces; a piece that has no more stays as it is (one the collapse cannot bring within the budget
loses its smallest islands, or becomes a coarse hull: `_within`). Vertices are rounded to `DECIMALS` (10 um: far
below a pixel at any camera x2 has, and a third of the text).

The same input gives the same bytes (fast-simplification's collapse is sequential and seeded by nothing;
tests/test_sim_visual_meshes.py checks it), so a decimated mesh is made once and kept in the cache folder
(`cache_root`, never the repository) under `key`: the digest of the source mesh's bytes, its scale, the
budget and `VERSION`. A cache that cannot be written is no error: the mesh is made again next time.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from x2.base.arrays import Floats, Ints
from x2.files.atomic import write_bytes

if TYPE_CHECKING:  # (imported where a mesh is decimated: trimesh costs every x2 process ~0.5 s to import)
    import trimesh

VERSION = 2  # of what `decimate` makes from the same input: a new one makes every cached mesh again
DECIMALS = 5  # m: vertices rounded to 10 um
CACHE_ENV = "X2_CACHE_DIR"
MIN_FACES = 4  # the smallest budget: a tetrahedron (the schema refuses less)


@dataclass(frozen=True)
class Surface:
    vertices: Floats  # (n, 3) m, the source file's frame
    faces: Ints  # (m, 3) int32, indexing vertices


def cache_root() -> Path:
    """`$X2_CACHE_DIR`, else `$XDG_CACHE_HOME/x2`, else `~/.cache/x2`."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "x2"


def key(source: bytes, scale: tuple[float, ...], budget: int) -> str:
    """What a decimated mesh is made from: the source mesh file's bytes, its scale, the budget, `VERSION`."""
    digest = hashlib.sha256(source).hexdigest()
    extra = hashlib.sha256(repr((tuple(float(s) for s in scale), int(budget), VERSION)).encode()).hexdigest()
    return f"{digest[:32]}-{extra[:16]}"


def decimate(vertices: Floats, faces: Ints, budget: int) -> Surface:
    """The surface with at most `budget` faces (the same one, duplicate vertices merged, when it has no more)."""
    import trimesh

    mesh = trimesh.Trimesh(vertices=np.asarray(vertices, dtype=np.float64), faces=np.asarray(faces, dtype=np.int64),
                           process=True)
    target, simple = budget, mesh
    for _ in range(4):  # (the collapse stops near its target, not at it)
        if len(simple.faces) <= budget or target < MIN_FACES:
            break
        simple = mesh.simplify_quadric_decimation(face_count=target)
        target = int(target * 0.8)
    simple = _within(simple, budget)
    return Surface(np.round(np.asarray(simple.vertices, dtype=np.float64), DECIMALS),
                   np.asarray(simple.faces, dtype=np.int32))


def _within(mesh: trimesh.Trimesh, budget: int) -> trimesh.Trimesh:
    """`mesh` within `budget` faces where the collapse stops above it (it keeps open borders: the Panda's link0_8,
    13,185 faces, stops at 466 for a budget of 200). Its largest islands by area, while they fit; when even the
    largest does not, its convex hull collapsed to the budget (or the hull of an even subset of its vertices, few
    enough to fit: a hull of k points has at most 2k - 4 faces): coarse, but within the budget it was asked for."""
    import trimesh

    if len(mesh.faces) <= budget:
        return mesh
    islands = sorted(mesh.split(only_watertight=False), key=lambda p: -float(p.area))  # (a stable sort)
    kept: list[trimesh.Trimesh] = []
    for island in islands:
        if sum(len(k.faces) for k in kept) + len(island.faces) > budget:
            break
        kept.append(island)
    if kept:
        offsets = np.cumsum([0] + [len(k.vertices) for k in kept[:-1]])
        return trimesh.Trimesh(vertices=np.concatenate([np.asarray(k.vertices) for k in kept]),
                               faces=np.concatenate([np.asarray(k.faces) + o for k, o in zip(kept, offsets,
                                                                                              strict=True)]),
                               process=False)
    hull = _hull(np.asarray(mesh.vertices, dtype=np.float64))
    if len(hull.faces) > budget:  # (a closed hull collapses where an open border would not)
        hull = hull.simplify_quadric_decimation(face_count=budget)
    if len(hull.faces) <= budget:
        return hull
    points = np.unique(np.asarray(hull.vertices, dtype=np.float64), axis=0)  # (sorted: the same subset every time)
    step = -(-len(points) // max(4, (budget + 4) // 2))
    return _hull(points[::step])


def _hull(points: Floats) -> trimesh.Trimesh:
    import trimesh

    hull = trimesh.convex.convex_hull(points)
    return trimesh.Trimesh(vertices=np.asarray(hull.vertices), faces=np.asarray(hull.faces), process=False)


def _path(name: str) -> Path:
    return cache_root() / "visual-meshes" / f"{name}.npz"


def cached(name: str) -> Surface | None:
    """The surface kept under `name`; None when there is none (or it cannot be read)."""
    try:
        with np.load(_path(name)) as data:
            return Surface(np.asarray(data["vertices"], dtype=np.float64), np.asarray(data["faces"], dtype=np.int32))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # (a damaged file: made again)
        return None


def keep(name: str, surface: Surface) -> None:
    """Keep `surface` under `name` (whole or not at all); a folder that cannot be written is left alone."""
    buffer = io.BytesIO()
    np.savez(buffer, vertices=surface.vertices, faces=surface.faces)
    try:
        _path(name).parent.mkdir(parents=True, exist_ok=True)
        write_bytes(_path(name), buffer.getvalue())
    except OSError:
        pass  # (a read-only home: the mesh is made again next time, the same bytes)
