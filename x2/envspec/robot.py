"""Robot YAML -> RobotSpec."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from x2.base.errors import NotFoundError, SpecError
from x2.envspec import catalog, vendor
from x2.envspec.calibration import split_name, with_twin_calibration
from x2.envspec.env import (
    ArmPart,
    ArmSpec,
    CameraJitter,
    GripperPart,
    GripperSpec,
    Linkage,
    MobileBaseSpec,
    RobotSpec,
    Vec3,
    VendorSource,
)
from x2.envspec.recording_table import RecordingTable, compile_table
from x2.envspec.schema import ArmPartFile, GripperFile, GripperPartFile, RobotFile, VendorSourceFile, parse
from x2.envspec.source import Fragment, is_file, load_fragment, resolved

PARTS_DIR = "parts"  # robots/parts/<name>.yaml: arms and grippers taken from vendor files
GRIPPERS_DIR = "grippers"  # robots/grippers/<name>.yaml: a gripper any robot can take instead of its own


@dataclass(frozen=True)
class RobotInfo:
    """A compiled robot plus what the scene checks need (reach) and where it came from."""

    model: RobotSpec
    reach: float
    shoulders: dict[str, Vec3]
    reference_task: str | None
    description: str
    file: Path
    fps: int
    substeps: int
    recording: RecordingTable | None = None  # how its real recordings name and scale their joints (lerobot:)


def _file_next_to(frag: Fragment, key: tuple[str, ...], rel: str) -> Path:
    """A path field resolves relative to the YAML file that set it (which may be an include), else relative to
    x2's own robots folder, so that a user's robot file can name x2's mounts and grippers
    (`mjcf: mounts/stand.xml`)."""
    base = Path(frag.origin(key).file).resolve().parent
    builtin = catalog.BUILTIN_DIRS["robots"]
    for folder in (base, builtin):
        path = resolved(folder, rel)
        if path is not None and is_file(path):
            return path
    raise frag.error(key, f"{rel!r} (no such file)", f"a path relative to {frag.origin(key).file} or to x2's "
                     f"robots folder {builtin} (mounts: {', '.join(_builtin_files('mounts'))})")


def _builtin_files(folder: str) -> list[str]:
    where = catalog.BUILTIN_DIRS["robots"] / folder
    return sorted(f"{folder}/{p.name}" for p in where.glob("*.xml")) if where.is_dir() else []


def _local_file(frag: Fragment, key: tuple[str, ...], rel: str, what: str) -> Path:
    """A user's own file named by a part YAML: relative to that YAML, or absolute."""
    base = Path(frag.origin(key).file).resolve().parent
    path = Path(rel).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.exists() or (what == "file") != path.is_file():
        raise frag.error(key, f"{rel!r} (no such {'file' if what == 'file' else 'folder'})",
                         f"an MJCF or URDF {what} relative to {frag.origin(key).file}, or absolute")
    return path.resolve()


