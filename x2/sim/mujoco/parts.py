"""Robot parts from vendor MJCF files, renamed to x2's contract, and worlds that carry their meshes inline.

A vendor arm (robots/parts/<name>.yaml, kind arm) keeps its bodies, joints, inertias and collision meshes
exactly as the vendor wrote them; x2 takes away what is not the arm (the vendor's own gripper, actuators,
sensors, cameras, tendons, equalities, textures), and adds its conventions: position servos named as the
joints, every body gravity-compensated (as the artixon arms and the real arms' controllers are), the robot's
collision masks (contype 2, conaffinity 3), and a flange site `flange` where x2 attaches the gripper. The
robot's MJCF (the mount) attaches it at `<arm>_mount` with the prefix `<arm>_`, so the Panda's `joint1`
becomes `right_joint1`.

A vendor gripper (kind gripper) is renamed to the contract x2's own grippers follow (artixon/gripper_g.xml):
body `gripper`, finger joints `finger_a`/`finger_b` (slides, opening per side; b follows a through an
equality), a position servo `gripper` on finger_a, site `tcp`, camera `wrist`; its finger geoms get pad
friction (condim 4), since what x2 measures of a grasp is what its pads hold. A gripper whose fingers ride on
linkages keeps the vendor's joints, constraints and actuator instead (x2/sim/mujoco/linkage.py).

A recorded world is self-contained text (x2.sim.mujoco.recorded_xml), so `inline_meshes` replaces each mesh
file by its vertices and faces; a mesh of more than `INLINE_VERTICES` vertices is replaced by its convex hull,
which is all MuJoCo collides with anyway (the picture gets coarser, the physics stays the same). An arm whose
part file sets `visual_faces` is drawn with the vendor's visual meshes instead, decimated to that many faces a
piece (x2.sim.mujoco.visual_meshes).
"""

from __future__ import annotations

import functools
from pathlib import Path

import mujoco
import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats
from x2.base.errors import SpecError
from x2.envspec.env import ArmPart, GripperPart
from x2.sim.mujoco.urdf import read_urdf
from x2.sim.mujoco.visual_meshes import COLLISION_GROUP, VISUAL_GROUP, file_frame, vendor_visuals

ROBOT_CONTYPE, ROBOT_CONAFFINITY = 2, 3  # as the artixon robot: touches the booth, objects and itself
FLANGE_SITE = "flange"
# servo defaults for an arm part that leaves its gains out (a URDF has no actuators): N m where the file gives no
# effort limit, and kp per N m of it (rad^-1), so that a servo at its torque limit is 0.1 rad off its target
DEFAULT_FORCE, DEFAULT_STIFFNESS = 50.0, 10.0
# kg m^2 on each joint of a user's file that gives none (a URDF cannot): a real joint's motor and gearbox add
# about this much (Menagerie's Panda: 0.1), and without it a light wrist link under a stiff servo rings at the
# booth's timestep (pybullet_data's iiwa: half the pick_place attempts failed to place, none with it)
DEFAULT_ARMATURE = 0.1
INLINE_VERTICES = 300  # (a world is compiled at every reset: 1000 made an ALOHA reset 0.20 s, 300 makes it 0.11 s)


def vendor_spec(file: Path, what: str, meshdir: Path | None = None, geometry: bool = True) -> mujoco.MjSpec:
    """A vendor's or a user's MJCF or URDF (x2.sim.mujoco.urdf), its mesh files made absolute paths; a URDF
    without `geometry` loses its geoms (one whose meshes are not shipped: x2 fits capsules)."""
    if file.suffix.lower() == ".urdf":
        spec = read_urdf(file, meshdir, geometry)
    else:
        try:
            spec = mujoco.MjSpec.from_file(str(file))
        except ValueError as err:
            raise SpecError(str(file), None, "mjcf", str(err).strip().splitlines()[0],
                            f"a valid {what} MJCF") from None
    # absolute mesh paths: once attached, the vendor's folder is no longer the model's folder
    base = meshdir if meshdir is not None else file.parent / (spec.meshdir or "")
    for mesh in spec.meshes:
        if mesh.file:
            path = (base / mesh.file).resolve()
            if not path.is_file():
                raise SpecError(str(file), None, "mesh", f"{mesh.file!r} (no such file in {base})",
                                "mesh files under the file's meshdir, or the part's source.meshdir")
            mesh.file = str(path)
    return spec


