"""What `open` and `close` plan with: an articulated part as the model has it, and one arm's seeded IK,
filtered collision checks and timing along it.

`Mechanism` is the hinge or slide joint that moves a target site, with its world axis and anchor
(`data.xaxis` / `xanchor`), the moving part's geoms and its largest box (the door panel, the drawer
front: the face a push acts on); `along` gives the tcp poses of a hand fixed to the part as it moves
(a screw about the hinge, a line along the slide: motion/paths.py). `MechanismPlanner` follows such paths, and
straight lines, with seeded IK (`paths.follow`: each waypoint from the previous solution, so the arm
keeps its IK branch) and checks each waypoint and midpoint with the part where it will be then,
allowing only contacts between the gripper and the part (its handle while grasping, all of it while
pushing). The allowed contacts are filtered from the contact list on every check, so the shared
collision world's allowances (other skills') are never changed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Ints
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.motion import paths
from x2.synth.motion.seeded import seeded_ik
from x2.synth.segments import ArmTrack, SkillFailure
from x2.synth.skills.shapes import subtree_mask, welded_mask

LINE_STEP = 0.03  # m between IK waypoints of straight approach and retreat moves (midpoints checked too)
COLD_ITERS = 60  # IK iterations from a far seed (home, the commanded targets) before giving a pose up
MAX_JUMP = 0.5  # rad: a larger joint change between coarse waypoints is an IK branch switch (kept steps
# reach 0.24 carrying a door 0.1 rad, 0.21 on 3 cm lines: fruit_in_microwave and drawer_test, 16 attempts)
CHECK_MARGIN = 0.005  # m of clearance for the arm in the checks: the servos track within a few mm
DOWN = np.array([0.0, 0.0, -1.0])
# what of the part the gripper may touch in a check: its handle (all but the panel), all of it, or anything at all
Touch = Literal["handle", "part", "anything"]


@dataclass(frozen=True)
class Mechanism:
    """An articulated part as the live world had it when read (`read_mechanism`, `refresh`)."""

    joint: str  # compiled name, e.g. "microwave/door_hinge"
    hinge: bool  # else slide
    value: float  # joint position when read (rad | m)
    lo: float
    hi: float
    axis: Floats  # world, unit; positive joint motion turns about / slides along it
    anchor: Floats  # world point on the hinge axis
    part: Ints  # collidable geoms of the moving body's subtree
    panel: int  # the largest box among them: the face a push acts on
    grasps: tuple[str, ...]  # grasp frame sites on the moving part

    def along(self, pos: Floats, rot: Floats, values: Floats) -> paths.TcpPoses:
        """Tcp poses fixed to the part, from (`pos`, `rot`) with the joint as it is now, with the joint at
        each of `values` (the path parameter: rad about the hinge, m along the slide)."""
        if self.hinge:
            return paths.screw(pos, rot, self.axis, self.anchor, values, origin=self.value)
        return paths.line(pos, rot, self.axis, values, origin=self.value)

    def carry(self, pos: Floats, rot: Floats, value: float) -> tuple[Floats, Floats]:
        """A pose fixed to the part as it is now, after the joint moves to `value`."""
        poses = self.along(pos, rot, np.array([value]))
        return poses.pos[0], poses.rot[0]


@dataclass(frozen=True)
class Hand:
    """The gripper's extents in its tool frame (tcp at the origin, +z the approach), from its geoms."""

    palm_clear: float  # m from the tcp back to the palm's front (tool -z)
    finger_x: float  # m: the fingers' half thickness along tool x, the standoff of a sideways push
    tips: float  # m the fingertips (the H gripper's hooks) reach past the tcp along tool z
    geoms: Ints  # gripper geoms (palm, fingers, pads)


def joint_of(ctx: SynthContext, binding: SkillBinding) -> int:
    """The `joint` parameter, else the hinge/slide joint moving the target site's body (or an ancestor),
    else the target object's only hinge/slide joint."""
    m = ctx.backend.model
    movable = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    name = binding.params.get("joint")
    if isinstance(name, str):
        full = name if "/" in name else f"{binding.target_object}/{name}"
        j: int = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, full)
        if j < 0 or m.jnt_type[j] not in movable:
            raise SkillFailure("target unreachable", f"no hinge or slide joint {full!r}")
        return j
    site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, binding.target or "")
    if site >= 0:
        body = int(m.site_bodyid[site])
        while body != 0:
            for j in range(m.body_jntadr[body], m.body_jntadr[body] + m.body_jntnum[body]):
                if m.jnt_type[j] in movable:
                    return j
            body = int(m.body_parentid[body])
    root = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"{binding.target_object}/object")
    if root >= 0:
        inside = subtree_mask(m, root)
        found = [j for j in range(m.njnt) if inside[m.jnt_bodyid[j]] and m.jnt_type[j] in movable]
        if len(found) == 1:
            return found[0]
    raise SkillFailure("target unreachable", f"{binding.target!r} is not moved by exactly one hinge or slide joint "
                                             "(name it with the `joint` parameter)")


