"""The independent checker: true geom distances between inserted and recorded geometry, every frame.

It trusts nothing the envelope or the placement computed. From the augmented world's own compiled model
and the recorded states it measures, with MuJoCo's exact `mj_geomDistance` (after a bounding-sphere
broadphase), the distance between every inserted geom and every geom that moves, at every recorded
frame; between inserted geoms and the world's static geometry; between distractors; and how each
distractor rests on its support. An augmented world closer than the clearance anywhere is rejected.

`settle` is the physical check of the resting poses: the distractors alone, as free bodies on the
support, for one second of simulation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np

from x2.augment.envelope import STATE, moving_geoms
from x2.augment.placement import SUPPORT_GEOM, Placed, Support
from x2.augment.records import CheckRecord, SettleRecord
from x2.base.arrays import Floats
from x2.envspec.env import AssetSpec, BoothSpec, ObjectInstance
from x2.sim.layout import Placement
from x2.sim.mujoco.booth import set_options
from x2.sim.mujoco.segments import INSERTED_PREFIX
from x2.sim.mujoco.world import add_object, object_body

MEASURED_BEYOND = 0.03  # m past the clearance
SUPPORT_TOLERANCE = 0.001  # m: a resting distractor touches its support within this
SETTLE_SECONDS = 1.0
SETTLE_MOVE = 0.005  # m: farther than this in a second of free simulation is not at rest
SETTLE_TILT = 0.05  # rad


def inserted_name(distractor: str, geom: str) -> str:
    return f"{INSERTED_PREFIX}{distractor}/{geom}"


def _owner(name: str) -> str:
    return name[len(INSERTED_PREFIX):].split("/", 1)[0]


@dataclass
class CheckResult:
    clearance: float
    reach: float = 0.0  # distances below this are measured exactly; a None minimum means none came nearer
    frames: int = 0
    inserted: int = 0  # inserted geoms
    moving: int = 0  # moving geoms they were measured against
    pairs_measured: int = 0  # exact distance calls (frame, inserted, other) after the broadphase
    min_distance_m: float = math.inf  # to anything that moves, over every frame
    closest: tuple[int, str, str] | None = None  # frame, inserted geom, moving geom
    violations: int = 0  # (frame, pair) closer than the clearance
    static_min_m: float = math.inf  # to the world's static geometry (support excluded)
    between_min_m: float = math.inf  # between distinct distractors
    support_gap_m: dict[str, float] = field(default_factory=dict)  # distractor -> gap to its support
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def as_dict(self) -> CheckRecord:
        def r(v: float) -> float | None:
            return None if math.isinf(v) else round(v, 6)
        return {"passed": self.passed, "clearance_m": self.clearance, "measured_within_m": self.reach,
                "frames": self.frames,
                "inserted_geoms": self.inserted, "moving_geoms": self.moving, "pairs_measured": self.pairs_measured,
                "min_distance_m": r(self.min_distance_m),
                "closest": None if self.closest is None else list(self.closest), "violations": self.violations,
                "static_min_m": r(self.static_min_m), "between_min_m": r(self.between_min_m),
                "support_gap_m": {k: round(v, 6) for k, v in sorted(self.support_gap_m.items())},
                "problems": list(self.problems)}


def _distance(model: mujoco.MjModel, data: mujoco.MjData, a: int, b: int, distmax: float) -> float:
    """Signed distance between two geoms, or inf when they are at least `distmax` apart."""
    fromto = np.zeros(6)
    dist = float(mujoco.mj_geomDistance(model, data, a, b, distmax, fromto))
    return math.inf if dist >= distmax else dist


def check_world(model: mujoco.MjModel, states: Floats, clearance: float,
                support: str = SUPPORT_GEOM) -> CheckResult:
    """Measure the inserted geoms (named ``augment/...``) of `model` against the motion in `states`."""
    # Pairs nearer than `reach` are measured exactly (so the closest approach is reported, not only whether
    # it breaks the clearance); farther ones are cleared by their bounding spheres alone.
    reach = clearance + MEASURED_BEYOND
    result = CheckResult(clearance=clearance, reach=reach, frames=len(states))
    names = [model.geom(g).name for g in range(model.ngeom)]
    inserted = np.array([g for g, n in enumerate(names) if n.startswith(INSERTED_PREFIX)], int)
    moving = moving_geoms(model)
    moving = moving[model.geom_type[moving] != mujoco.mjtGeom.mjGEOM_PLANE]
    result.inserted, result.moving = len(inserted), len(moving)
    if not len(inserted):
        return result
    data = mujoco.MjData(model)
    # Static geometry: once.
    mujoco.mj_kinematics(model, data)
    support_id = model.geom(support).id
    skip = {*inserted.tolist(), support_id}
    static = [g for g in range(model.ngeom) if model.body_weldid[model.geom_bodyid[g]] == 0 and g not in skip
              and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE]
    for a in inserted:
        owner = _owner(names[a])
        gap = _distance(model, data, int(a), support_id, 0.5)
        result.support_gap_m[owner] = min(result.support_gap_m.get(owner, math.inf), gap)
        for b in static:
            result.static_min_m = min(result.static_min_m, _distance(model, data, int(a), b, reach))
        for b in inserted:
            if b > a and _owner(names[b]) != owner:
                result.between_min_m = min(result.between_min_m, _distance(model, data, int(a), int(b), reach))
    # Moving geometry: every frame, exact distances where the bounding spheres come near.
    centres = np.empty((len(states), len(moving), 3))
    for t, state in enumerate(states):
        mujoco.mj_setState(model, data, state, STATE)
        mujoco.mj_kinematics(model, data)
        centres[t] = data.geom_xpos[moving]
    fixed = data.geom_xpos[inserted].copy()
    gap = np.linalg.norm(centres[:, :, None, :] - fixed[None, None], axis=-1)
    gap -= model.geom_rbound[moving][None, :, None] + model.geom_rbound[inserted][None, None, :]
    frames, mi, ii = np.nonzero(gap < reach)
    result.pairs_measured = len(frames)
    current = -1
    for t, m, i in zip(frames.tolist(), mi.tolist(), ii.tolist(), strict=True):
        if t != current:
            mujoco.mj_setState(model, data, states[t], STATE)
            mujoco.mj_kinematics(model, data)
            current = t
        dist = _distance(model, data, int(inserted[i]), int(moving[m]), reach)
        if dist < result.min_distance_m:
            result.min_distance_m = dist
            result.closest = (t, names[inserted[i]], names[moving[m]])
        if dist < clearance:
            result.violations += 1
    if result.violations:
        frame, first, second = result.closest or (0, "?", "?")
        result.problems.append(f"{result.violations} frame-pairs closer than the clearance {clearance} m; closest "
                               f"{result.min_distance_m:.4f} m between {first} and {second} at frame {frame}")
    if result.static_min_m < clearance:
        result.problems.append(f"{result.static_min_m:.4f} m from the world's static geometry "
                               f"(clearance {clearance} m)")
    if result.between_min_m < clearance:
        result.problems.append(f"distractors {result.between_min_m:.4f} m apart (clearance {clearance} m)")
    for owner, gap_m in sorted(result.support_gap_m.items()):
        if abs(gap_m) > SUPPORT_TOLERANCE:
            result.problems.append(f"{owner} is {gap_m * 1000:.2f} mm from its support {support!r} (allowed: "
                                   f"resting on it within {SUPPORT_TOLERANCE * 1000:.0f} mm)")
    return result


def settle(placed: Sequence[Placed], assets: dict[str, AssetSpec], support: Support,
           booth: BoothSpec = BoothSpec(), seconds: float = SETTLE_SECONDS) -> dict[str, SettleRecord]:
    """Each distractor as a free body on a copy of the support, simulated for `seconds`: how far each
    origin moved (m) and how far it tilted (rad). At rest means under SETTLE_MOVE and SETTLE_TILT."""
    if not placed:
        return {}
    spec = mujoco.MjSpec()
    set_options(spec, booth)
    (cx, cy), (hx, hy) = support.centre, support.half
    spec.worldbody.add_geom(name=support.name, type=mujoco.mjtGeom.mjGEOM_BOX, size=[hx, hy, 0.02],
                            pos=[cx, cy, support.z - 0.02])
    for p in placed:
        asset = assets[p.asset]
        body = add_object(spec, ObjectInstance(p.name, (asset,), ()), asset, Placement(p.x, p.y, p.z, p.yaw))
        if not asset.free:  # free here whatever the asset says: the question is whether it would stay
            body.add_freejoint()
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    bodies = [model.body(object_body(p.name)).id for p in placed]
    start_pos = data.xpos[bodies].copy()
    start_z = data.xmat[bodies].reshape(-1, 3, 3)[:, :, 2].copy()
    for _ in range(round(seconds / model.opt.timestep)):
        mujoco.mj_step(model, data)
    moved = np.linalg.norm(data.xpos[bodies] - start_pos, axis=1)
    end_z = data.xmat[bodies].reshape(-1, 3, 3)[:, :, 2]
    tilt = np.arccos(np.clip(np.einsum("ij,ij->i", start_z, end_z), -1.0, 1.0))
    return {p.name: {"moved_m": round(float(moved[i]), 6), "tilt_rad": round(float(tilt[i]), 6)}
            for i, p in enumerate(placed)}


def restless(settled: Mapping[str, SettleRecord]) -> list[str]:
    """Distractors that did not stay where they were put."""
    return [name for name, s in settled.items() if s["moved_m"] > SETTLE_MOVE or s["tilt_rad"] > SETTLE_TILT]
