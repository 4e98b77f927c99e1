"""Robot YAML -> RobotSpec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from x2.spec import catalog
from x2.spec.env import ArmSpec, GripperSpec, RobotSpec, Vec3
from x2.spec.files import RobotFile, parse
from x2.spec.source import Fragment, is_file, resolved


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
        if len(arm.home) != len(arm.joints):
            raise frag.error(("arms", name, "home"), f"{len(arm.home)} values",
                             f"{len(arm.joints)} values, one per joint")
        actuators = arm.actuators or arm.joints
        if len(actuators) != len(arm.joints):
            raise frag.error(("arms", name, "actuators"), f"{len(actuators)} names", f"{len(arm.joints)} names")
        arms.append(ArmSpec(
            name=name, joints=tuple(arm.joints), actuators=tuple(actuators), home=tuple(arm.home),
            gripper_actuator=f"{name}_gripper", gripper_joints=(f"{name}_finger_a", f"{name}_finger_b"),
            tcp_site=f"{name}_tcp", wrist_camera=f"{name}_wrist",
        ))
    gripper = GripperSpec(kind=spec.gripper.kind, mjcf=_file_next_to(frag, ("gripper", "mjcf"), spec.gripper.mjcf),
                           open_ctrl=spec.gripper.open, closed_ctrl=spec.gripper.closed)
    model = RobotSpec(name=spec.name, mjcf=_file_next_to(frag, ("mjcf",), spec.mjcf), gripper=gripper,
                       arms=tuple(arms), cameras=tuple(spec.cameras), base_pos=spec.base_pos)
    shoulders: dict[str, Vec3] = dict(spec.shoulders.items())
    return RobotInfo(model, spec.reach, shoulders, spec.reference_task, spec.description, file,
                     spec.control.fps, spec.control.substeps)


def load_robot(name: str) -> RobotInfo:
    path, frag = catalog.load("robots", name)
    return compile_robot(frag, path)
