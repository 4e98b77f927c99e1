"""Moves for skills that touch their target on purpose (press, push, pull, twist), and the geometry
they are planned from.

They follow tcp paths (motion/paths.py: a straight line, a screw about a joint's axis) in fine steps,
so a guard can cut the track anywhere, with a collision policy of their own: exactly one kind of
contact is allowed, the arm's gripper (fingers, pads, palm) against the skill's target object, which
is the point of the skill. Everything else (the table, other objects, the other arm, the arm's own
links) still counts. The allowed contacts are filtered from the collision world's contact list after
each check instead of being registered with `CollisionWorld.allow`, so the shared world's allowances
(other skills') are never changed or cleared here.

Geometry (how far the fingertips reach past the tcp, the faces of an object) is read from the
compiled model, so the skills follow whichever gripper and asset the episode drew.
"""

from __future__ import annotations

import mujoco
import numpy as np

from x2.base.arrays import Floats, Ints
from x2.base.errors import PathBreak
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.context import SynthContext
from x2.synth.motion import paths
from x2.synth.motion.seeded import seeded_ik
from x2.synth.segments import ArmTrack, SkillFailure
from x2.synth.skills.shapes import object_geoms, subtree_geoms

# Fractions of the context's joint limits for straight and screw moves. In contact: the tcp moves at
# ~3-5 cm/s near the table (the arm is folded there, so joints turn fast per mm), slow enough that a
# 30 Hz guard overshoots its condition by ~1.5 mm at most. Near the target (approach, retreat): faster,
# still well under free-space speed.
CONTACT_SPEED = 0.5
NEAR_SPEED = 0.8
# Gripper strokes: the G and H grippers close fully within 0.5 s (gripper test in
# tests/test_sim_mujoco_models.py), i.e. 15 ticks at 30 Hz.
GRIPPER_TICKS = 15
LINE_STEP = 0.005  # m between IK waypoints of a straight move: the track the guard cuts is this fine
SCREW_STEP = 0.04  # rad of tcp rotation between IK waypoints of a screw move (~1 mm at a 25 mm radius)
MAX_JOINT_STEP = 0.15  # rad per step: more is an IK branch switch (largest kept step on the contact tests'
# scenes, 32 attempts: 0.04)


def unit(v: Floats) -> Floats:
    v = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(v))
    if n < 1e-9:
        raise SkillFailure("target unreachable", "a direction of zero length")
    return v / n


def tool_frame(approach: Floats, x_hint: Floats) -> Floats:
    """Tool rotation (columns x, y, z) with +z along `approach` and x as close to `x_hint` as possible."""
    z = unit(approach)
    x = np.asarray(x_hint, dtype=np.float64) - np.dot(x_hint, z) * z
    if np.linalg.norm(x) < 1e-6:  # hint along the approach: any perpendicular will do
        x = np.cross(z, [1.0, 0.0, 0.0] if abs(z[0]) < 0.9 else [0.0, 1.0, 0.0])
    x = unit(x)
    return np.column_stack([x, np.cross(z, x), z])


# ----- geometry from the model ------------------------------------------------------------------------
def gripper_geoms(model: mujoco.MjModel, tcp_site: int) -> Ints:
    """The gripper's geoms: the subtree of the body that carries the tcp site."""
    return subtree_geoms(model, int(model.site_bodyid[tcp_site]))


def extent(model: mujoco.MjModel, data: mujoco.MjData, geoms: Ints, origin: Floats,
           direction: Floats) -> float:
    """How far the geoms reach from `origin` along the world `direction` (their bounding boxes' support)."""
    u = unit(direction)
    best = -np.inf
    for g in geoms:
        rot = data.geom_xmat[g].reshape(3, 3)
        centre = data.geom_xpos[g] + rot @ model.geom_aabb[g, :3] - origin
        best = max(best, float(centre @ u + np.abs(rot.T @ u) @ model.geom_aabb[g, 3:]))
    return best


def gripper_reach(ctx: SynthContext, arm: str, local_dir: Floats, band: float | None = None) -> float:
    """How far the gripper (at its current opening) reaches past the tcp along a tool-frame direction;
    along +z this is the fingertips' distance below the tcp. With `band`, only parts reaching within
    `band` m of the fingertips count (what can touch an object that high when the tips are at its foot)."""
    world = ctx.world()
    tcp, rot = world.tcp_pose(arm)  # also leaves the world's kinematics at its state
    m, d = world.model, world.data
    geoms = gripper_geoms(m, world.tcp_site[arm])
    if band is not None:
        down = [extent(m, d, np.array([g]), tcp, rot[:, 2]) for g in geoms]
        geoms = geoms[np.array(down) >= max(down) - band]
    return extent(m, d, geoms, tcp, rot @ np.asarray(local_dir, dtype=np.float64))


def object_reach(ctx: SynthContext, obj: str, origin: Floats, direction: Floats) -> float:
    """How far the object reaches from `origin` along a world direction, as it is now in the simulator."""
    m, d = ctx.backend.model, ctx.backend.data
    return extent(m, d, object_geoms(m, obj), np.asarray(origin, dtype=np.float64), direction)