def compile_robot(frag: Fragment, file: Path, gripper: str | None = None) -> RobotInfo:
    """The robot of a robot file; with `gripper`, the gripper of grippers/<gripper>.yaml on every arm instead of
    the file's own (the robot's name then says so: franka-panda+G)."""
    spec: RobotFile = parse(RobotFile, frag)
    gfrag, gkey = frag, tuple[str, ...](("gripper",))
    chosen = gripper or (spec.gripper if isinstance(spec.gripper, str) else None)
    if chosen is not None:
        gfrag, gkey = _gripper_fragment(frag, chosen, file), ()
        update: dict[str, object] = {"gripper": parse(GripperFile, gfrag)}
        if gripper is not None:
            update["name"] = f"{spec.name}+{gripper}"
        spec = spec.model_copy(update=update)
    g = spec.gripper
    assert isinstance(g, GripperFile)
    gripper_part = None if g.part is None else _gripper_part(gfrag, (*gkey, "part"), g.part, file)
    linkage = None if gripper_part is None else gripper_part.linkage
    if linkage is None and g.closed >= g.open:  # slide ctrl is the opening: closed below open
        raise gfrag.error((*gkey, "closed"), str(g.closed), f"a value below open={g.open}")
    if g.closed == g.open:
        raise gfrag.error((*gkey, "closed"), str(g.closed), f"a value other than open={g.open}")
    finger_joints = ("finger_a", "finger_b", *(() if linkage is None else map(linkage.renamed, linkage.joints)))
    arms = []
    for name, arm in spec.arms.items():
        part = None if arm.part is None else _arm_part(frag, ("arms", name, "part"), arm.part, file)
        joints = arm.joints if part is None else [f"{name}_{j}" for j in (part.joint_names or part.joints)]
        assert joints is not None  # (ArmFile checks that joints or part is given)
        if len(arm.home) != len(joints):
            raise frag.error(("arms", name, "home"), f"{len(arm.home)} values", f"{len(joints)} values, one per joint")
        actuators = arm.actuators or joints
        if len(actuators) != len(joints):
            raise frag.error(("arms", name, "actuators"), f"{len(actuators)} names", f"{len(joints)} names")
        reach = tuple(i - 1 for i in arm.reach_joints)
        if not all(0 <= i < len(joints) for i in reach) or reach[0] >= reach[1]:
            raise frag.error(("arms", name, "reach_joints"), str(list(arm.reach_joints)),
                             f"two joint numbers 1..{len(joints)}, shoulder before wrist")
        arms.append(ArmSpec(
            name=name, joints=tuple(joints), actuators=tuple(actuators), home=tuple(arm.home),
            gripper_actuator=f"{name}_gripper", gripper_joints=tuple(f"{name}_{j}" for j in finger_joints),
            tcp_site=f"{name}_tcp", wrist_camera=f"{name}_wrist", reach_joints=(reach[0], reach[1]), part=part,
        ))
    gripper_mjcf = (gripper_part.source.file if gripper_part is not None
                    else _file_next_to(gfrag, (*gkey, "mjcf"), str(g.mjcf)))
    if gripper_part is not None and gripper_part.in_arm:
        for arm_spec in arms:
            if arm_spec.part is None or arm_spec.part.source.file != gripper_part.source.file:
                raise gfrag.error((*gkey, "part"), f"{g.part} (a gripper inside its arm's file)",
                                 f"arms made from that file ({gripper_part.source.file.name}); arm {arm_spec.name} "
                                 "is not")
    hand = GripperSpec(kind=g.kind, mjcf=gripper_mjcf, open_ctrl=g.open, closed_ctrl=g.closed, part=gripper_part,
                       drive="slide" if linkage is None else "linkage")
    base = None if spec.base is None else MobileBaseSpec(
        joints=spec.base.joints, home=spec.base.home, range=spec.base.range,
        speed=spec.base.speed)
    for camera in spec.camera_jitter:
        if camera not in spec.cameras:
            raise frag.error(("camera_jitter", camera), repr(camera), "one of the robot's cameras: "
                             + (", ".join(spec.cameras) or "none"))
    jitter = tuple(CameraJitter(c, float(j.position), float(j.angle), float(j.fovy))
                   for c, j in spec.camera_jitter.items())
    if spec.table_height_jitter and spec.base is not None:
        # The table's height is varied by moving the mount up or down (the table, what stands on it and every
        # world-frame height stay put); a mobile base's chassis rides on the floor, so its mount cannot move.
        raise frag.error(("table_height_jitter",), f"{spec.table_height_jitter:g} on a robot with a mobile base",
                         "0 (omitted): only a robot whose mount is fixed to the world can be raised or lowered")
    model = RobotSpec(name=spec.name, mjcf=_file_next_to(frag, ("mjcf",), spec.mjcf), gripper=hand,
                       arms=tuple(arms), cameras=tuple(spec.cameras), base_pos=spec.base_pos, base=base,
                       camera_jitter=jitter, table_height_jitter=float(spec.table_height_jitter))
    shoulders: dict[str, Vec3] = dict(spec.shoulders.items())
    table = None if spec.lerobot is None else compile_table(spec.lerobot, model.action_names, frag)
    return RobotInfo(model, spec.reach, shoulders, spec.reference_task, spec.description, file,
                     spec.control.fps, spec.control.substeps, table)


def _gripper_fragment(frag: Fragment, name: str, robot_file: Path) -> Fragment:
    """grippers/<name>.yaml (a robot file's `gripper:` block on its own) next to the robot file or built in."""
    folders = [robot_file.resolve().parent / GRIPPERS_DIR, catalog.BUILTIN_DIRS["robots"] / GRIPPERS_DIR]
    for folder in folders:
        path = folder / f"{name}.yaml"
        if is_file(path):
            return load_fragment(path, catalog.spec_roots(path), tuple(folders))
    if frag.data.get("gripper") == name:  # named in the robot file: the error points there
        raise frag.error(("gripper",), repr(name),
                         "a gripper in robots/grippers: " + ", ".join(gripper_names(robot_file)))
    raise NotFoundError(f"unknown gripper {name!r}; grippers: {', '.join(gripper_names(robot_file)) or 'none'}")