def _fit_capsules(spec: mujoco.MjSpec, part: ArmPart) -> None:
    """Collision capsules along the links: from each listed body's origin to its child body's (the flange
    body's to the flange), massless (the vendor's inertias stay)."""
    for name, radius in part.capsules:
        body = spec.body(name)
        if body is None:
            raise SpecError(str(part.source.file), None, "capsules", f"no body {name!r}", "bodies of the arm")
        children = list(body.bodies)
        if body.name == part.root and children:
            # the shoulder: its capsules meet the base's by construction, and a jointless root counts as the world
            # (MuJoCo filters no contact with a world-welded parent), so the base excludes its child and grandchild
            shoulder = [children[0], *list(children[0].bodies)[:1]]
            for link in shoulder:
                spec.add_exclude(bodyname1=body.name, bodyname2=link.name)
        end = list(part.flange_pos) if name == part.flange_body or not children else list(children[0].pos)
        geom = body.add_geom(size=[radius, 0, 0], mass=0.0, contype=ROBOT_CONTYPE, conaffinity=ROBOT_CONAFFINITY,
                             rgba=list(part.rgba))
        if float(np.linalg.norm(end)) < 1e-6:
            geom.type = mujoco.mjtGeom.mjGEOM_SPHERE
        else:
            geom.type, geom.fromto = mujoco.mjtGeom.mjGEOM_CAPSULE, [0.0, 0.0, 0.0, *end]


def _exclude_shoulder(spec: mujoco.MjSpec, root: str) -> None:
    """A user's arm keeps its file's collision meshes; its jointless root counts as the world once mounted (MuJoCo
    filters no contact with a world-welded parent), so, as the fitted capsules do, the root excludes its child and
    grandchild, whose meshes meet it at the shoulder by construction."""
    body = spec.body(root)
    children = list(body.bodies)
    if children:
        for link in [children[0], *list(children[0].bodies)[:1]]:
            spec.add_exclude(bodyname1=body.name, bodyname2=link.name)


def strip_part(spec: mujoco.MjSpec, keep_visual: bool, rgba: tuple[float, ...], linkage: bool = False,
               vendor_look: bool = False) -> None:
    """Everything but bodies, joints, inertias and geoms goes (with `linkage`, what closes and drives a linkage
    stays: actuators, tendons, equalities, contact exclusions); geoms lose their materials. With `vendor_look`
    the visual-only geoms keep their colours and are what the cameras see (x2.sim.mujoco.visual_meshes)."""
    kept = ("actuators", "tendons", "equalities", "excludes") if linkage else ()
    for name in ("actuators", "sensors", "tendons", "equalities", "cameras", "keys", "excludes", "pairs", "lights"):
        if name in kept:
            continue
        for element in list(getattr(spec, name)):
            spec.delete(element)
    for geom in list(spec.geoms):
        visual_only = geom.contype == 0 and geom.conaffinity == 0
        if visual_only and not keep_visual:
            spec.delete(geom)
            continue
        geom.material = ""
        if vendor_look:
            geom.group = VISUAL_GROUP if visual_only else COLLISION_GROUP
            if not visual_only:
                geom.rgba = list(rgba)
        else:
            geom.rgba = list(rgba)
            geom.group = 0  # the collision geometry is what the cameras see (vendor visual meshes are 30+ MB)
        if not visual_only:
            geom.contype, geom.conaffinity = ROBOT_CONTYPE, ROBOT_CONAFFINITY
    spec.visual.map.znear = mujoco.MjSpec().visual.map.znear  # (the world's own; a vendor's scene sets its own)
    for group in (spec.materials, spec.textures):
        for element in list(group):
            spec.delete(element)
    used = {g.meshname for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH}
    for mesh in list(spec.meshes):
        if mesh.name not in used:
            spec.delete(mesh)


