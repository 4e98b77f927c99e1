"""Robot YAML -> RobotSpec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from x2.errors import NotFoundError
from x2.spec import catalog, vendor
from x2.spec.env import ArmPart, ArmSpec, GripperPart, GripperSpec, RobotSpec, Vec3, VendorSource
from x2.spec.files import ArmPartFile, GripperPartFile, RobotFile, VendorSourceFile, parse
from x2.spec.source import Fragment, is_file, load_fragment, resolved

PARTS_DIR = "parts"  # robots/parts/<name>.yaml: arms and grippers taken from vendor files


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


def _file_next_to(frag: Fragment, key: tuple[str, ...], rel: str) -> Path:
    """A path field resolves relative to the YAML file that set it (which may be an include)."""
    base = Path(frag.origin(key).file).resolve().parent
    path = resolved(base, rel)
    if path is None or not is_file(path):
        raise frag.error(key, f"{rel!r} (no such file)", f"a path relative to {frag.origin(key).file}")
    return path


def compile_robot(frag: Fragment, file: Path) -> RobotInfo:
    spec: RobotFile = parse(RobotFile, frag)
    if spec.gripper.closed >= spec.gripper.open:
        raise frag.error(("gripper", "closed"), str(spec.gripper.closed), f"a value below open={spec.gripper.open}")
    arms = []
    for name, arm in spec.arms.items():
        part = None if arm.part is None else _arm_part(frag, ("arms", name, "part"), arm.part, file)
        joints = arm.joints if part is None else [f"{name}_{j}" for j in part.joints]
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
            gripper_actuator=f"{name}_gripper", gripper_joints=(f"{name}_finger_a", f"{name}_finger_b"),
            tcp_site=f"{name}_tcp", wrist_camera=f"{name}_wrist", reach_joints=(reach[0], reach[1]), part=part,
        ))
    g = spec.gripper
    gripper_part = None if g.part is None else _gripper_part(frag, ("gripper", "part"), g.part, file)
    gripper_mjcf = (gripper_part.source.file if gripper_part is not None
                    else _file_next_to(frag, ("gripper", "mjcf"), str(g.mjcf)))
    gripper = GripperSpec(kind=g.kind, mjcf=gripper_mjcf, open_ctrl=g.open, closed_ctrl=g.closed, part=gripper_part)
    model = RobotSpec(name=spec.name, mjcf=_file_next_to(frag, ("mjcf",), spec.mjcf), gripper=gripper,
                       arms=tuple(arms), cameras=tuple(spec.cameras), base_pos=spec.base_pos)
    shoulders: dict[str, Vec3] = dict(spec.shoulders.items())
    return RobotInfo(model, spec.reach, shoulders, spec.reference_task, spec.description, file,
                     spec.control.fps, spec.control.substeps)


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
    return ArmPart(p.name, _source(pfrag, p.source), p.root, tuple(p.joints), tuple(p.drop_bodies), p.flange_body,
                   p.flange_pos, p.flange_quat, tuple(p.kp), tuple(p.kv), tuple(p.force), p.rgba)


def _gripper_part(frag: Fragment, key: tuple[str, ...], name: str, robot_file: Path) -> GripperPart:
    path, pfrag = _part_fragment(frag, key, name, robot_file)
    p = parse(GripperPartFile, pfrag)
    return GripperPart(p.name, _source(pfrag, p.source), p.root, p.fingers, p.tcp, p.camera_pos, p.camera_xyaxes,
                       p.camera_fovy, p.kp, p.kv, p.force, p.pad_friction, p.rgba)


def load_robot(name: str) -> RobotInfo:
    path, frag = catalog.load("robots", name)
    return compile_robot(frag, path)
