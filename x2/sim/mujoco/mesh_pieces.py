"""A collision mesh that is several convex pieces in one OBJ file, collided with as those pieces.

URDFs often ship a link's collision geometry as a convex decomposition (V-HACD's output: one OBJ file, one
`o` object per convex piece; pybullet_data's xArm6 has two to five per link). MuJoCo reads an OBJ file as one
mesh and collides with its convex hull, which fills in every concavity the decomposition kept (an elbow's inner
corner). `split_pieces` replaces such a mesh by one mesh per object, inline (vertices and faces), and each geom
that used it by one geom per piece with the same frame, masks and contact parameters.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

MIN_PIECE_VERTICES = 4  # fewer is no solid: such an object is skipped (MuJoCo would refuse it)


def obj_pieces(path: Path) -> list[tuple[list[list[float]], list[int]]]:
    """(vertices, triangle indices) of each object (`o`) of an OBJ file, indices local to the piece; an OBJ with
    one object or none gives one piece."""
    verts: list[list[float]] = []
    pieces: list[list[list[int]]] = [[]]
    for line in path.read_text(errors="replace").splitlines():
        head, _, rest = line.strip().partition(" ")
        if head == "v":
            verts.append([float(x) for x in rest.split()[:3]])
        elif head == "o" and pieces[-1]:
            pieces.append([])
        elif head == "f":
            idx = [int(tok.split("/")[0]) for tok in rest.split()]
            idx = [i - 1 if i > 0 else len(verts) + i for i in idx]
            pieces[-1].extend([idx[0], idx[k], idx[k + 1]] for k in range(1, len(idx) - 1))
    out = []
    for faces in pieces:
        used = sorted({i for f in faces for i in f})
        if len(used) < MIN_PIECE_VERTICES:
            continue
        local = {g: k for k, g in enumerate(used)}
        out.append(([verts[g] for g in used], [local[i] for f in faces for i in f]))
    return out


def split_pieces(spec: mujoco.MjSpec) -> None:
    """Every mesh of `spec` read from an OBJ file of more than one object becomes one mesh per object, and its
    geoms one geom per piece (module docstring)."""
    for mesh in list(spec.meshes):
        if not mesh.file or Path(mesh.file).suffix.lower() != ".obj":
            continue
        pieces = obj_pieces(Path(mesh.file))
        if len(pieces) < 2:
            continue
        scale = np.asarray(mesh.scale, dtype=np.float64)
        names = []
        for k, (verts, faces) in enumerate(pieces):
            names.append(f"{mesh.name}_piece{k}")
            spec.add_mesh(name=names[-1], uservert=(np.asarray(verts) * scale).ravel().tolist(), userface=faces)
        for geom in [g for g in spec.geoms if g.meshname == mesh.name]:
            body = geom.parent
            for k, name in enumerate(names):
                piece = body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name, pos=list(geom.pos),
                                      quat=list(geom.quat), contype=geom.contype, conaffinity=geom.conaffinity,
                                      group=geom.group, rgba=list(geom.rgba), friction=list(geom.friction),
                                      condim=geom.condim, margin=geom.margin, gap=geom.gap,
                                      solref=list(geom.solref), solimp=list(geom.solimp))
                if geom.name:
                    piece.name = f"{geom.name}_piece{k}"
            spec.delete(geom)
        spec.delete(mesh)
