"""Where to let go of a held object: candidate tcp poses on a surface or inside a container.

The held object rides rigidly on the tcp (`Held`), so every candidate tool pose fixes where the object
and the fingers will be; the candidates are checked geometrically (support functions, no IK) and
ranked, and the caller tries the best few with IK, a straight line and a free-space plan.

- On a surface (an object's `surface` part, else the top of its collision geoms, or a point site): the
  object over the spot with its current orientation, the tool turned about the vertical and leaned
  towards the robot by a few angles (a lean brings the wrist nearer: the plate in pick_place lies at the
  edge of the tool-down workspace), down from above. A tool already leaned by its grasp leans from there,
  so the object is not put down tilted by the grasp's lean.
- Into a box site (a container's `cavity`): the open side is the side face with free space behind it
  (rays from the box centre, so a shut door counts as closed); the tool tilts down into the opening,
  heading straight in or along the reach, with the fingers side by side or stacked; the object goes just
  behind the opening (the door must close behind it), as near the arm as the side walls allow, just
  above the floor.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.vectors import cross
from x2.synth.context import SynthContext
from x2.synth.segments import SkillFailure
from x2.synth.skills.shapes import (
    UP,
    Shape,
    concat,
    gripper_shape,
    horizontal,
    object_geoms,
    object_shape,
    rot_about,
    rot_between,
    shape_of,
)

SlackFn = Callable[[Floats, Floats], float]  # (tcp pos, tcp rot) -> reach slack, m

RELEASE_GAP = 0.008  # m, the held object's lowest point above the surface when the jaw opens
RELEASE_MARGIN = 0.015  # m per side the jaw opens beyond the object's width to let go
PRESS = 0.012  # m, a guarded place-down may go this far past the computed contact height
TIP_CLEARANCE = 0.003  # m the fingertips stay above the surface at the end of a guarded place-down
JITTER = 0.01  # m, radius of the random offset of a place on a surface (from the grasp stream)
PLACE_YAWS = np.deg2rad([0.0, 45.0, -45.0, 90.0, -90.0, 180.0])  # tool turns for a place from above
LEANS = np.deg2rad([0.0, 15.0, 30.0])  # tilts of the held object (of the tool, after a grasp from straight above)
LEVEL_TOL = np.deg2rad(5.0)  # a tool this near vertical grasped from straight above (grasp leans: 20, 35 deg)
YAW_COST = 0.3  # a turn of the wrist costs less than a lean of the object (rad per rad)

INSET = 0.02  # m, the placed object's nearest point behind a container's opening (where a door closes)
ENTRY_CLEARANCE = 0.02  # m between the opening and the nearest held point at the pre-place pose
MIN_ENTRY_COS = 0.5  # a way into a container at most 60 deg off the opening's normal
WALL_MARGIN = 0.012  # m kept between the held object / fingers and a container's walls
OPEN_SIDE = 0.05  # m of free space behind a box face that make it an opening (the microwave's walls: 20 mm)
# Tool axis below horizontal when reaching into a container, best first: reach scans of the right arm
# into the microwave (tcp 4-12 cm behind the opening) found 35 deg feasible at every depth, 65 deg rarely.
TILTS = np.deg2rad([35.0, 50.0, 20.0, 65.0])
STACKED_COST = 0.1  # fingers stacked vertically open towards floor and ceiling (rad-equivalent)
TURN_COST = 0.05  # a wrist turned the long way round, or a heading off the opening's normal
DEPTH_COST = 3.0  # per metre of tcp depth behind the opening (deep goals put the wrist under the top)
HEIGHT_COST = 2.0  # per metre of tcp height above the floor (same reason)


@dataclass(frozen=True)
class Held:
    """The held object and the gripper around it, in the tcp frame (measured on the live world)."""

    obj: str
    rel_pos: Floats  # object origin in the tcp frame
    obj_shape: Shape  # the object's collision geoms, tcp frame
    grip_shape: Shape  # the gripper's (fingers closed on the object, palm), tcp frame
    width: float  # m, the object's extent along the closing axis (tcp y)

    @functools.cached_property
    def hand_shape(self) -> Shape:
        return concat(self.obj_shape, self.grip_shape)


def held_by(ctx: SynthContext, arm: str, obj: str) -> Held:
    m, d = ctx.backend.model, ctx.backend.data
    arm_model = ctx.env.robot.arm(arm)
    tcp = m.site(arm_model.tcp_site).id
    p, r = d.site_xpos[tcp].copy(), d.site_xmat[tcp].reshape(3, 3).copy()
    obj_shape = shape_of(m, d, object_geoms(m, obj), p, r)
    grip = gripper_shape(m, d, arm_model, ctx.backend.finger_bodies(arm))
    body = m.body(f"{obj}/object").id
    return Held(obj, r.T @ (d.xpos[body] - p), obj_shape, grip, obj_shape.width(np.array([0.0, 1.0, 0.0])))


@dataclass(frozen=True)
class PlaceGoal:
    """A tcp pose to let go at, and the straight line the arm comes in on."""

    pos: Floats
    rot: Floats
    direction: Floats  # unit, world: the motion from the pre-place pose to the goal
    distance: float  # m, pre-place pose -> goal
    press: float  # m past the goal a guarded move may go until contact (0: no guard)
    slack: float  # m, the arm's reach slack at the goal (ArmReach)
    cost: float  # ranking, lower first


# ----- on a surface ---------------------------------------------------------------------------------
def part_site(ctx: SynthContext, obj: str, part: str) -> str | None:
    """The compiled site name of an object's part (e.g. a plate's `surface`), if its asset has one."""
    for inst in ctx.env.objects:
        if inst.name != obj:
            continue
        for asset in inst.candidates:
            site = asset.parts.get(part)
            if site and mujoco.mj_name2id(ctx.backend.model, mujoco.mjtObj.mjOBJ_SITE, f"{obj}/{site}") >= 0:
                return f"{obj}/{site}"
    return None


def surface_spot(ctx: SynthContext, target: str) -> Floats:
    """The point to put things down at: a surface part, else the top centre of an object, or a site."""
    m, d = ctx.backend.model, ctx.backend.data
    site = target if target not in ctx.backend.object_names else part_site(ctx, target, "surface")
    spot: Floats  # (MuJoCo's arrays are untyped)
    if site is not None:
        spot = d.site_xpos[m.site(site).id].copy()
    else:
        spot = d.xpos[m.body(f"{target}/object").id].copy()
        spot[2] = object_shape(m, d, target, world=True).support(UP)
    return spot


def surface_goals(ctx: SynthContext, held: Held, spot: Floats, tcp_rot: Floats, shoulder: Floats,
                  slack: SlackFn, approach: float) -> list[PlaceGoal]:
    jitter = ctx.rng["grasp"].uniform(-1.0, 1.0, size=2) * JITTER / np.sqrt(2)
    lean_dir = horizontal(spot - shoulder)
    # A leaned grasp (grasp_poses.LEANS) holds the object as it stood with the tool leaned; leaning the tool from
    # vertical would set it down tilted by the grasp's lean (a disc grasped at 35 deg and put down with the tool
    # vertical lands 35 deg over and topples off the disc below), so such a tool leans from its own tilt.
    grasp_lean = float(np.arccos(np.clip(-tcp_rot[2, 2], -1.0, 1.0)))
    goals = []
    for yaw in PLACE_YAWS:
        turned = rot_about(UP, float(yaw)) @ tcp_rot
        for lean in LEANS:
            # the tool's top towards the shoulder: the wrist comes nearer, the object tilts with it
            if grasp_lean < LEVEL_TOL:
                rot = rot_between(turned[:, 2], np.sin(lean) * lean_dir - np.cos(lean) * UP) @ turned
            else:
                rot = rot_about(np.cross(lean_dir, UP), float(lean)) @ turned
            obj_at = rot @ held.rel_pos
            pos = np.array([spot[0] + jitter[0] - obj_at[0], spot[1] + jitter[1] - obj_at[1], 0.0])
            # the lowest point of object and fingers RELEASE_GAP above the spot
            pos[2] = spot[2] + RELEASE_GAP + held.hand_shape.turned(rot).support(-UP)
            # press on past the contact height only as far as the object stays below the fingertips
            below_tips = held.obj_shape.turned(rot).support(-UP) - held.grip_shape.turned(rot).support(-UP)
            press = RELEASE_GAP + float(np.clip(below_tips - TIP_CLEARANCE, 0.0, PRESS))
            goals.append(PlaceGoal(pos, rot, -UP, approach, press, slack(pos, rot), YAW_COST * abs(yaw) + lean))
    return goals


# ----- into a container -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cavity:
    """A container's inner space from its box site, trimmed to the solid geometry around it, and the side
    it is open on. Coordinates along unit axes n (out of the opening), lateral and up."""

    n: Floats
    lateral: Floats
    up: Floats
    face: float  # the opening's plane along n
    back: float  # the back wall along n
    sides: tuple[float, float]  # the side walls along lateral
    floor: float
    ceiling: float

    def point(self, along_n: float, along_l: float, along_up: float) -> Floats:
        p: Floats = along_n * self.n + along_l * self.lateral + along_up * self.up
        return p


def free_distance(m: mujoco.MjModel, d: mujoco.MjData, start: Floats, direction: Floats) -> float:
    """Distance from `start` along `direction` to the first geom that collides (rays pass visual geoms)."""
    travelled, pnt = 0.0, np.array(start, dtype=np.float64)
    geomid = np.zeros(1, dtype=np.int32)
    for _ in range(8):  # a few visual geoms at most on any line through the booth
        dist: float = mujoco.mj_ray(m, d, pnt, direction, None, 1, -1, geomid)
        if dist < 0:
            return np.inf
        travelled += dist
        g = int(geomid[0])
        if m.geom_contype[g] | m.geom_conaffinity[g]:
            return travelled
        pnt = pnt + direction * (dist + 1e-4)
        travelled += 1e-4
    return travelled


def cavity(ctx: SynthContext, site: str, shoulder: Floats) -> Cavity:
    m, d = ctx.backend.model, ctx.backend.data
    centre, box_rot, half = (np.array(v, dtype=np.float64) for v in ctx.backend.site_box(site))
    free = {(k, s): free_distance(m, d, centre, s * box_rot[:, k]) for k in range(3) for s in (1.0, -1.0)}
    inner = {key: min(dist, half[key[0]]) for key, dist in free.items()}
    # the open side: a side face with free space behind it; of several, the one facing the arm
    sides = [(float(s * box_rot[:, k] @ (shoulder - centre)), k, s)
             for k in (0, 1) for s in (1.0, -1.0) if free[k, s] - half[k] > OPEN_SIDE]
    if not sides:
        raise SkillFailure("target unreachable", f"{site} is closed on every side (a door shut?)")
    _, k, s = max(sides)
    n, lat, up = s * box_rot[:, k], box_rot[:, 1 - k], box_rot[:, 2]
    c_n, c_l, c_up = float(centre @ n), float(centre @ lat), float(centre @ up)
    return Cavity(n, lat, up, face=c_n + half[k], back=c_n - inner[k, -s],
                  sides=(c_l - inner[1 - k, -1.0], c_l + inner[1 - k, 1.0]),
                  floor=c_up - inner[2, -1.0], ceiling=c_up + inner[2, 1.0])


def _tool_rotations(cav: Cavity, heading_to_box: Floats) -> Iterator[tuple[float, Floats]]:
    """(cost, tcp rotation) of tool poses tilted down into the opening, heading straight in or along the
    reach, fingers side by side or stacked (an object grasped across its length then stays level), each
    twist both ways round."""
    u = -cav.n
    for tilt in TILTS:
        for heading in (u, heading_to_box):
            z = np.cos(tilt) * heading - np.sin(tilt) * cav.up
            level = horizontal(cross(cav.up, heading), cav.up)
            for stacked in (False, True):
                for sign in (1.0, -1.0):
                    x = sign * level if stacked else cross(sign * level, z)
                    cost = (abs(float(tilt) - TILTS[0]) + STACKED_COST * stacked
                            + TURN_COST * float(heading @ u < 0.999))
                    yield cost, np.stack([x, cross(z, x), z], axis=1)


def container_goals(ctx: SynthContext, held: Held, site: str, tcp_rot: Floats, shoulder: Floats,
                    slack: SlackFn) -> list[PlaceGoal]:
    cav = cavity(ctx, site, shoulder)
    u = -cav.n  # into the box
    box_pos, box_rot, half = (np.array(v, dtype=np.float64) for v in ctx.backend.site_box(site))
    goals = []
    for cost, rot in _tool_rotations(cav, horizontal(box_pos - shoulder, cav.up)):
        pos = _fit(held, rot, cav, shoulder)
        if pos is None:
            continue
        if np.any(np.abs(box_rot.T @ (pos + rot @ held.rel_pos - box_pos)) > half):
            continue  # the object's origin (what object_inside tests) would be outside the box
        # in and out along the way in less its component along the closing axis: backing out then never
        # sweeps a finger (or the H jaw's hook tips) across the released object
        direction = u - (u @ rot[:, 1]) * rot[:, 1]
        direction /= np.linalg.norm(direction)
        if direction @ u < MIN_ENTRY_COS:
            continue
        # the pre-place pose: nothing held (object, fingers) is past the opening yet
        deepest = held.hand_shape.moved(pos, rot).support(u) + cav.face
        distance = (deepest + ENTRY_CLEARANCE) / float(direction @ u)
        cost += (TURN_COST * float(rot[:, 1] @ tcp_rot[:, 1] < 0) + DEPTH_COST * (cav.face - float(pos @ cav.n))
                 + HEIGHT_COST * (float(pos @ cav.up) - cav.floor))
        goals.append(PlaceGoal(pos, rot, direction, distance, 0.0, slack(pos, rot), cost))
    return goals


def _fit(held: Held, rot: Floats, cav: Cavity, shoulder: Floats) -> Floats | None:
    """The tcp position putting the held object INSET behind the opening, as near the shoulder as the side
    walls allow (reach is what limits a place into a container), RELEASE_GAP above the floor; None if
    object and fingers do not fit."""
    obj = held.obj_shape.turned(rot)
    hand = held.hand_shape.turned(rot)
    n, lat, up = cav.n, cav.lateral, cav.up
    along_n = cav.face - INSET - obj.support(n)
    if along_n - obj.support(-n) < cav.back + WALL_MARGIN:
        return None
    # the fingers open RELEASE_MARGIN further to let go: room for that along the closing axis
    spread_l, spread_up = (RELEASE_MARGIN * abs(float(rot[:, 1] @ a)) for a in (lat, up))
    lo = cav.sides[0] + WALL_MARGIN + hand.support(-lat) + spread_l
    hi = cav.sides[1] - WALL_MARGIN - hand.support(lat) - spread_l
    along_up = cav.floor + RELEASE_GAP + hand.support(-up) + spread_up
    if lo > hi or along_up + hand.support(up) + spread_up > cav.ceiling - WALL_MARGIN:
        return None
    return cav.point(along_n, float(np.clip(shoulder @ lat, lo, hi)), along_up)