def joint_of_site(ctx: SynthContext, site: str, kind: mujoco.mjtJoint) -> int:
    """The joint of `kind` that moves `site`: on its body or the nearest ancestor that has one."""
    m = ctx.backend.model
    sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, site)
    if sid < 0:
        raise SkillFailure("target unreachable", f"no site {site!r} in the world")
    body = int(m.site_bodyid[sid])
    while body != 0:
        for j in range(m.body_jntadr[body], m.body_jntadr[body] + m.body_jntnum[body]):
            if m.jnt_type[j] == kind:
                return j
        body = int(m.body_parentid[body])
    raise SkillFailure("target unreachable", f"site {site!r} is not on a {kind.name.removeprefix('mjJNT_').lower()} "
                                             "joint")


# ----- moves --------------------------------------------------------------------------------------------
def _contact_check(world: CollisionWorld, arm: str, touching: str | None) -> paths.Collides:
    """(q, s) -> True if the arm at q collides with anything but (gripper, `touching`) contacts."""
    if touching is None:
        return lambda q, s: world.in_collision({arm: q})
    ok_a, ok_b = gripper_geoms(world.model, world.tcp_site[arm]), object_geoms(world.model, touching)

    def collides(q: Floats, s: float) -> bool:
        if not world.in_collision({arm: q}):
            return False
        d = world.data
        g1, g2 = d.contact.geom1[:d.ncon], d.contact.geom2[:d.ncon]
        expected = (np.isin(g1, ok_a) & np.isin(g2, ok_b)) | (np.isin(g1, ok_b) & np.isin(g2, ok_a))
        return bool(np.any(~expected))

    return collides


def contact_force(ctx: SynthContext, arm: str, obj: str) -> float:
    """Total normal force (N) between the arm's gripper and the object in the live simulator."""
    m, d = ctx.backend.model, ctx.backend.data
    if d.ncon == 0:
        return 0.0
    tcp = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, ctx.env.robot.arm(arm).tcp_site)
    ok_a, ok_b = gripper_geoms(m, tcp), object_geoms(m, obj)
    g1, g2 = d.contact.geom1[:d.ncon], d.contact.geom2[:d.ncon]
    pairs = np.flatnonzero((np.isin(g1, ok_a) & np.isin(g2, ok_b)) | (np.isin(g1, ok_b) & np.isin(g2, ok_a)))
    wrench = np.zeros(6)
    total = 0.0
    for i in pairs:
        mujoco.mj_contactForce(m, d, int(i), wrench)
        total += abs(float(wrench[0]))
    return total


def _timed(ctx: SynthContext, arm: str, waypoints: Floats, speed: float, kind: str) -> ArmTrack:
    if len(waypoints) < 2 or not np.any(waypoints[1:] != waypoints[0]):
        raise SkillFailure("no plan", f"arm {arm!r}: a {kind} move of zero length")
    return ctx.timed(arm, waypoints, speed, kind)


def _explain(world: CollisionWorld, arm: str) -> paths.Explain:
    return lambda q, s: world.colliding_pairs({arm: q})[:3]


def _failure(broke: PathBreak) -> SkillFailure:
    return SkillFailure("trajectory collision" if broke.cause == "collision" else "ik infeasible", str(broke))


def straight_track(ctx: SynthContext, arm: str, displacement: Floats, *, touching: str | None = None,
             speed: float = CONTACT_SPEED, at_least: float | None = None) -> ArmTrack:
    """The tcp moves by `displacement` (world, m) in a straight line keeping its orientation, from the
    commanded targets; the gripper may touch the object `touching` (and nothing else). A guarded move's
    track may be cut to `at_least` m where the arm cannot reach its full length (slack past the goal
    near the edge of the workspace); a collision anywhere before the cut fails it."""
    world = ctx.world()
    # waypoints are checked, midpoints not (as these fine moves always were): at 5 mm steps a midpoint
    # is within 2.5 mm of a checked pose
    path = paths.straight(seeded_ik(world, arm), ctx.executor.arm_target(arm), displacement,
                          _contact_check(world, arm, touching), step=LINE_STEP, max_jump=MAX_JOINT_STEP,
                          midpoints=False, partial=True, explain=_explain(world, arm), refine=world.refine_jumps)
    broke = path.broke
    if broke is not None and (broke.cause == "collision" or at_least is None or path.reached < at_least - 1e-9):
        raise _failure(broke)
    return _timed(ctx, arm, path.waypoints, speed, "cartesian")


def screw_waypoints(ctx: SynthContext, arm: str, q_start: Floats, axis: Floats, anchor: Floats,
                    angle: float, touching: str | None) -> Floats:
    """Joint waypoints turning the tcp by `angle` about the line (anchor, axis), each seeded from the
    previous one so the arm never switches IK branch. Raises SkillFailure where it cannot."""
    world = ctx.world()
    try:
        path = paths.turn(seeded_ik(world, arm), q_start, axis, anchor, angle, _contact_check(world, arm, touching),
                          step=SCREW_STEP, max_jump=MAX_JOINT_STEP, midpoints=False,  # as straight's
                          explain=_explain(world, arm))
    except PathBreak as broke:
        raise _failure(broke) from None
    return path.waypoints


def screw_track(ctx: SynthContext, arm: str, axis: Floats, anchor: Floats, angle: float, *,
          touching: str | None = None, speed: float = CONTACT_SPEED) -> ArmTrack:
    """Turn the tcp by `angle` about the line through `anchor` along `axis` (world), from the commanded targets."""
    waypoints = screw_waypoints(ctx, arm, ctx.executor.arm_target(arm), axis, anchor, angle, touching)
    return _timed(ctx, arm, waypoints, speed, "screw")
