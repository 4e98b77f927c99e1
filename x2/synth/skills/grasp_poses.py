"""Grasp candidates for a free object: annotated `grasp*` sites plus primitive-shape heuristics.

A candidate is a tcp pose. Tool convention (x2/robots/artixon/gripper_*.xml): tcp +z is the approach
axis (it points into the object), the fingers close along tcp y, the tcp sits between the fingertips.
Candidates come from

- annotated sites `<obj>/grasp*`: a site whose +z points down or sideways is a full tcp frame (as the
  microwave's `door_grasp`); one whose +z points up (the fruit assets' identity frames) marks the grasp
  point of a top grasp with the fingers closing along the site's y;
- the object's collision geoms: box / ellipsoid: top grasps across a horizontal face axis (the short
  one, both when they are alike) at yaw k*90 deg; sphere and upright cylinder / capsule: top grasps at
  every 45 deg of yaw; a lying cylinder / capsule: a top grasp across its axis, and when the object is a
  chain of them (the banana) only across the one nearest the object's middle.

Every candidate must fit the jaw (the object's width along the closing axis inside the open jaw, wider
than the closed one). Top grasps also come leaned 20 and 35 deg about the closing axis, the tool's top
towards the robot (the wrist comes nearer; pads stay on the same faces), at a height where the fingertips
clear the table and the palm the object's top. Poses beyond a cheap reach test are dropped, the rest
ranked by how far the wrist must twist from its natural yaw for the reach, by lean, and annotated before
heuristic. `choose_grasp` samples the order of the best few (MotionSettings.grasp_variety, default 3) from
the attempt's "grasp" stream and keeps
the first with a collision-free IK solution and a collision-free straight approach.

IK here is damped least squares (motion/seeded.py) from a few seeds, with the other wrist branch when a
solution collides, and straight lines follow the tcp path the same way (motion/paths.py): each costs
milliseconds, where mink with random restarts costs 0.1-1 s a solve.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import PlanningError
from x2.base.vectors import cross, norm
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.context import SynthContext
from x2.synth.motion.paths import straight
from x2.synth.motion.seeded import seeded_ik
from x2.synth.segments import SkillFailure
from x2.synth.skills.shapes import (
    UP,
    ArmReach,
    GripperGeometry,
    Shape,
    arm_reach,
    gripper_geometry,
    object_geoms,
    object_shape,
    rot_about,
    shape_of,
)

FIT_CLEARANCE = 0.002  # m per side left by the open jaw (gripper_g.xml: an 84 mm orange in the 90 mm jaw)
SQUEEZE_MIN = 0.004  # m: an object must be this much wider than the closed jaw for the pads to squeeze it
TABLE_CLEARANCE = 0.006  # m kept between the fingertips and the table at the grasp
PALM_CLEARANCE = 0.01  # m kept between the object's top and the palm (the finger roots)
LEANS = np.deg2rad([0.0, 20.0, 35.0])  # top grasps tilted about the closing axis: the wrist comes nearer
MIN_SLACK = 0.015  # m of reach slack a grasp needs (ArmReach): at the very edge, joint limits bite first
FLIP_COST = 0.2  # rad-equivalent cost of turning the wrist the long way round to the same jaw axis
HEURISTIC_COST = 0.05  # rad-equivalent preference for an annotated grasp over a shape heuristic
LINE_STEP = 0.01  # m between straight-line waypoints: a joint-space chord over 1 cm strays well under a mm
MAX_JUMP = 0.15  # rad per step: more is an IK branch switch (kept lines' largest step on pick_place and
# fruit_in_microwave, 16 attempts: 0.13)
COLD_ITERS = 120  # DLS iterations from a distant seed (25 us each, motion/seeded.py)
MAX_TRIES = 6  # candidates given an IK solve and a straight approach (a few ms each)
ROUND_YAWS = 8  # yaw samples (every 45 deg) for shapes that are round about the vertical
ALIKE = 0.1  # relative difference of two half sizes below which a box has no short side
PART_RADIUS = 0.03  # m: geoms centred this near an annotated grasp site are the part it grasps (a handle bar)
LYING = 0.7  # |cos| between a rod's axis and the vertical below which it lies (grasped across, from above)


# ----- candidates ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraspCandidate:
    pos: Floats  # tcp position (world)
    rot: Floats  # tcp rotation (columns: x, y = closing axis, z = approach axis)
    width: float  # m, the object's extent along the closing axis
    source: str  # "site:<name>" or "<geom type>:<geom name>"
    score: float = 0.0  # lower is better

    @property
    def approach(self) -> Floats:
        return self.rot[:, 2]


def top_rotation(closing: Floats) -> Floats:
    """The tcp rotation of a top grasp (approach straight down) whose fingers close along `closing`."""
    y = np.array([closing[0], closing[1], 0.0])
    y /= norm(y)
    z = -UP
    return np.stack([cross(y, z), y, z], axis=1)


def _yaw(angle: float) -> Floats:
    return np.array([np.cos(angle), np.sin(angle), 0.0])


def raw_candidates(model: mujoco.MjModel, data: mujoco.MjData, obj: str,
                   site: str | None = None) -> list[GraspCandidate]:
    """Every candidate from the asset's annotations and shape, before fit checks and ranking; with `site`,
    only that annotated site's (a task that names a part, e.g. a mug's handle, means that part)."""
    out: list[GraspCandidate] = []
    for sid in range(model.nsite):
        name = model.site(sid).name
        if not (name == site if site is not None else name.startswith(f"{obj}/grasp")):
            continue
        p, r = data.site_xpos[sid].copy(), data.site_xmat[sid].reshape(3, 3)
        if r[:, 2] @ UP > 0.5:  # an upward frame marks a top grasp closing along its y
            rots = [top_rotation(r[:, 1]), top_rotation(-r[:, 1])]
        else:  # a full tcp frame; the jaw is symmetric, so its 180 deg twist is the same grasp
            rots = [r.copy(), r @ np.diag([-1.0, -1.0, 1.0])]
        out += [GraspCandidate(p, rr, 0.0, f"site:{name}") for rr in rots]
    if site is not None:
        return out
    geoms = object_geoms(model, obj)
    centroid = data.geom_xpos[geoms].mean(axis=0)
    rods = (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER)
    lying = [i for i, g in enumerate(geoms)
             if int(model.geom_type[g]) in rods and abs(data.geom_xmat[g].reshape(3, 3)[:, 2] @ UP) < LYING]
    middle = min(lying, key=lambda i: float(np.linalg.norm(data.geom_xpos[geoms[i]] - centroid))) if lying else None
    for i, g in enumerate(geoms):
        t, s = int(model.geom_type[g]), model.geom_size[g]
        centre = data.geom_xpos[g].copy()
        axes = data.geom_xmat[g].reshape(3, 3)
        tag = f"{mujoco.mjtGeom(t).name.removeprefix('mjGEOM_').lower()}:{model.geom(g).name}"
        yaws: list[Floats] = []
        if t in (mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_ELLIPSOID):
            vertical = int(np.argmax(np.abs(axes.T @ UP)))
            h = [k for k in range(3) if k != vertical]
            a, b = s[h[0]], s[h[1]]
            if abs(a - b) <= ALIKE * max(a, b) and t == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
                yaws = [_yaw(k * 2 * np.pi / ROUND_YAWS) for k in range(ROUND_YAWS)]
            else:
                across = [h[0]] if a < b * (1 - ALIKE) else [h[1]] if b < a * (1 - ALIKE) else h
                yaws = [sign * axes[:, k] for k in across for sign in (1.0, -1.0)]
        elif t == mujoco.mjtGeom.mjGEOM_SPHERE:
            yaws = [_yaw(k * 2 * np.pi / ROUND_YAWS) for k in range(ROUND_YAWS)]
        elif t in rods:
            if i in lying:
                if i != middle:
                    continue
                across = np.cross(UP, axes[:, 2])
                yaws = [across, -across]
            else:
                yaws = [_yaw(k * 2 * np.pi / ROUND_YAWS) for k in range(ROUND_YAWS)]
        out += [GraspCandidate(centre, top_rotation(y), 0.0, tag) for y in yaws if np.hypot(y[0], y[1]) > 1e-6]
    return out


def part_shapes(model: mujoco.MjModel, data: mujoco.MjData, obj: str,
                candidates: list[GraspCandidate]) -> dict[str, Shape]:
    """For each annotated candidate, the object's geoms whose centres lie within PART_RADIUS of its site: what
    the jaw closes round when the object as a whole is wider than it opens."""
    geoms = object_geoms(model, obj)
    out: dict[str, Shape] = {}
    for c in candidates:
        if not c.source.startswith("site:") or c.source in out:
            continue
        near = geoms[np.linalg.norm(data.geom_xpos[geoms] - c.pos, axis=1) < PART_RADIUS]
        if len(near):
            out[c.source] = shape_of(model, data, near, np.zeros(3), np.eye(3))
    return out


def fit_and_rank(candidates: list[GraspCandidate], shape_world: Shape, gripper: GripperGeometry, table_z: float,
                 reach: ArmReach, parts: dict[str, Shape] | None = None) -> list[GraspCandidate]:
    """Drop candidates the jaw cannot take; add leaning variants of top grasps; set top grasps' height so
    the fingertips clear the table and the palm the object's top; drop what is out of reach; rank (wrist
    twist away from its natural yaw, lean, a small preference for annotated grasps). An annotated grasp on an
    object too wide for the jaw as a whole fits if its part (`parts`, by source) does: a tray's handle."""
    kept: list[GraspCandidate] = []
    top = shape_world.support(UP)
    centre = shape_world.pos.mean(axis=0)
    natural = natural_closing_axis(reach.shoulder, centre)
    outward = centre[:2] - reach.shoulder[:2]

    def fits(w: float) -> bool:
        return gripper.gap_closed + SQUEEZE_MIN < w < gripper.gap_open - 2 * FIT_CLEARANCE

    for c in candidates:
        width = shape_world.width(c.rot[:, 1])
        if not fits(width) and parts and c.source in parts:
            width = parts[c.source].width(c.rot[:, 1])
        if not fits(width):
            continue
        top_grasp = float(c.approach @ -UP) > 0.9
        twist = float(np.arccos(np.clip(abs(c.rot[:, 1] @ natural), 0.0, 1.0)))  # jaw symmetric: 0..pi/2
        flip = 0.0 if c.rot[:, 1] @ natural >= 0 else FLIP_COST  # the same grasp turned 180 deg: a longer turn
        annotated = 0.0 if c.source.startswith("site:") else HEURISTIC_COST
        for lean in LEANS if top_grasp else (0.0,):
            # tilt about the closing axis (the pads stay on the same faces), the tool's top towards the robot
            sign = 1.0 if c.rot[:2, 0] @ outward >= 0 else -1.0
            rot = rot_about(c.rot[:, 1], sign * lean) @ c.rot
            pos = c.pos.copy()
            if top_grasp:
                pos[2] = max(pos[2], table_z + TABLE_CLEARANCE + gripper.fingertips_below(rot),
                             top + PALM_CLEARANCE + gripper.palm_below(rot))
            if reach.slack(pos, rot) < MIN_SLACK:
                continue
            kept.append(GraspCandidate(pos, rot, width, c.source, twist + flip + lean + annotated))
    kept.sort(key=lambda c: c.score)
    return _dedupe(kept)


