"""Sphere-chain proxies: a few spheres per geom whose union provably covers the geom.

Each geom is covered in its own frame and the spheres are expressed in its body's frame, so one rigid
transform per body and sample moves them all (`world_centers`). The covering rules (every point q of
the geom is within `radius` of some centre):

- sphere: its centre, radius r.
- capsule (radius r, half-length h) and cylinder (radius r, half-height h): n centres on the axis from
  -h to +h, spacing d = 2h / (n - 1). A point beside the axis at height z has a centre within d/2 along
  the axis and at most r across it, so sqrt(r^2 + (d/2)^2) covers it; a capsule's caps are within r of
  the end centres. Radius sqrt(r^2 + (d/2)^2).
- anything else (box, ellipsoid, mesh): MuJoCo's local bounding box of the geom (`geom_aabb`, which
  contains it) split into a grid of equal cells no longer than `cell`; every point lies in a cell and
  within half the cell's diagonal of its centre. Radius: half the cell diagonal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats, Ints

_G = mujoco.mjtGeom


@dataclass(frozen=True)
class Proxies:
    """Spheres fixed to bodies: centre `offset[i]` in the frame of body `body[i]`, covering `geom[i]`."""

    body: Ints  # (P,) body id
    geom: Ints  # (P,) geom id
    offset: Floats  # (P, 3) centre in the body frame
    radius: Floats  # (P,) covering radius

    def __len__(self) -> int:
        return len(self.body)

    def world_centers(self, xpos: Floats, xmat: Floats) -> Floats:
        """Centres in the world for body poses `xpos` (..., nbody, 3) and `xmat` (..., nbody, 3, 3)."""
        rot = xmat[..., self.body, :, :]
        # (einsum is untyped in numpy's stubs)
        centres: Floats = xpos[..., self.body, :] + np.einsum("...pij,pj->...pi", rot, self.offset)
        return centres


def _quat_mat(quat: Floats) -> Floats:
    out = np.empty(9)
    mujoco.mju_quat2Mat(out, quat)
    return out.reshape(3, 3)


def geom_spheres(model: mujoco.MjModel, geom: int, cell: float) -> tuple[Floats, Floats]:
    """Covering spheres of one geom in its own frame: centres (n, 3) and their common radius."""
    kind, size = int(model.geom_type[geom]), model.geom_size[geom]
    if kind == _G.mjGEOM_SPHERE:
        return np.zeros((1, 3)), np.array([size[0]])
    if kind in (_G.mjGEOM_CAPSULE, _G.mjGEOM_CYLINDER):
        r, h = float(size[0]), float(size[1])
        n = max(2, math.ceil(2 * h / cell) + 1)
        z = np.linspace(-h, h, n)
        d = 2 * h / (n - 1)
        centres = np.column_stack([np.zeros(n), np.zeros(n), z])
        return centres, np.full(n, math.sqrt(r * r + (d / 2) ** 2))
    aabb = model.geom_aabb[geom]
    centre, half = aabb[:3], aabb[3:]
    counts = [max(1, math.ceil(2 * float(hk) / cell)) for hk in half]
    cell_half = half / np.array(counts)
    axes = [centre[k] - half[k] + cell_half[k] * (2 * np.arange(counts[k]) + 1) for k in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid, np.full(len(grid), float(np.linalg.norm(cell_half)))


def body_proxies(model: mujoco.MjModel, geoms: Ints, cell: float) -> Proxies:
    """Proxies of `geoms` (ids), in their bodies' frames. Planes and height fields are not covered."""
    body, geom, offset, radius = [], [], [], []
    for g in (int(x) for x in geoms):
        if model.geom_type[g] in (_G.mjGEOM_PLANE, _G.mjGEOM_HFIELD):
            continue
        centres, radii = geom_spheres(model, g, cell)
        rot = _quat_mat(model.geom_quat[g])
        offset.append(model.geom_pos[g] + centres @ rot.T)
        radius.append(radii)
        body += [int(model.geom_bodyid[g])] * len(centres)
        geom += [g] * len(centres)
    if not body:
        return Proxies(np.zeros(0, int), np.zeros(0, int), np.zeros((0, 3)), np.zeros(0))
    return Proxies(np.array(body), np.array(geom), np.concatenate(offset), np.concatenate(radius))