def pad_contacts(finger: mujoco.MjsBody, part: GripperPart) -> None:
    """A finger's colliding geoms become pads (condim 4, the part's pad friction, stiff contacts): what x2
    measures of a grasp is what its pads hold."""
    for geom in finger.geoms:
        if geom.contype or geom.conaffinity:
            geom.condim, geom.friction = 4, list(part.pad_friction)
            geom.solref, geom.solimp = [0.01, 1.0], [0.95, 0.99, 0.001, 0.5, 2.0]


def add_tcp_and_wrist(root: mujoco.MjsBody, part: GripperPart) -> None:
    """The contract's site `tcp` and camera `wrist` on the gripper's body, where the part file puts them."""
    root.add_site(name="tcp", pos=list(part.tcp), quat=list(part.tcp_quat), group=4)
    camera = root.add_camera(name="wrist", pos=list(part.camera_pos), fovy=part.camera_fovy)
    camera.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    camera.alt.xyaxes = list(part.camera_xyaxes)


def _only_body(spec: mujoco.MjSpec, root: str, file: Path) -> mujoco.MjsBody:
    body = spec.body(root)
    if body is None:
        raise SpecError(str(file), None, "root", f"no body {root!r}",
                        "a body of the vendor file: " + ", ".join(b.name for b in spec.bodies if b.name))
    for top in list(spec.worldbody.bodies):
        if top.name != root:
            spec.delete(top)
    for site in list(spec.sites):
        spec.delete(site)
    return body


def _keep_only(spec: mujoco.MjSpec, root: str, file: Path, keep_visual: bool, rgba: tuple[float, ...],
               vendor_look: bool = False) -> None:
    """The part's body tree from `root` alone, at the origin (where it stands is the mount's business), stripped
    to bodies, joints, inertias and geoms, every body gravity-compensated."""
    body = _only_body(spec, root, file)
    body.pos, body.quat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
    strip_part(spec, keep_visual=keep_visual, rgba=rgba, vendor_look=vendor_look)
    for b in spec.bodies:
        if b.name:
            b.gravcomp = 1.0


def arm_part_spec(part: ArmPart, hand: GripperPart | None = None, closed: float = 0.0,
                  opened: float = 0.0) -> mujoco.MjSpec:
    """The vendor arm as x2 uses it, root body first, meshes inline, ready to attach at a mount site (a fresh
    spec each call: attaching consumes it). With `hand`, a gripper inside the arm's own file (`in_arm`), that
    gripper is kept and renamed to the contract; otherwise the arm's own gripper (`drop_bodies`) goes."""
    return _arm_part(part, hand, closed, opened).copy()


def gripper_part_spec(part: GripperPart, closed: float, opened: float) -> mujoco.MjSpec:
    """The vendor gripper renamed to x2's gripper contract (module docstring), meshes inline."""
    return _gripper_part(part, closed, opened).copy()