def _dedupe(ranked: list[GraspCandidate]) -> list[GraspCandidate]:
    out: list[GraspCandidate] = []
    for c in ranked:
        if not any(norm(c.pos - o.pos) < 0.005 and np.trace(c.rot.T @ o.rot) > 2.99 for o in out):
            out.append(c)
    return out


def natural_closing_axis(shoulder: Floats, target: Floats) -> Floats:
    """The closing axis a top grasp has with the wrist untwisted: across the horizontal reach direction
    (at home, reaching along +x, the jaw closes along +y)."""
    d = target[:2] - shoulder[:2]
    d /= max(float(np.linalg.norm(d)), 1e-9)
    return np.array([-d[1], d[0], 0.0])


def order_for_trial(ranked: list[GraspCandidate], rng: np.random.Generator, variety: int) -> list[GraspCandidate]:
    """The best `variety` in an order drawn from the grasp stream, then the rest in rank order (fall-backs)."""
    few = ranked[:variety]
    return [few[i] for i in rng.permutation(len(few))] + ranked[variety:]


# ----- fast IK ---------------------------------------------------------------------------------------
def solve_pose(ctx: SynthContext, arm: str, pos: Floats, rot: Floats, seeds: list[Floats]) -> Floats:
    """A collision-free configuration for the tcp pose: damped least squares from each seed and, when the
    result collides, from the same pose with the wrist flipped (~3 ms a try). Not mink with random
    restarts (`ctx.solve_ik`, 0.1-1 s a solve): on this task's grasps and places it found a solution where
    these seeds had none in 1 of 21 cases. Raises SkillFailure("ik infeasible")."""
    world = ctx.world()
    ik = seeded_ik(world, arm)
    ctx.stats.ik_calls += 1
    lo, hi = world.joint_range[arm][:, 0], world.joint_range[arm][:, 1]
    converged = False
    for seed in seeds:
        q = ik.solve(pos, rot, seed, iters=COLD_ITERS)
        if q is None:
            continue
        converged = True
        if not world.in_collision({arm: q}):
            return q
        flipped = _wrist_flip(q, lo, hi)
        if flipped is not None:
            q = ik.solve(pos, rot, flipped, iters=COLD_ITERS)
            if q is not None and not world.in_collision({arm: q}):
                return q
    why = "every solution collides" if converged else "no solution converges"
    raise SkillFailure("ik infeasible", f"arm {arm!r}: tcp at {np.round(pos, 3).tolist()}: {why}")


