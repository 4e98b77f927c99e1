"""An object's mass, centre of mass and inertia.

The mass is the one given, or the density times the volume; only a watertight mesh has a volume, so a mesh with
holes needs `mass` (x2.meshes.build refuses a density for it). The inertia of a watertight mesh is its
own (exact for a uniform solid); that of an open mesh is the sum of its convex pieces' at one density, each piece
a closed solid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import trimesh

from x2.base.arrays import Floats
from x2.meshes.pieces import Piece

DENSITY = 500.0  # kg/m^3 when no mass or density is given: between pine (~450) and a plastic (~1000) part


@dataclass(frozen=True)
class MassProperties:
    mass: float  # kg
    com: Floats  # (3,) m, object frame
    inertia: Floats  # (3, 3) kg m^2 about the centre of mass, object axes
    volume: float  # m^3 of the solid the inertia is of


def _solid(mesh: trimesh.Trimesh, density: float) -> tuple[float, Floats, Floats]:
    props = mesh.mass_properties  # (trimesh integrates the closed surface: exact for a uniform solid)
    return float(props["volume"]) * density, np.asarray(props["center_mass"]), np.asarray(props["inertia"]) * density


def mass_properties(mesh: trimesh.Trimesh, watertight: bool, pieces: list[Piece], mass: float | None,
                    density: float | None) -> MassProperties:
    if watertight:
        volume = float(mesh.volume)
        rho = mass / volume if mass is not None else (density if density is not None else DENSITY)
        m, com, inertia = _solid(mesh, rho)
        return MassProperties(mass=m, com=com, inertia=_clean(inertia), volume=volume)
    solids = [trimesh.Trimesh(vertices=p.vertices, faces=p.faces, process=False) for p in pieces]
    volume = sum(float(s.volume) for s in solids)
    rho = mass / volume if mass is not None else (density if density is not None else DENSITY)
    parts = [_solid(s, rho) for s in solids]
    total = sum(m for m, _, _ in parts)
    com = sum((m * c for m, c, _ in parts), np.zeros(3)) / total
    inertia = np.zeros((3, 3))
    for m, c, i in parts:  # each piece's inertia moved to the common centre (parallel axes)
        d = c - com
        inertia += i + m * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return MassProperties(mass=total, com=com, inertia=_clean(inertia), volume=volume)


def _clean(inertia: Floats) -> Floats:
    """The inertia with what is rounding noise of the integration (1e-22 off the diagonal of a cylinder) set to 0."""
    tiny = np.abs(inertia) < 1e-9 * float(np.trace(inertia))
    return np.where(tiny, 0.0, inertia)