@functools.cache
def _arm_part(part: ArmPart, hand: GripperPart | None, closed: float, opened: float) -> mujoco.MjSpec:
    file = part.source.file
    spec = vendor_spec(file, f"arm part {part.name!r}", part.source.meshdir, geometry=not part.capsules)
    # joint -> the joint it follows (a URDF <mimic>, which MuJoCo reads as a joint equality; strip_part drops them)
    follows = {eq.name1: eq.name2 for eq in spec.equalities if eq.type == mujoco.mjtEq.mjEQ_JOINT and eq.name2}
    if hand is None:
        for name in part.drop_bodies:
            body = spec.body(name)
            if body is None:
                raise SpecError(str(file), None, "drop_bodies", f"no body {name!r}", "bodies of the vendor file")
            spec.delete(body)
    if part.visual_faces:
        vendor_visuals(spec, part.visual_faces)
    _keep_only(spec, part.root, file, part.keep_visual or bool(part.visual_faces), part.rgba,
               vendor_look=bool(part.visual_faces))
    _fit_capsules(spec, part)
    if part.source.package is None and not part.capsules:
        _exclude_shoulder(spec, part.root)
    names = part.joint_names or part.joints
    for i, (old, name) in enumerate(zip(part.joints, names, strict=True)):
        joint = spec.joint(old)
        if joint is None:
            raise SpecError(str(file), None, "joints", f"no joint {old!r}",
                            "joints of the vendor file: " + ", ".join(j.name for j in spec.joints))
        if old in follows:
            raise SpecError(str(file), None, "joints", f"{old!r} (it follows {follows[old]!r}: a URDF <mimic> or a "
                            "joint equality)", "controlled joints that move on their own (each gets its own servo)")
        joint.name = name
        if part.joint_range is not None:
            joint.range = list(part.joint_range)
        elif not has_limits(joint):
            raise SpecError(str(file), None, "joints", f"{old!r} (no limits: a continuous or unlimited joint)",
                            "a controlled joint with limits in the file, or joint_range: [lo, hi] in the part YAML")
        kp, kv, force = servo_gains(part, i, joint)
        if part.joint_dynamics is not None:
            armature, damping, friction = part.joint_dynamics
            joint.armature, joint.damping, joint.frictionloss = armature, [damping, 0.0, 0.0], friction
        elif part.source.package is None and joint.armature == 0:
            joint.armature = DEFAULT_ARMATURE
        servo = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        servo.set_to_position(kp=kp, kv=kv)
        servo.ctrllimited, servo.ctrlrange = 1, list(joint.range)
        servo.forcelimited, servo.forcerange = 1, [-force, force]
    flange = spec.body(part.flange_body)
    if flange is None:
        raise SpecError(str(file), None, "flange_body", f"no body {part.flange_body!r}",
                        "a body of the arm: " + ", ".join(b.name for b in spec.bodies if b.name not in ("", "world")))
    flange.add_site(name=FLANGE_SITE, pos=list(part.flange_pos), quat=list(part.flange_quat), group=4)
    if hand is not None:
        _as_gripper(spec, hand, closed, opened)
    inline_meshes(spec)
    spec.default.name = f"{part.name}_part"  # an attached part's "main" class would clash with the next part's
    return spec


def has_limits(joint: mujoco.MjsJoint) -> bool:
    """A hinge or slide joint whose file gives it a range (MJCF: `range`, URDF: `<limit>` on a revolute or
    prismatic joint; a URDF continuous joint has none)."""
    return bool(joint.limited != mujoco.mjtLimited.mjLIMITED_FALSE and joint.range[0] < joint.range[1])


def servo_gains(part: ArmPart, i: int, joint: mujoco.MjsJoint) -> tuple[float, float, float]:
    """Joint i's servo (kp, kv, force): the part file's, or for what it leaves out x2's defaults (DEFAULT_*):
    the torque limit the file gives the joint (URDF `effort`), a stiffness of DEFAULT_STIFFNESS x that limit per
    rad, and a tenth of the stiffness as damping (as the Panda's and the ViperX's servos)."""
    effort = float(joint.actfrcrange[1]) if joint.actfrcrange[1] > joint.actfrcrange[0] else 0.0
    force = part.force[i] if part.force else (effort if effort > 0 else DEFAULT_FORCE)
    kp = part.kp[i] if part.kp else DEFAULT_STIFFNESS * force
    kv = part.kv[i] if part.kv else kp / 10.0
    return kp, kv, force


@functools.cache
def _gripper_part(part: GripperPart, closed: float, opened: float) -> mujoco.MjSpec:
    file = part.source.file
    spec = vendor_spec(file, f"gripper part {part.name!r}", part.source.meshdir)
    _keep_only(spec, part.root, file, True, part.rgba)
    _as_gripper(spec, part, closed, opened)
    spec.body(part.root).name = "gripper"
    inline_meshes(spec)
    spec.default.name = f"{part.name}_part"
    return spec