def _wrist_flip(q: Floats, lo: Floats, hi: Floats) -> Floats | None:
    """The other wrist branch of a roll-pitch-roll wrist (j4, j5, j6: same tool pose), if within limits."""
    out = q.copy()
    out[3], out[4], out[5] = q[3] + np.pi, -q[4], q[5] + np.pi
    for j in (3, 5):
        if out[j] > hi[j]:
            out[j] -= 2 * np.pi
    return out if np.all(out >= lo) and np.all(out <= hi) else None


def straight_line(world: CollisionWorld, arm: str, q_start: Floats, displacement: Floats, *,
                  partial: bool = False) -> Floats:
    """Pick and place's straight moves (approach, lift, the way in and out of a place): `paths.straight`
    at LINE_STEP and MAX_JUMP, every waypoint and midpoint checked against the world as its allowances
    stand (fingers-object while grasping, the support while lifting). Joint waypoints, first = q_start;
    where the line breaks off: PlanningError, or with `partial` the waypoints up to there."""
    path = straight(seeded_ik(world, arm), q_start, displacement, lambda q, s: world.in_collision({arm: q}),
                    step=LINE_STEP, max_jump=MAX_JUMP, midpoints=True, partial=partial,
                    explain=lambda q, s: world.colliding_pairs({arm: q})[:3], refine=world.refine_jumps)
    return path.waypoints


