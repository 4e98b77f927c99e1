"""Geometry for grasping and placing, read off the compiled model: shapes with a support function, the
gripper's jaw, a reach screen for the arm, and a few rotation helpers.

Grippers follow the contract of x2/robots/artixon/gripper_*.xml: tcp +z is the approach axis, the
fingers close along tcp y, the tcp sits between the fingertips.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Ints
from x2.base.vectors import norm
from x2.envspec.env import ArmSpec
from x2.sim.backend import Jaw
from x2.synth.motion.paths import rotations

UP = np.array([0.0, 0.0, 1.0])
_PRIMITIVES = (mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_ELLIPSOID, mujoco.mjtGeom.mjGEOM_BOX,
               mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER)
# row of Shape.support's formulas per mjtGeom (anything else was made a box by shape_of)
_KIND = np.zeros(max(int(t) for t in _PRIMITIVES) + 1, dtype=np.intp)
for _row, _type in enumerate((mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_ELLIPSOID,
                              mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER), start=1):
    _KIND[int(_type)] = _row


def _box(s: Floats, dl: Floats, a: Floats, d: Floats) -> Floats:
    ext: Floats = (a * s).sum(axis=1)  # (sizes are half extents)
    return ext


def _sphere(s: Floats, dl: Floats, a: Floats, d: Floats) -> Floats:
    ext: Floats = s[:, 0] * np.sqrt(d @ d)
    return ext


def _ellipsoid(s: Floats, dl: Floats, a: Floats, d: Floats) -> Floats:
    ext: Floats = np.sqrt(((s * dl) ** 2).sum(axis=1))
    return ext


def _capsule(s: Floats, dl: Floats, a: Floats, d: Floats) -> Floats:
    ext: Floats = s[:, 1] * a[:, 2] + s[:, 0] * np.sqrt(d @ d)
    return ext


def _cylinder(s: Floats, dl: Floats, a: Floats, d: Floats) -> Floats:
    ext: Floats = s[:, 1] * a[:, 2] + s[:, 0] * np.sqrt(dl[:, 0] ** 2 + dl[:, 1] ** 2)
    return ext


# a geom's extent along d beyond its centre, per row of _KIND (d, and dl: d in each geom's axes, a = |dl|)
_FORMULAS = (_box, _sphere, _ellipsoid, _capsule, _cylinder)


@dataclass(frozen=True)
class Shape:
    """Geoms expressed in one frame, with their support function (exact for primitives, the bounding box
    for anything else)."""

    types: Ints  # (n,) mjtGeom
    sizes: Floats  # (n, 3)
    pos: Floats  # (n, 3) centres in the frame
    rot: Floats  # (n, 3, 3) geom axes in the frame
    _kinds: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _takes: tuple[Bools, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the formulas `support` needs (rows of _KIND) and, for each but the first, the geoms that take it: fixed
        # by the types, so a moved shape keeps them (`moved`)
        rows = _KIND[self.types]
        kinds = tuple(sorted(set(rows.tolist())))
        object.__setattr__(self, "_kinds", kinds)
        object.__setattr__(self, "_takes", tuple(rows == k for k in kinds[1:]))

    def support(self, d: Floats) -> float:
        """max p.d over every point p of the shape (d in the shape's frame). Each formula the shape's geoms need
        over every geom, then each geom's own picked: the grasp and place searches call this hundreds of times an
        attempt, and a Python loop over the geoms cost ~5x as much."""
        d = np.asarray(d, dtype=np.float64)
        s = self.sizes
        dl = d @ self.rot  # d in each geom's axes (r.T @ d per geom)
        a = np.abs(dl)
        kinds = self._kinds
        ext = _FORMULAS[kinds[0]](s, dl, a, d)
        for k, takes in zip(kinds[1:], self._takes, strict=True):  # (a where per formula: a third of a stack's cost)
            ext = np.where(takes, _FORMULAS[k](s, dl, a, d), ext)
        return float(np.max(self.pos @ d + ext))

    def width(self, axis: Floats) -> float:
        return self.support(axis) + self.support(-axis)

    def moved(self, pos: Floats, rot: Floats) -> Shape:
        """The shape in the parent frame of a frame at (pos, rot)."""
        moved = object.__new__(Shape)  # the same geoms: their formulas stay as __post_init__ found them
        for name, value in (("types", self.types), ("sizes", self.sizes), ("pos", self.pos @ rot.T + pos),
                            ("rot", np.einsum("ij,njk->nik", rot, self.rot)), ("_kinds", self._kinds),
                            ("_takes", self._takes)):
            object.__setattr__(moved, name, value)
        return moved

    def turned(self, rot: Floats) -> Shape:
        """The shape rotated about its frame's origin."""
        return self.moved(np.zeros(3), rot)


def concat(*shapes: Shape) -> Shape:
    parts = zip(*((s.types, s.sizes, s.pos, s.rot) for s in shapes), strict=True)
    return Shape(*(np.concatenate(p) for p in parts))


def shape_of(model: mujoco.MjModel, data: mujoco.MjData, geoms: Ints, frame_pos: Floats,
             frame_rot: Floats) -> Shape:
    """The geoms, at their current world poses, expressed in the frame (frame_pos, frame_rot)."""
    types = model.geom_type[geoms].copy()
    sizes = model.geom_size[geoms].copy()
    pos = (data.geom_xpos[geoms] - frame_pos) @ frame_rot
    rot = np.einsum("ji,njk->nik", frame_rot, data.geom_xmat[geoms].reshape(-1, 3, 3))
    meshes = types == mujoco.mjtGeom.mjGEOM_MESH
    other = ~np.isin(types, _PRIMITIVES) & ~meshes
    if other.any():  # height fields etc.: their local bounding box (geom_aabb = centre, half size)
        aabb = model.geom_aabb[geoms[other]]
        pos[other] += np.einsum("nij,nj->ni", rot[other], aabb[:, :3])
        sizes[other] = aabb[:, 3:]
        types[other] = mujoco.mjtGeom.mjGEOM_BOX
    if meshes.any():
        return _with_mesh_slabs(model, geoms, meshes, types, sizes, pos, rot)
    return Shape(types, sizes, pos, rot)


MESH_SLABS = 4  # boxes a mesh's vertices are cut into along its longest axis


def _with_mesh_slabs(model: mujoco.MjModel, geoms: Ints, meshes: Bools, types: Ints,
                     sizes: Floats, pos: Floats, rot: Floats) -> Shape:
    """The geoms' shape with each mesh geom (mask `meshes`) as the bounding boxes of MESH_SLABS slabs of its
    vertices: one bounding box of a curved finger reaches far into the jaw where the finger does not (a ViperX
    finger's closes ALOHA's 70 mm jaw to 50 mm); the slabs follow it within a few mm and still contain it."""
    keep = ~meshes
    parts = [(types[keep], sizes[keep], pos[keep], rot[keep])]
    for i in np.flatnonzero(meshes):
        mesh = int(model.geom_dataid[geoms[i]])
        start, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        centres, halves = _slabs(model.mesh_vert[start:start + count].tobytes())
        # (the vertices are in the geom's frame: MuJoCo moves a mesh's frame into its geom's)
        parts.append((np.full(len(centres), int(mujoco.mjtGeom.mjGEOM_BOX), dtype=types.dtype), halves,
                      pos[i] + centres @ rot[i].T, np.repeat(rot[i][None], len(centres), axis=0)))
    return Shape(*(np.concatenate(column) for column in zip(*parts, strict=True)))


@functools.lru_cache(maxsize=256)
def _slabs(vertices: bytes) -> tuple[Floats, Floats]:
    """(centres, half sizes) of the boxes around MESH_SLABS slabs of the vertices (mesh frame, float32 bytes)."""
    v = np.frombuffer(vertices, dtype=np.float32).reshape(-1, 3).astype(np.float64)
    lo, hi = v.min(axis=0), v.max(axis=0)
    axis = int(np.argmax(hi - lo))
    edges = np.linspace(lo[axis], hi[axis], MESH_SLABS + 1)
    bins = np.clip(np.searchsorted(edges, v[:, axis], side="right") - 1, 0, MESH_SLABS - 1)
    centres, halves = [], []
    for k in range(MESH_SLABS):
        inside = v[bins == k]
        if len(inside):
            a, b = inside.min(axis=0), inside.max(axis=0)
            centres.append((a + b) / 2)
            halves.append(np.maximum((b - a) / 2, 1e-6))
    return np.array(centres), np.array(halves)


def subtree_mask(model: mujoco.MjModel, root: int) -> Bools:
    """Mask over bodies: `root` and everything below it."""
    inside = np.zeros(model.nbody, dtype=bool)
    for b in range(model.nbody):  # bodies are numbered parents first
        inside[b] = b == root or (b != 0 and inside[model.body_parentid[b]])
    return inside


def welded_mask(model: mujoco.MjModel, root: int) -> Bools:
    """Mask over bodies: `root` and the bodies below it fixed to it (no joint on the way)."""
    welded = np.zeros(model.nbody, dtype=bool)
    for b in range(model.nbody):  # bodies are numbered parents first
        welded[b] = b == root or (b != 0 and welded[model.body_parentid[b]] and model.body_jntnum[b] == 0)
    return welded


def subtree_geoms(model: mujoco.MjModel, root: int) -> Ints:
    """Geoms that take part in contacts, of body `root` and everything below it."""
    geoms = np.flatnonzero(subtree_mask(model, root)[model.geom_bodyid])
    collidable: Ints = geoms[(model.geom_contype[geoms] | model.geom_conaffinity[geoms]) != 0]
    return collidable


def object_geoms(model: mujoco.MjModel, obj: str) -> Ints:
    """Collision geoms of an object instance (its `<obj>/object` body and everything below it)."""
    return subtree_geoms(model, model.body(f"{obj}/object").id)


def object_shape(model: mujoco.MjModel, data: mujoco.MjData, obj: str, world: bool = False) -> Shape:
    """The object's collision geoms in its body frame (origin at the asset origin), or in the world."""
    if world:
        return shape_of(model, data, object_geoms(model, obj), np.zeros(3), np.eye(3))
    body = model.body(f"{obj}/object").id
    return shape_of(model, data, object_geoms(model, obj), data.xpos[body], data.xmat[body].reshape(3, 3))


# ----- the gripper ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GripperGeometry:
    """What grasping needs to know about a gripper, measured on the compiled model (tcp frame)."""

    gap_open: float  # m, smallest gap between the fingers' inner faces (pads or hook tips), fully open
    gap_closed: float  # m, the same at the closed end of the stroke
    gap_now: float  # m, the same at the current opening
    stroke: float  # m per finger, closed -> open
    fingers: Shape  # both fingers at the current opening (a linkage's every moving part), tcp frame
    palm: Shape  # the rest of the gripper (palm, mount), tcp frame
    jaw: Jaw | None = None  # a linkage gripper's measured jaw (its gaps are not linear in the command)

    def fingertips_below(self, rot: Floats) -> float:
        """How far below the tcp the fingertips reach with the tcp at rotation `rot` (m, world z)."""
        return self.fingers.turned(rot).support(-UP)

    def palm_below(self, rot: Floats) -> float:
        """How far below the tcp the palm's lowest point is (negative: above it) with the tcp at `rot`."""
        return self.palm.turned(rot).support(-UP)

    def command_for_gap(self, gap: float) -> float:
        """The gripper action (0 closed .. 1 open) that leaves a jaw gap of `gap` metres."""
        if self.jaw is not None:
            return self.jaw.command_for_gap(gap)
        return float(np.clip((gap - self.gap_closed) / (2 * self.stroke), 0.0, 1.0))


def gripper_geometry(model: mujoco.MjModel, data: mujoco.MjData, arm: ArmSpec, finger_bodies: tuple[str, str],
                     closed: float, opened: float, jaw: Jaw | None = None) -> GripperGeometry:
    """The jaw of `arm`'s gripper from its geoms at the current opening; `closed` / `opened` are the finger
    joint's stroke ends (the robot yaml's closed/open ctrl, one finger's travel in metres), or with `jaw` (a
    linkage gripper's, Backend.jaw) the gaps at the stroke's ends are the measured ones."""
    tcp = model.site(arm.tcp_site).id
    pos, rot = data.site_xpos[tcp], data.site_xmat[tcp].reshape(3, 3)
    fingers = [shape_of(model, data, subtree_geoms(model, model.body(b).id), pos, rot) for b in finger_bodies]
    y = np.array([0.0, 1.0, 0.0])
    # one finger sits on +y, the other on -y; their inner faces bound the jaw
    low, high = sorted(fingers, key=lambda f: f.support(y))
    gap = -high.support(-y) - low.support(y)
    if jaw is not None:
        # the pads ride on linkages: every part that moves is finger, what is welded to the tcp's body palm
        root = int(model.site_bodyid[tcp])
        geoms = subtree_geoms(model, root)
        welded = welded_mask(model, root)[model.geom_bodyid[geoms]]
        return GripperGeometry(gap_open=jaw.gap_open, gap_closed=jaw.gap_closed, gap_now=gap,
                               stroke=(jaw.gap_open - jaw.gap_closed) / 2,
                               fingers=shape_of(model, data, geoms[~welded], pos, rot),
                               palm=shape_of(model, data, geoms[welded], pos, rot), jaw=jaw)
    opening = float(data.qpos[model.jnt_qposadr[model.joint(arm.gripper_joints[0]).id]])
    gripper_body = int(model.body_parentid[model.body(finger_bodies[0]).id])
    own = np.flatnonzero(model.geom_bodyid == gripper_body)
    own = own[(model.geom_contype[own] | model.geom_conaffinity[own]) != 0]
    return GripperGeometry(gap_open=gap + 2 * (opened - opening), gap_closed=gap - 2 * (opening - closed),
                           gap_now=gap, stroke=opened - closed, fingers=concat(*fingers),
                           palm=shape_of(model, data, own, pos, rot))


def gripper_shape(model: mujoco.MjModel, data: mujoco.MjData, arm: ArmSpec, finger_bodies: tuple[str, str]) -> Shape:
    """Every collision geom of the gripper (palm and fingers as they are now), tcp frame."""
    tcp = model.site(arm.tcp_site).id
    root = int(model.site_bodyid[tcp])  # (a slide finger's parent; a linkage's pads hang further down)
    return shape_of(model, data, subtree_geoms(model, root), data.site_xpos[tcp], data.site_xmat[tcp].reshape(3, 3))


# ----- the arm --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArmReach:
    """A cheap reachability screen before IK: the wrist-pitch joint (artixon j5, Panda joint6) must lie within
    the distance it has from the shoulder-pitch joint (j2) with the elbow straight (artixon: 0.30 + 0.10 + 0.18
    m); the robot file names the two joints (`reach_joints`)."""

    shoulder: Floats  # world position of the shoulder pitch joint
    radius: float  # m, shoulder pitch -> wrist pitch with the arm straight
    wrist_offset: float  # m, wrist pitch joint -> tcp along the tool axis

    def slack(self, tcp_pos: Floats, tcp_rot: Floats) -> float:
        """`radius` minus the shoulder-wrist distance this tcp pose needs (< 0: out of reach)."""
        wrist = tcp_pos - tcp_rot[:, 2] * self.wrist_offset
        return self.radius - norm(wrist - self.shoulder)


def arm_reach(model: mujoco.MjModel, data: mujoco.MjData, arm: ArmSpec) -> ArmReach:
    j2, j5 = (model.joint(arm.joints[i]).id for i in arm.reach_joints)
    b2, b5 = int(model.jnt_bodyid[j2]), int(model.jnt_bodyid[j5])
    radius, b = 0.0, b5
    while b != b2:  # with the arm straight, the body offsets down the chain add up
        radius += float(np.linalg.norm(model.body_pos[b]))
        b = int(model.body_parentid[b])
    tcp = model.site(arm.tcp_site).id
    z = data.site_xmat[tcp].reshape(3, 3)[:, 2]
    return ArmReach(data.xanchor[j2].copy(), radius, float((data.site_xpos[tcp] - data.xanchor[j5]) @ z))


# ----- rotations ------------------------------------------------------------------------------------
def rot_about(axis: Floats, angle: float) -> Floats:
    """Rotation matrix of `angle` rad about `axis` (the screw moves' Rodrigues, for one angle)."""
    rot: Floats = rotations(axis, np.array([angle]))[0]
    return rot


def rot_between(a: Floats, b: Floats) -> Floats:
    """The smallest rotation taking unit vector a to unit vector b."""
    axis = np.cross(a, b)
    s, c = float(np.linalg.norm(axis)), float(np.clip(a @ b, -1.0, 1.0))
    if s > 1e-9:
        return rot_about(axis, float(np.arctan2(s, c)))
    if c > 0:
        return np.eye(3)
    other = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    return rot_about(other, np.pi)


def horizontal(v: Floats, up: Floats = UP) -> Floats:
    """The unit vector along v's component perpendicular to `up`."""
    h = v - (v @ up) * up
    return h / max(float(np.linalg.norm(h)), 1e-9)