def _as_gripper(spec: mujoco.MjSpec, part: GripperPart, closed: float, opened: float) -> None:
    """Rename the vendor's fingers to finger_a / finger_b (slides opening per side; b's axis turned round when
    the vendor's runs the other way), give them pad friction, and add the tcp site, the wrist camera, the
    coupling and the servo on finger_a, on the gripper's body `part.root`."""
    file = part.source.file
    assert part.kp is not None and part.kv is not None and part.force is not None  # (slides: the schema's)
    root = spec.body(part.root)
    if root is None:
        raise SpecError(str(file), None, "root", f"no body {part.root!r}", "the gripper's body in the vendor file")
    for new, old in zip(("finger_a", "finger_b"), part.fingers, strict=True):
        joint = spec.joint(old)
        if joint is None or joint.type != mujoco.mjtJoint.mjJNT_SLIDE:
            raise SpecError(str(file), None, "fingers", f"{old!r} (not a slide joint of the file)",
                            "the two finger slides, opening per side")
        if joint.range[1] <= 0:  # opening runs toward -axis: the same motion, counted the contract's way
            joint.axis = [-a for a in joint.axis]
            joint.range = [-joint.range[1], -joint.range[0]]
        joint.name = new
        joint.frictionloss = 0.0  # the servo's force limit is the squeeze
        body = joint.parent
        body.name = new
        pad_contacts(body, part)
    add_tcp_and_wrist(root, part)
    spec.add_equality(name="finger_coupling", type=mujoco.mjtEq.mjEQ_JOINT, name1="finger_b", name2="finger_a",
                      data=np.array([0.0, 1.0] + [0.0] * 10), solref=[0.005, 1.0])
    servo = spec.add_actuator(name="gripper", target="finger_a", trntype=mujoco.mjtTrn.mjTRN_JOINT)
    servo.set_to_position(kp=part.kp, kv=part.kv)
    servo.ctrllimited, servo.ctrlrange = 1, [closed, opened]
    servo.forcelimited, servo.forcerange = 1, [-part.force, part.force]


def inline_meshes(spec: mujoco.MjSpec) -> None:
    """Replace every mesh file of `spec` by its vertices and faces (its convex hull if it is big)."""
    files = [mesh for mesh in spec.meshes if mesh.file]
    if not files:
        return
    model = spec.compile()
    for mesh in files:
        i = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MESH, mesh.name)
        start, count = int(model.mesh_vertadr[i]), int(model.mesh_vertnum[i])
        vert = model.mesh_vert[start:start + count].astype(np.float64)
        face = model.mesh_face[model.mesh_faceadr[i]:model.mesh_faceadr[i] + model.mesh_facenum[i]]
        if count > INLINE_VERTICES and model.mesh_graphadr[i] >= 0:
            vert, face = _hull(model, i, vert)
        vert = file_frame(model, i, vert)
        # (a new mesh of the same name: a compiled mesh keeps its file's normals, which new faces would not fit)
        name = mesh.name
        spec.delete(mesh)
        spec.add_mesh(name=name, uservert=vert.ravel().tolist(), userface=np.asarray(face).ravel().tolist())


def _hull(model: mujoco.MjModel, i: int, vert: Floats) -> tuple[Floats, npt.NDArray[np.int64]]:
    """The convex hull MuJoCo computed for mesh i: (vertices, faces indexing them)."""
    graph = model.mesh_graph[model.mesh_graphadr[i]:]
    nvert, nface = int(graph[0]), int(graph[1])
    global_id = graph[2 + nvert:2 + 2 * nvert]
    face_global = graph[2 + 3 * nvert + 3 * nface:2 + 3 * nvert + 6 * nface].reshape(nface, 3)
    local = {int(g): k for k, g in enumerate(global_id)}
    faces = np.array([[local[int(g)] for g in face] for face in face_global], dtype=np.int64)
    return vert[global_id], faces