def read_mechanism(ctx: SynthContext, binding: SkillBinding) -> Mechanism:
    """The mechanism a skill binding targets, from the live model and state."""
    m, d = ctx.backend.model, ctx.backend.data
    j = joint_of(ctx, binding)
    body = int(m.jnt_bodyid[j])
    inside = subtree_mask(m, body)
    collidable = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
    part = np.flatnonzero(inside[m.geom_bodyid] & collidable)
    boxes = [g for g in part if int(m.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_BOX)]
    if not boxes:
        raise SkillFailure("target unreachable", f"the part moved by {m.joint(j).name!r} has no box to push on")
    panel = max(boxes, key=lambda g: float(np.prod(m.geom_size[g])))
    grasps = tuple(m.site(s).name for s in range(m.nsite) if inside[m.site_bodyid[s]] and "grasp" in m.site(s).name)
    lo, hi = (float(v) for v in m.jnt_range[j]) if m.jnt_limited[j] else (-np.inf, np.inf)
    return Mechanism(m.joint(j).name, int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE),
                     float(d.qpos[m.jnt_qposadr[j]]), lo, hi, d.xaxis[j].copy(), d.xanchor[j].copy(),
                     part, int(panel), grasps)


def refresh(ctx: SynthContext, mech: Mechanism) -> Mechanism:
    """The same mechanism with the joint value, axis and anchor as the live world has them now."""
    m, d = ctx.backend.model, ctx.backend.data
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mech.joint)
    return replace(mech, value=float(d.qpos[m.jnt_qposadr[j]]), axis=d.xaxis[j].copy(), anchor=d.xanchor[j].copy())


