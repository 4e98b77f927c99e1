"""The swept exclusion envelope of a recorded episode: where anything that moves ever was.

From the file's own model and `/states`:

1. Forward kinematics of every recorded state. Every geom of a moving body (robot links and fingers,
   visual and collision alike, the task's free objects, an articulated door) gets sphere-chain proxies
   that provably cover it (x2.augment.proxies).
2. Adaptive temporal sampling. Between two recorded frames the joints are interpolated on their manifold
   (mj_differentiatePos / mj_integratePos); an interval is bisected while the proxies at its midpoint
   stray more than `temporal_tol` from the straight chord between its ends, up to `max_depth` times.
   The largest midpoint deviation left is the temporal bound.
3. Ramer-Douglas-Peucker compression of each proxy path with tolerance `eps`. The proxies of one body
   share breakpoints (a point is kept when any of them needs it); every sample stays within `eps` of
   its kept segment, and since a capsule is convex, so does the chord between two samples.
4. Each kept segment becomes a capsule inflated by proxy radius + `eps` + temporal bound + clearance.

So at every recorded frame (and, as far as the midpoint test sees, between them) every moving geom
lies inside the capsules shrunk by the clearance: a static object outside all capsules keeps at least
the clearance from everything that moved. x2.augment.check verifies that independently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import mujoco
import numpy as np

from x2.augment.proxies import Proxies, body_proxies
from x2.augment.records import EnvelopeParamsRecord, EnvelopeRecord
from x2.base.arrays import Floats, Ints

STATE = mujoco.mjtState.mjSTATE_INTEGRATION


@dataclass(frozen=True)
class EnvelopeParams:
    eps: float = 0.005  # m, RDP tolerance
    clearance: float = 0.02  # m, the gap kept between inserted objects and anything that moves
    temporal_tol: float = 0.002  # m, bisect a frame interval while its midpoint strays farther than this
    max_depth: int = 4  # at most 2^4 sub-steps per recorded frame
    cell: float = 0.04  # m, longest spacing of proxy spheres

    def as_dict(self) -> EnvelopeParamsRecord:
        return {"eps": self.eps, "clearance": self.clearance, "temporal_tol": self.temporal_tol,
                "max_depth": self.max_depth, "cell": self.cell}


@dataclass(frozen=True)
class Envelope:
    start: Floats  # (N, 3) capsule segment starts
    end: Floats  # (N, 3)
    radius: Floats  # (N,) inflated radii
    params: EnvelopeParams
    proxies: int = 0
    frames: int = 0
    samples: int = 0  # time samples after adaptive sampling (frames + inserted sub-steps)
    temporal_bound: float = 0.0  # m
    capsules_before: int = 0  # proxies x (samples - 1): one capsule per proxy per sample pair
    max_proxy_radius: float = 0.0
    bodies: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.radius)

    def inflation(self) -> float:
        """What every capsule adds to its proxy's radius."""
        return self.params.eps + self.temporal_bound + self.params.clearance

    def near(self, lo: Floats, hi: Floats) -> Envelope:
        """The capsules that reach into the box [lo, hi] (all others are farther than their radius)."""
        cap_lo = np.minimum(self.start, self.end) - self.radius[:, None]
        cap_hi = np.maximum(self.start, self.end) + self.radius[:, None]
        keep = np.all((cap_hi >= lo) & (cap_lo <= hi), axis=1)
        return replace(self, start=self.start[keep], end=self.end[keep], radius=self.radius[keep])

    def margin(self, centres: Floats, radii: Floats) -> float:
        """Smallest (distance between sphere and capsule surfaces) over the spheres and capsules;
        negative when a sphere reaches into a capsule. +inf without capsules."""
        if len(self.radius) == 0 or len(radii) == 0:
            return float("inf")
        seg = self.end - self.start  # (N, 3)
        length2 = np.einsum("ij,ij->i", seg, seg)
        rel = centres[:, None, :] - self.start[None, :, :]  # (Q, N, 3)
        t = np.einsum("qnj,nj->qn", rel, seg) / np.where(length2 > 0, length2, 1.0)
        t = np.clip(t, 0.0, 1.0)
        gap = rel - t[..., None] * seg[None, :, :]
        dist = np.sqrt(np.einsum("qnj,qnj->qn", gap, gap)) - self.radius[None, :] - radii[:, None]
        return float(dist.min())

    def summary(self) -> EnvelopeRecord:
        return {"params": self.params.as_dict(), "frames": self.frames, "samples": self.samples,
                "proxies": self.proxies, "capsules_before": self.capsules_before, "capsules": len(self),
                "temporal_bound_m": round(self.temporal_bound, 6),
                "max_proxy_radius_m": round(self.max_proxy_radius, 6),
                "inflation_m": round(self.inflation(), 6), "bodies": list(self.bodies)}

    def as_array(self) -> Floats:
        """(N, 7): start xyz, end xyz, radius; what an episode file stores."""
        return np.column_stack([self.start, self.end, self.radius])


def moving_geoms(model: mujoco.MjModel) -> Ints:
    """Geoms of bodies that can move (not welded to the world): the robot, free objects, doors."""
    return np.flatnonzero(model.body_weldid[model.geom_bodyid] != 0)