# ----- choosing one ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraspPlan:
    candidate: GraspCandidate
    q_grasp: Floats
    retreat: Floats  # (n, dof) straight-line waypoints from q_grasp back to the pre-grasp pose


def choose_grasp(ctx: SynthContext, obj: str, arm: str, approach: float, site: str | None = None) -> GraspPlan:
    """Rank the object's grasps, try the sampled best few with IK and a straight approach, return the first
    that works. Fingers-object contact is allowed in the collision world while this runs (the caller keeps
    it allowed through the approach and clears it after the grasp)."""
    backend = ctx.backend
    model, data = backend.model, backend.data
    arm_model = ctx.env.robot.arm(arm)
    g = ctx.env.robot.gripper
    gripper = gripper_geometry(model, data, arm_model, backend.finger_bodies(arm), g.closed_ctrl, g.open_ctrl,
                               backend.jaw())
    reach = arm_reach(model, data, arm_model)
    shape_world = object_shape(model, data, obj, world=True)
    raw = raw_candidates(model, data, obj, site)
    parts = part_shapes(model, data, obj, raw)
    reachable = fit_and_rank(raw, shape_world, gripper, backend.table_height, reach, parts)
    if not reachable:
        fits = fit_and_rank(raw, shape_world, gripper, backend.table_height,
                            ArmReach(reach.shoulder, np.inf, reach.wrist_offset), parts)
        if fits:
            raise SkillFailure("target unreachable", f"{obj} is beyond the {arm} arm's reach")
        raise SkillFailure("no grasp", f"{obj}: no grasp fits the {g.kind} jaw ({gripper.gap_open * 1e3:.0f} mm open)")
    world = ctx.world()
    world.allow((obj, f) for f in backend.finger_bodies(arm))
    seeds = [ctx.executor.arm_target(arm), np.array(arm_model.home)]
    errors: list[str] = []
    for cand in order_for_trial(reachable, ctx.rng["grasp"], ctx.motion.grasp_variety)[:MAX_TRIES]:
        try:
            q = solve_pose(ctx, arm, cand.pos, cand.rot, seeds)
            retreat = straight_line(world, arm, q, -cand.approach * approach)
        except (SkillFailure, PlanningError) as exc:
            errors.append(f"{cand.source}: {exc}"[:160])
            continue
        return GraspPlan(cand, q, retreat)
    raise SkillFailure("no grasp", f"{obj}: none of {min(len(reachable), MAX_TRIES)} grasps is feasible: "
                       + "; ".join(errors))
