"""Collision pieces and the visual mesh of an object.

MuJoCo collides with the convex hull of each mesh geom, so a concave object (a mug, a torus) needs several convex
pieces: CoACD (approximate convex decomposition, PyPI `coacd`) cuts the mesh where its concavity exceeds
`threshold` (CoACD's measure, a fraction of the mesh's size; 0.05 by default), into at most `MAX_PIECES` pieces of
at most `MAX_PIECE_VERTICES` vertices each. Its search is seeded (`SEED`), so the same file gives the same pieces
(tests/test_meshes_objects.py; the same with 1 or 4 OpenMP threads). A mesh that is convex already is its own
one piece.

The visual mesh is the file's, decimated (quadric edge collapse, fast-simplification) to at most `VISUAL_VERTICES`
vertices: a world is compiled at every reset and stored as text in every episode file.
"""

from __future__ import annotations

from dataclasses import dataclass

import coacd  # type: ignore[import-untyped]  # (no type information shipped)
import numpy as np
import trimesh

from x2.base.arrays import Floats, Ints

MAX_PIECES = 16
MAX_PIECE_VERTICES = 64
VISUAL_VERTICES = 1500
SEED = 0
THRESHOLD = 0.05  # CoACD's concavity threshold (a fraction of the mesh's size); lower: more, tighter pieces


@dataclass(frozen=True)
class Piece:
    vertices: Floats  # (n, 3), m, object frame; convex (MuJoCo takes their hull)
    faces: Ints  # (m, 3) the hull's triangles, outward


def convex_pieces(mesh: trimesh.Trimesh, threshold: float = THRESHOLD) -> list[Piece]:
    """The mesh as convex pieces (its own hull when it is convex)."""
    if mesh.is_convex:
        return [_hull(np.asarray(mesh.vertices))]
    coacd.set_log_level("error")
    parts = coacd.run_coacd(coacd.Mesh(np.asarray(mesh.vertices, dtype=np.float64),
                                       np.asarray(mesh.faces, dtype=np.int32)),
                            threshold=threshold, max_convex_hull=MAX_PIECES, seed=SEED, decimate=True,
                            max_ch_vertex=MAX_PIECE_VERTICES)
    pieces = [_hull(np.asarray(vertices, dtype=np.float64)) for vertices, _ in parts]
    # (CoACD's order follows its search tree; sorted by position, the piece names read bottom to top)
    return sorted(pieces, key=lambda p: tuple(np.round(p.vertices.mean(axis=0)[[2, 0, 1]], 6)))


def _hull(vertices: Floats) -> Piece:
    hull = trimesh.convex.convex_hull(vertices)
    return Piece(vertices=np.asarray(hull.vertices, dtype=np.float64), faces=np.asarray(hull.faces, dtype=np.int64))


def visual_mesh(mesh: trimesh.Trimesh, budget: int = VISUAL_VERTICES) -> trimesh.Trimesh:
    """The mesh with at most `budget` vertices (itself when it has no more)."""
    if len(mesh.vertices) <= budget:
        return mesh
    target = 2 * budget  # a closed triangle mesh has about twice as many faces as vertices
    simple = mesh
    for _ in range(4):  # (the collapse stops near its target, not at it)
        simple = mesh.simplify_quadric_decimation(face_count=target)
        if len(simple.vertices) <= budget:
            break
        target = int(target * 0.8)
    return simple
