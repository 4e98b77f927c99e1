"""A vendor arm as the cameras see the real one: its visual meshes, decimated, in the vendor's colours.

A vendor MJCF draws an arm with visual-only geoms (contype and conaffinity 0), each a mesh piece with a material,
and collides with coarser meshes. x2 keeps a part's collision geoms exactly as before (the physics reads nothing
else) and, when the part file asks for it (`visual_faces`, robots/parts/*.yaml), keeps the visual geoms too:
each takes its material's colour as its own rgba (a recorded world keeps no vendor material), its mesh is
replaced by a copy decimated to at most `visual_faces` faces (x2.meshes.decimated, cached by the mesh file's
digest), inline, so the world stays self-contained text. The visual geoms are drawn (group `VISUAL_GROUP`,
which cameras show), the collision geoms are not (`COLLISION_GROUP`, which they hide; MuJoCo's viewer shows it
on demand). Bodies with an explicit inertia (every vendor arm's) weigh the same; geoms that collide with nothing
take no part in contacts, so the same controls give the same states, bit for bit
(tests/test_sim_visual_meshes.py).
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.meshes import decimated

VISUAL_GROUP, COLLISION_GROUP = 2, 3  # MuJoCo's cameras draw groups 0-2 by default, hide 3-5


def is_visual_only(geom: mujoco.MjsGeom) -> bool:
    return bool(geom.contype == 0 and geom.conaffinity == 0)


def vendor_visuals(spec: mujoco.MjSpec, budget: int) -> None:
    """Every visual-only geom takes its material's colour as its rgba; every mesh only they use becomes its copy
    decimated to `budget` faces per piece (vertices and faces inline)."""
    visual = [g for g in spec.geoms if is_visual_only(g)]
    for geom in visual:
        material = spec.material(geom.material) if geom.material else None
        if material is not None:
            geom.rgba = list(material.rgba)
    mesh_type = mujoco.mjtGeom.mjGEOM_MESH
    colliding = {g.meshname for g in spec.geoms if g.type == mesh_type and not is_visual_only(g)}
    for name in sorted({g.meshname for g in visual if g.type == mesh_type} - colliding):
        mesh = spec.mesh(name)
        if mesh is None or not mesh.file:
            continue
        surface = decimated_mesh(Path(mesh.file), tuple(float(s) for s in mesh.scale), budget)
        spec.delete(mesh)
        spec.add_mesh(name=name, uservert=surface.vertices.ravel().tolist(), userface=surface.faces.ravel().tolist(),
                      smoothnormal=True)


def decimated_mesh(file: Path, scale: tuple[float, ...], budget: int) -> decimated.Surface:
    """The mesh file as MuJoCo reads it (scaled), decimated to `budget` faces: from the cache when it was made."""
    name = decimated.key(file.read_bytes(), scale, budget)
    surface = decimated.cached(name)
    if surface is None:
        lone = mujoco.MjSpec()
        lone.add_mesh(name="mesh", file=str(file), scale=list(scale))
        model = lone.compile()
        start, count = int(model.mesh_vertadr[0]), int(model.mesh_vertnum[0])
        vert = file_frame(model, 0, model.mesh_vert[start:start + count].astype(np.float64))
        face = model.mesh_face[model.mesh_faceadr[0]:model.mesh_faceadr[0] + model.mesh_facenum[0]]
        surface = decimated.decimate(vert, np.asarray(face), budget)
        decimated.keep(name, surface)
    return surface


def file_frame(model: mujoco.MjModel, i: int, vert: Floats) -> Floats:
    """Mesh i's compiled vertices back from its inertial frame, where MuJoCo keeps them, to its file's frame."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, model.mesh_quat[i])
    out: Floats = vert @ rot.reshape(3, 3).T + model.mesh_pos[i]
    return out