class MechanismPlanner:
    """Seeded IK, filtered collision checks and timing for one arm during one skill."""

    def __init__(self, ctx: SynthContext, arm: str, mech: Mechanism):
        self.ctx, self.arm, self.mech = ctx, arm, mech
        self.world = ctx.world()
        self.ik = seeded_ik(self.world, arm)
        self._jaw = ctx.backend.jaw()
        self.hand = self._hand()
        self.home = np.array(ctx.env.robot.arm(arm).home)
        m = self.world.model
        self._jadr = int(m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mech.joint)])
        fingers = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in ctx.env.robot.arm(arm).gripper_joints]
        self._fingers = [(m.joint(j).name, float(m.jnt_range[j, 0]), float(m.jnt_range[j, 1])) for j in fingers]
        self._finger_adr = [int(m.jnt_qposadr[j]) for j in fingers]
        self._hand_mask = np.zeros(m.ngeom, dtype=bool)
        self._hand_mask[self.hand.geoms] = True
        handle = np.zeros(m.ngeom, dtype=bool)
        handle[mech.part[mech.part != mech.panel]] = True
        part = np.zeros(m.ngeom, dtype=bool)
        part[mech.part] = True
        # what the gripper may touch: the handle while grasping, the part while pushing, anything while
        # easing out of wherever another skill left the hand
        self._touch: dict[Touch, Bools] = {"handle": handle, "part": part, "anything": np.ones(m.ngeom, dtype=bool)}

    def _hand(self) -> Hand:
        w = self.world
        m, d = w.model, w.data
        tcp, rot = w.tcp_pose(self.arm)  # also runs the world's kinematics
        site_body = int(m.site_bodyid[w.tcp_site[self.arm]])
        collidable = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
        geoms = np.flatnonzero(subtree_mask(m, site_body)[m.geom_bodyid] & collidable)

        def reach(g: int, u: Floats) -> float:  # support of the geom's bounding box along world u
            grot = d.geom_xmat[g].reshape(3, 3)
            centre = d.geom_xpos[g] + grot @ m.geom_aabb[g, :3] - tcp
            return float(centre @ u + np.abs(grot.T @ u) @ m.geom_aabb[g, 3:])

        if self._jaw is not None:  # a linkage: what is welded to the tcp's body is palm, everything moving finger
            welded = welded_mask(m, site_body)
            palm = [g for g in geoms if welded[m.geom_bodyid[g]]]
        else:
            palm = [g for g in geoms if m.geom_bodyid[g] == site_body]
        fingers = [g for g in geoms if g not in palm]
        palm_front = max(reach(g, rot[:, 2]) for g in palm)
        finger_x = max(max(reach(g, rot[:, 0]), reach(g, -rot[:, 0])) for g in fingers)
        tips = max(reach(g, rot[:, 2]) for g in fingers)
        return Hand(-palm_front, finger_x, tips, geoms)

    def solve(self, pos: Floats, rot: Floats, seed: Floats, iters: int = 40) -> Floats | None:
        self.ctx.stats.ik_calls += 1
        return self.ik.solve(pos, rot, seed, iters=iters)

    def solve_cold(self, pos: Floats, rot: Floats) -> Floats | None:
        """From the commanded targets, else from home. Converging solves take 5-30 iterations; a pose
        that is not reached in COLD_ITERS from either is dropped (another candidate is cheaper than
        random restarts at ~0.1 ms an iteration)."""
        for seed in (self.ctx.executor.arm_target(self.arm), self.home):
            q = self.solve(pos, rot, seed, iters=COLD_ITERS)
            if q is not None:
                return q
        return None

    def free(self, q: Floats, touching: Touch | None, part_value: float | None = None,
             opening: float | None = None) -> bool:
        """The arm at `q` (with CHECK_MARGIN of clearance) touches nothing but the `touching` geoms of the
        part ("handle": all but the panel, "part": all; or "anything") with its gripper; the part at `part_value`
        (default: where the world has it), the fingers at `opening` (0 closed .. 1 open, as the action;
        default: as they are now; open fingers stick out 4-6 cm further than closed ones)."""
        w = self.world
        qpos, margin = w.qpos, w.margin
        if part_value is not None:
            w.set_joint(self.mech.joint, part_value)
        if opening is not None and self._jaw is not None:  # the whole linkage, where the command settles it
            for (name, *_), value in zip(self._fingers, self._jaw.joints_at(opening), strict=True):
                w.set_joint(name, float(value))
        elif opening is not None:
            for name, lo, hi in self._fingers:
                w.set_joint(name, lo + opening * (hi - lo))
        w.margin = margin + CHECK_MARGIN
        try:
            pairs = w.colliding_geoms({self.arm: q})
            if len(pairs) == 0:
                return True
            if touching is None:
                return False
            hand, ok = self._hand_mask, self._touch[touching]
            a, b = pairs[:, 0], pairs[:, 1]
            return bool(np.all((hand[a] & ok[b]) | (ok[a] & hand[b])))
        finally:
            w.margin = margin
            w.set_joint(self.mech.joint, qpos[self._jadr])
            for (name, *_), adr in zip(self._fingers, self._finger_adr, strict=True):
                w.set_joint(name, qpos[adr])

    def timed(self, waypoints: Floats, speed: float, kind: str) -> ArmTrack:
        return self.ctx.timed(self.arm, even(np.asarray(waypoints, dtype=np.float64)), speed, kind)

    def collides(self, touching: Touch | None, opening: float | None,
                 part_at: Callable[[float], float] | None = None) -> paths.Collides:
        """`free`'s complement as a path predicate; with `part_at`, the part is at part_at(s) when the
        path parameter is s."""
        if part_at is None:
            return lambda q, s: not self.free(q, touching, opening=opening)
        return lambda q, s: not self.free(q, touching, part_at(s), opening=opening)

    def line(self, q0: Floats, rot: Floats, start: Floats, end: Floats, touching: Touch | None,
             opening: float | None = None) -> paths.TcpPath:
        """The tcp straight from `start` to `end` at orientation `rot`, from q0 (the arm at `start`), as far
        as the IK follows and no waypoint or midpoint collides (`complete` if it gets to `end`)."""
        poses = paths.line(start, rot, end - start, paths.steps(0.0, float(np.linalg.norm(end - start)), LINE_STEP))
        return self._follow(q0, poses, self.collides(touching, opening))

    def sweep(self, q0: Floats, pos: Floats, rot: Floats, values: Floats, touching: Touch,
              part_at: Callable[[float], float]) -> paths.TcpPath:
        """The tcp pose (`pos`, `rot`), fixed to the part (at its value when read), carried along the joint
        `values` (values[0]: where q0 is) until the IK breaks off or a pose collides with the part at
        part_at(v); the hand is closed on (or pushing) the part throughout."""
        return self._follow(q0, self.mech.along(pos, rot, values), self.collides(touching, 0.0, part_at))

    def _follow(self, q0: Floats, poses: paths.TcpPoses, collides: paths.Collides) -> paths.TcpPath:
        path = paths.follow(self.ik, q0, poses, collides, max_jump=MAX_JUMP, midpoints=True, partial=True,
                            refine=self.world.refine_jumps)
        self.ctx.stats.ik_calls += path.solves
        return path


def even(waypoints: Floats, step: float = 0.02) -> Floats:
    """The same joint polyline with vertices every `step` rad (largest joint change): `time_polyline`
    limits the whole path by its steepest segment, so uneven coarse waypoints (one joint turning 0.25
    rad between two of them, 0.1 elsewhere) would slow all of it down."""
    seg = np.max(np.abs(np.diff(waypoints, axis=0)), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    if cum[-1] < 1e-9:
        return waypoints[:1]
    s = np.linspace(0.0, cum[-1], max(2, int(np.ceil(cum[-1] / step)) + 1))
    return np.stack([np.interp(s, cum, waypoints[:, j]) for j in range(waypoints.shape[1])], axis=1)
