"""Distractors on a support, clear of the swept envelope, the static obstacles and each other.

A distractor is an object asset made static: its geoms, copied from the asset's compiled model, become
world geoms at a stable resting pose (upright on its bottom, as every x2 asset's origin is, at a yaw
drawn uniformly), so the recorded state vector keeps its size. Candidates are drawn with seeded
rejection sampling and a bounded number of tries per object; every rejection is counted by its cause.

`mode="tight"` draws all its tries and keeps the valid candidate closest to the envelope: the placement
that makes the inflation terms matter (tests and benchmarks use it to show the margin is needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import mujoco
import numpy as np

from x2.augment.envelope import Envelope
from x2.augment.proxies import body_proxies
from x2.augment.records import PlacedRecord, PlacementRecord
from x2.base.arrays import Floats
from x2.envspec.env import AssetSpec
from x2.sim.layout import DECIMALS
from x2.sim.mujoco.robot import load_mjcf
from x2.sim.mujoco.world import ASSET_ROOT_BODY

SUPPORT_GEOM = "table_top"
EDGE_MARGIN = 0.01  # m kept between a footprint and the support's edge
MAX_TRIES = 200
WORK_LAYER = 0.15  # m above the support: motion lower than this is "at the table"
WORK_AREA_MARGIN = 0.15  # m around it where distractors go
CAUSES = ("object", "obstacle", "envelope")


@dataclass(frozen=True)
class GeomCopy:
    """One geom of an asset, relative to the asset's origin."""

    name: str
    type: int
    size: tuple[float, float, float]
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float]
    rgba: tuple[float, float, float, float]
    friction: tuple[float, float, float]
    condim: int
    contype: int
    conaffinity: int


@dataclass(frozen=True)
class DistractorShape:
    asset: AssetSpec
    geoms: tuple[GeomCopy, ...]
    centres: Floats  # (n, 3) covering spheres relative to the asset origin
    radii: Floats  # (n,)

    @property
    def name(self) -> str:
        return self.asset.name


def distractor_shape(asset: AssetSpec, cell: float = 0.02) -> DistractorShape:
    """The asset compiled alone, its body at the origin; the geoms and covering spheres of that body."""
    geoms, centres, radii = _asset_geometry(asset.mjcf, asset.name, cell)
    return DistractorShape(asset, geoms, centres, radii)


def _three(v: Floats) -> tuple[float, float, float]:
    x, y, z = (float(c) for c in v)
    return x, y, z


def _four(v: Floats) -> tuple[float, float, float, float]:
    w, x, y, z = (float(c) for c in v)
    return w, x, y, z


@cache
def _asset_geometry(mjcf: Path, name: str, cell: float) -> tuple[tuple[GeomCopy, ...], Floats, Floats]:
    model = load_mjcf(mjcf, f"asset {name!r}").compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    body = model.body(ASSET_ROOT_BODY).id
    ids = np.flatnonzero(model.geom_bodyid == body)
    copies = []
    for g in ids:
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, data.geom_xmat[g])
        rgba = model.mat_rgba[model.geom_matid[g]] if model.geom_matid[g] >= 0 else model.geom_rgba[g]
        copies.append(GeomCopy(model.geom(g).name or f"geom{g}", int(model.geom_type[g]),
                               _three(model.geom_size[g]), _three(data.geom_xpos[g]), _four(quat), _four(rgba),
                               _three(model.geom_friction[g]),
                               int(model.geom_condim[g]), int(model.geom_contype[g]),
                               int(model.geom_conaffinity[g])))
    proxies = body_proxies(model, ids, cell)
    centres = proxies.world_centers(data.xpos, data.xmat.reshape(-1, 3, 3))
    return tuple(copies), centres, proxies.radius.copy()


@dataclass(frozen=True)
class Support:
    """The top face of a box geom: where distractors may rest."""

    name: str
    centre: tuple[float, float]
    half: tuple[float, float]
    z: float


def box_support(model: mujoco.MjModel, geom: str = SUPPORT_GEOM) -> Support:
    g = model.geom(geom)
    if int(g.type[0]) != mujoco.mjtGeom.mjGEOM_BOX or model.geom_bodyid[g.id] != 0:
        raise ValueError(f"support {geom!r} is not a box of the world body")
    pos, size = model.geom_pos[g.id], model.geom_size[g.id]
    return Support(geom, (float(pos[0]), float(pos[1])), (float(size[0]), float(size[1])), float(pos[2] + size[2]))


@dataclass(frozen=True)
class Obstacle:
    name: str
    lo: Floats  # (3,) world bounding box
    hi: Floats