class _Poser:
    """Body poses for a generalised position, on one MjData."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self.model, self.data = model, mujoco.MjData(model)

    def from_state(self, state: Floats) -> Floats:
        mujoco.mj_setState(self.model, self.data, state, STATE)
        qpos: Floats = self.data.qpos.copy()  # MuJoCo's arrays are float64 (its bindings ship no types)
        return qpos

    def pose(self, qpos: Floats) -> tuple[Floats, Floats]:
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        return self.data.xpos.copy(), self.data.xmat.reshape(-1, 3, 3).copy()

    def midpoint(self, qa: Floats, qb: Floats) -> Floats:
        vel = np.zeros(self.model.nv)
        mujoco.mj_differentiatePos(self.model, vel, 1.0, qa, qb)
        q = qa.copy()
        mujoco.mj_integratePos(self.model, q, vel, 0.5)
        return q


def _adaptive_samples(poser: _Poser, proxies: Proxies, qpos: Floats, tol: float,
                      max_depth: int) -> tuple[Floats, float]:
    """Proxy centres at the recorded frames plus the sub-steps the chord test asked for: (M, P, 3)."""
    frames = []
    for q in qpos:
        xpos, xmat = poser.pose(q)
        frames.append(proxies.world_centers(xpos, xmat))
    samples: list[Floats] = [frames[0]]
    bound = 0.0
    for t in range(len(qpos) - 1):
        # Depth-first bisection keeps the samples in time order.
        stack = [(qpos[t], qpos[t + 1], frames[t], frames[t + 1], 0)]
        while stack:
            qa, qb, xa, xb, depth = stack.pop()
            qm = poser.midpoint(qa, qb)
            xm = proxies.world_centers(*poser.pose(qm))
            deviation = float(np.max(np.linalg.norm(xm - 0.5 * (xa + xb), axis=1))) if len(xm) else 0.0
            if deviation > tol and depth < max_depth:
                stack.append((qm, qb, xm, xb, depth + 1))
                stack.append((qa, qm, xa, xm, depth + 1))
                continue
            bound = max(bound, deviation)
            samples.append(xb)
    return np.stack(samples), bound


def _segment_distance(points: Floats, a: Floats, b: Floats) -> Floats:
    """Distance of points (L, P, 3) to segments a -> b (P, 3), per point: (L, P)."""
    ab = b - a
    length2 = np.einsum("pj,pj->p", ab, ab)
    rel = points - a[None]
    t = np.clip(np.einsum("lpj,pj->lp", rel, ab) / np.where(length2 > 0, length2, 1.0), 0.0, 1.0)
    distance: Floats = np.linalg.norm(rel - t[..., None] * ab[None], axis=-1)  # (untyped in numpy's stubs)
    return distance


def rdp_keep(path: Floats, eps: float) -> Ints:
    """Indices kept by Ramer-Douglas-Peucker on paths (M, P, 3) that share breakpoints: every dropped
    sample of every path is within `eps` of its path's kept segment."""
    m = len(path)
    keep = np.zeros(m, bool)
    keep[0] = keep[-1] = True
    stack = [(0, m - 1)]
    while stack:
        i, j = stack.pop()
        if j - i < 2:
            continue
        dist = _segment_distance(path[i + 1:j], path[i], path[j]).max(axis=1)
        k = int(np.argmax(dist))
        if dist[k] > eps:
            split = i + 1 + k
            keep[split] = True
            stack += [(i, split), (split, j)]
    return np.flatnonzero(keep)


def build_envelope(model: mujoco.MjModel, states: Floats, params: EnvelopeParams = EnvelopeParams()) -> Envelope:
    """The envelope of `states` (T, D: mjSTATE_INTEGRATION rows) in `model`."""
    poser = _Poser(model)
    proxies = body_proxies(model, moving_geoms(model), params.cell)
    qpos = np.stack([poser.from_state(s) for s in states])
    path, bound = _adaptive_samples(poser, proxies, qpos, params.temporal_tol, params.max_depth)
    starts, ends, radii = [], [], []
    inflate = params.eps + bound + params.clearance
    for body in np.unique(proxies.body):
        members = np.flatnonzero(proxies.body == body)
        kept = rdp_keep(path[:, members], params.eps)
        if len(kept) == 1:
            kept = np.array([0, 0])
        seg_a, seg_b = path[kept[:-1]][:, members], path[kept[1:]][:, members]  # (S, Pb, 3)
        starts.append(seg_a.reshape(-1, 3))
        ends.append(seg_b.reshape(-1, 3))
        radii.append(np.tile(proxies.radius[members] + inflate, len(kept) - 1))
    names = tuple(model.body(int(b)).name for b in np.unique(proxies.body))
    if not starts:
        empty = np.zeros((0, 3))
        return Envelope(empty, empty, np.zeros(0), params, 0, len(states), len(path), bound, 0, 0.0, names)
    return Envelope(np.concatenate(starts), np.concatenate(ends), np.concatenate(radii), params,
                    len(proxies), len(states), len(path), bound, len(proxies) * (len(path) - 1),
                    float(proxies.radius.max()), names)