def gripper_names(robot_file: Path | None = None) -> list[str]:
    folders = [catalog.BUILTIN_DIRS["robots"] / GRIPPERS_DIR]
    if robot_file is not None:
        folders.insert(0, robot_file.resolve().parent / GRIPPERS_DIR)
    return sorted({p.stem for f in folders if f.is_dir() for p in f.glob("*.yaml")})


def _part_fragment(frag: Fragment, key: tuple[str, ...], name: str, robot_file: Path) -> tuple[Path, Fragment]:
    """robots/parts/<name>.yaml next to the robot file, else among the built-in parts."""
    folders = [robot_file.resolve().parent / PARTS_DIR, catalog.BUILTIN_DIRS["robots"] / PARTS_DIR]
    for folder in folders:
        path = folder / f"{name}.yaml"
        if is_file(path):
            return path, load_fragment(path, catalog.spec_roots(path), tuple(folders))
    known = sorted({p.stem for f in folders if f.is_dir() for p in f.glob("*.yaml")})
    raise frag.error(key, repr(name), "a part in robots/parts: " + (", ".join(known) or "none"))


def _source(frag: Fragment, src: VendorSourceFile) -> VendorSource:
    if src.package is None:  # the user's own file
        file = _local_file(frag, ("source", "file"), src.file, "file")
        if file.suffix.lower() not in (".urdf", ".xml", ".mjcf"):
            raise frag.error(("source", "file"), repr(src.file), "an MJCF (.xml) or URDF (.urdf) file")
        meshdir = None if src.meshdir is None else _local_file(frag, ("source", "meshdir"), src.meshdir, "folder")
        return VendorSource(None, "", file, meshdir)
    if src.package not in vendor.PACKAGES:
        raise frag.error(("source", "package"), repr(src.package), "one of " + ", ".join(vendor.PACKAGES))
    try:
        path = vendor.vendor_file(src.package, src.file)
    except NotFoundError as exc:
        raise frag.error(("source", "file"), str(exc), "a file of a fetched vendor package") from None
    return VendorSource(src.package, vendor.PACKAGES[src.package].version, path)


def _arm_part(frag: Fragment, key: tuple[str, ...], name: str, robot_file: Path) -> ArmPart:
    path, pfrag = _part_fragment(frag, key, name, robot_file)
    p = parse(ArmPartFile, pfrag)
    # gains a part file of the user's own left out: empty here, x2.sim.mujoco.parts defaults them from the file
    defaulted = tuple(f for f in ("kp", "kv", "force") if getattr(p, f) is None)
    return ArmPart(p.name, _source(pfrag, p.source), p.root, tuple(p.joints), tuple(p.joint_names),
                   tuple(p.drop_bodies), p.flange_body, p.flange_pos, p.flange_quat, tuple(p.kp or ()),
                   tuple(p.kv or ()), tuple(p.force or ()), p.rgba, p.keep_visual, p.joint_dynamics,
                   tuple(p.capsules.items()), p.joint_range, defaulted, p.visual_faces or 0)


def _gripper_part(frag: Fragment, key: tuple[str, ...], name: str, robot_file: Path) -> GripperPart:
    path, pfrag = _part_fragment(frag, key, name, robot_file)
    p = parse(GripperPartFile, pfrag)
    linkage = None
    if p.drive == "linkage":
        assert p.pads is not None and p.sides is not None and p.actuator is not None  # (checked by the schema)
        linkage = Linkage(p.pads, p.sides, tuple(p.linkage), p.actuator)
    return GripperPart(p.name, _source(pfrag, p.source), p.root, p.fingers, p.tcp, p.tcp_quat, p.camera_pos,
                       p.camera_xyaxes, p.camera_fovy, p.kp, p.kv, p.force, p.pad_friction, p.rgba, p.in_arm,
                       linkage, p.mount_quat)


def load_robot(name: str, gripper: str | None = None, calibration: str | None = None) -> RobotInfo:
    """A robot by name or path; `NAME+GRIPPER` (the name a robot with another gripper records) is the same as
    `gripper=GRIPPER`, and `NAME@CALIBRATION` (a twin calibration, x2/envspec/calibration.py) the same as
    `calibration=CALIBRATION`; both combine (aloha+G@lab1)."""
    name, named = split_name(name)
    if named is not None and calibration is not None and named != calibration:
        raise SpecError(None, None, "calibration", f"{calibration!r} and {name}@{named}",
                        "one calibration: the robot's @NAME or --calibration NAME")
    calibration = calibration or named
    if gripper is None and "+" in name and not name.endswith((".yaml", ".yml")):
        name, gripper = name.split("+", 1)
    path, frag = catalog.load("robots", name)
    info = compile_robot(frag, path, gripper)
    if calibration is None:
        return info
    return replace(info, model=with_twin_calibration(info.model, calibration))