def static_obstacles(model: mujoco.MjModel, support: Support, reach: float = 0.4) -> list[Obstacle]:
    """World-fixed geoms that rise above the support (the microwave's box, the robot's pedestal), as their
    world bounding boxes; the support itself, and what lies below it or far off, are left out."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    out = []
    for g in range(model.ngeom):
        if model.body_weldid[model.geom_bodyid[g]] != 0 or model.geom(g).name == support.name:
            continue
        if model.geom_type[g] in (mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_HFIELD):
            continue
        rot = data.geom_xmat[g].reshape(3, 3)
        centre = data.geom_xpos[g] + rot @ model.geom_aabb[g, :3]
        half = np.abs(rot) @ model.geom_aabb[g, 3:]
        lo, hi = centre - half, centre + half
        (cx, cy), (hx, hy) = support.centre, support.half
        above = hi[2] > support.z + 1e-4 and lo[2] < support.z + reach
        over = lo[0] < cx + hx and hi[0] > cx - hx and lo[1] < cy + hy and hi[1] > cy - hy
        if above and over:
            out.append(Obstacle(model.geom(g).name, lo, hi))
    return out


@dataclass(frozen=True)
class Placed:
    name: str  # distractor name in the world: "<asset>_<i>"
    asset: str
    x: float
    y: float
    z: float
    yaw: float
    margin_m: float  # smallest gap to the envelope's capsules (already inflated by the clearance)

    def as_dict(self) -> PlacedRecord:
        return {"name": self.name, "asset": self.asset, "pose": [self.x, self.y, self.z, self.yaw],
                "envelope_margin_m": round(self.margin_m, 6)}


@dataclass
class PlacementReport:
    placed: list[Placed] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)  # assets that found no spot within their tries
    tries: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))

    def as_dict(self) -> PlacementRecord:
        return {"placed": [p.as_dict() for p in self.placed], "unplaced": list(self.unplaced),
                "tries": self.tries, "rejected": dict(self.rejected)}


def _yaw_rotation(yaw: float) -> Floats:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def spheres_at(shape: DistractorShape, x: float, y: float, z: float, yaw: float) -> Floats:
    centres: Floats = shape.centres @ _yaw_rotation(yaw).T + np.array([x, y, z])  # (untyped in numpy's stubs)
    return centres


def _obstacle_gap(centres: Floats, radii: Floats, obstacles: Sequence[Obstacle]) -> float:
    gap = float("inf")
    for ob in obstacles:
        outside = np.maximum(np.maximum(ob.lo - centres, centres - ob.hi), 0.0)
        gap = min(gap, float((np.linalg.norm(outside, axis=1) - radii).min()))
    return gap


def work_area(envelope: Envelope, support: Support, around: float = WORK_AREA_MARGIN) -> Support:
    """The part of `support` within `around` of where the motion comes down to it (the envelope's capsules
    that reach below WORK_LAYER above the support): clutter where the cameras look and the hands work,
    not at the far end of the table. The whole support when nothing comes down."""
    (cx, cy), (hx, hy) = support.centre, support.half
    low = np.minimum(envelope.start[:, 2], envelope.end[:, 2]) - envelope.radius < support.z + WORK_LAYER
    if not low.any():
        return support
    ends = np.concatenate([envelope.start[low, :2], envelope.end[low, :2]])
    lo = np.maximum(ends.min(axis=0) - around, (cx - hx, cy - hy))
    hi = np.minimum(ends.max(axis=0) + around, (cx + hx, cy + hy))
    if np.any(hi <= lo):
        return support
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    return Support(support.name, (float(centre[0]), float(centre[1])), (float(half[0]), float(half[1])), support.z)


def place_distractors(shapes: Sequence[DistractorShape], support: Support, envelope: Envelope,
                      obstacles: Sequence[Obstacle], rng: np.random.Generator, clearance: float,
                      max_tries: int = MAX_TRIES, mode: str = "uniform") -> PlacementReport:
    """Place `shapes` (largest footprint first) on `support` (or the part of it given); see the module
    docstring."""
    if mode not in ("uniform", "tight"):
        raise ValueError(f"mode {mode!r}")
    report = PlacementReport()
    tallest = max((float((s.centres[:, 2] + s.radii).max()) for s in shapes), default=0.0)
    (cx, cy), (hx, hy) = support.centre, support.half
    near = envelope.near(np.array([cx - hx, cy - hy, support.z - 0.05]),
                         np.array([cx + hx, cy + hy, support.z + tallest + 0.05]))
    order = sorted(range(len(shapes)), key=lambda i: (-shapes[i].asset.footprint_radius, i))
    discs: list[tuple[float, float, float]] = []
    placed: dict[int, Placed] = {}
    for i in order:
        shape = shapes[i]
        r = shape.asset.footprint_radius
        span_x, span_y = hx - r - EDGE_MARGIN, hy - r - EDGE_MARGIN
        best: Placed | None = None
        for _ in range(max_tries):
            report.tries += 1
            x = round(cx + rng.uniform(-1.0, 1.0) * span_x, DECIMALS)
            y = round(cy + rng.uniform(-1.0, 1.0) * span_y, DECIMALS)
            yaw = round(rng.uniform(-math.pi, math.pi), DECIMALS)
            z = round(support.z + shape.asset.height, DECIMALS)
            if any(math.hypot(x - px, y - py) < r + pr + clearance for px, py, pr in discs):
                report.rejected["object"] += 1
                continue
            centres = spheres_at(shape, x, y, z, yaw)
            if _obstacle_gap(centres, shape.radii, obstacles) < clearance:
                report.rejected["obstacle"] += 1
                continue
            margin = near.margin(centres, shape.radii)
            if margin < 0.0:
                report.rejected["envelope"] += 1
                continue
            candidate = Placed(f"{shape.name}_{i}", shape.name, x, y, z, yaw, min(margin, 1e3))
            if mode == "uniform":
                best = candidate
                break
            if best is None or candidate.margin_m < best.margin_m:
                best = candidate
        if best is None:
            report.unplaced.append(shape.name)
            continue
        placed[i] = best
        discs.append((best.x, best.y, r))
    report.placed = [placed[i] for i in sorted(placed)]
    return report
