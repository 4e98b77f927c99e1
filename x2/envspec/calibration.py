"""Twin calibration files: `specs/calibrations/<name>.yaml`, what makes x2's twin a lab's own robot.

One YAML mapping (docs/calibration.md): `name`, `robot` (the robot it calibrates), `dynamics` (written by
`x2 calibrate dynamics`: the command latency in control ticks, per arm the gravity-compensation share and per
joint the servo gains, damping, armature and friction loss, a `fit` summary and a `made_by` note), `cameras`
(written by `x2 calibrate camera`, checked by x2/envspec/camera_calibration.py and applied to the world's cameras by
x2/sim/mujoco/camera_calibration.py) and `made_by` notes (one per section). A robot takes one as
`ROBOT@NAME` (`aloha@lab1`) or `--calibration NAME`; the file's sha256 travels with it into every episode.

"Twin calibration" is this; a leader arm's device calibration (x2/devices/calibration.py) is another thing.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field

from x2.base.errors import NotFoundError, SpecError
from x2.envspec.camera_calibration import CameraCalibration, parse_camera_calibrations
from x2.envspec.env import JointDynamics, RobotSpec, TwinCalibration
from x2.envspec.schema import Extent, Name, Number, Size, Unit, Whole, _Strict, parse
from x2.envspec.source import Fragment, is_file, read_yaml
from x2.files import atomic
from x2.files.digest import bytes_digest

FOLDER = Path("specs") / "calibrations"  # under the working directory
MAX_LATENCY_TICKS = 30  # a second at 30 fps: more is a recording's clock, not a servo's delay
SEPARATOR = "@"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class JointDynamicsFile(_Strict):
    kp: Size | None = None  # N m / rad
    kv: Extent | None = None  # N m s / rad
    damping: Extent | None = None  # N m s / rad
    armature: Extent | None = None  # kg m^2
    frictionloss: Extent | None = None  # N m


class ArmDynamicsFile(_Strict):
    gravcomp: Unit | None = None  # share of gravity compensated on the arm's bodies (x2's built-in arms: 1)
    joints: dict[Name, JointDynamicsFile] = {}  # by x2's joint name (left_waist)


class FitSummary(_Strict):
    """What a fit says about itself (written by `x2 calibrate dynamics`, read by people)."""

    dataset: str = ""
    episodes_fitted: list[Whole] = []
    episodes_held_out: list[Whole] = []
    tcp_error_mm: dict[str, Number] = {}  # e.g. held_out_median_before / held_out_median_after
    rms_rad: dict[str, Number] = {}


class DynamicsFile(_Strict):
    latency_ticks: Annotated[int, Field(ge=0, le=MAX_LATENCY_TICKS, strict=True)] = 0
    arms: dict[Name, ArmDynamicsFile] = {}
    fit: FitSummary | None = None
    made_by: str = ""


class CalibrationFile(_Strict):
    name: Name
    robot: Name  # the robot it calibrates (its name without a +GRIPPER)
    dynamics: DynamicsFile | None = None
    cameras: dict[str, Any] | None = None  # x2 calibrate camera's: checked by parse_camera_calibrations
    made_by: str | dict[str, str] = ""  # x2 calibrate camera writes {cameras: ...}; the dynamics keep theirs inside


def twin_calibration_path(name: str) -> Path:
    """A calibration by name (./specs/calibrations/<name>.yaml) or a path to a .yaml."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not is_file(path):
            raise NotFoundError(f"{reprlib.repr(name)}: no such calibration file")
        return path.resolve()
    path = Path.cwd() / FOLDER / f"{name}.yaml"
    if not is_file(path):
        folder = Path.cwd() / FOLDER
        known = sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
        raise NotFoundError(f"unknown calibration {reprlib.repr(name)}; calibrations in {FOLDER}: "
                            f"{', '.join(known) or 'none'}")
    return path


def read_calibration(name: str) -> tuple[Path, Fragment, CalibrationFile, str]:
    """(path, fragment, parsed file, sha256 of its bytes) of a calibration by name or path."""
    path = twin_calibration_path(name)
    frag = read_yaml(path)
    return path, frag, parse(CalibrationFile, frag), bytes_digest(path.read_bytes())


def split_name(robot: str) -> tuple[str, str | None]:
    """`aloha@lab1` -> ("aloha", "lab1"); a path to a robot file has none (its folder may hold an @)."""
    if SEPARATOR in robot and not robot.endswith((".yaml", ".yml")):
        base, cal = robot.rsplit(SEPARATOR, 1)
        return base, cal
    return robot, None


def base_robot_name(name: str) -> str:
    """The robot a (possibly gripper-swapped, calibrated) name starts from: aloha+G@lab1 -> aloha."""
    return split_name(name)[0].split("+", 1)[0]


def with_twin_calibration(robot: RobotSpec, name: str) -> RobotSpec:
    """`robot` with the calibration `name` applied (its name then says so: aloha@lab1). A calibration of
    another robot, or naming an arm or joint the robot lacks, is refused at its file and line."""
    path, frag, spec, digest = read_calibration(name)
    own = base_robot_name(robot.name)
    if spec.robot != own:
        raise frag.error(("robot",), repr(spec.robot), f"{own!r}: calibration {spec.name!r} is for another robot")
    joints: list[JointDynamics] = []
    gravcomp: list[tuple[str, float]] = []
    latency = 0
    if spec.dynamics is not None:
        latency = spec.dynamics.latency_ticks
        arms = {a.name: a for a in robot.arms}
        for arm_name, arm in spec.dynamics.arms.items():
            if arm_name not in arms:
                raise frag.error(("dynamics", "arms", arm_name), repr(arm_name),
                                 "an arm of " + robot.name + ": " + ", ".join(arms))
            if arm.gravcomp is not None:
                gravcomp.append((arm_name, float(arm.gravcomp)))
            for joint, values in arm.joints.items():
                if joint not in arms[arm_name].joints:
                    raise frag.error(("dynamics", "arms", arm_name, "joints", joint), repr(joint),
                                     f"a joint of arm {arm_name}: " + ", ".join(arms[arm_name].joints))
                joints.append(JointDynamics(joint, values.kp, values.kv, values.damping, values.armature,
                                            values.frictionloss))
    cameras = parse_camera_calibrations(spec.cameras, str(path)) if spec.cameras else {}
    for camera in cameras:
        if camera not in robot.cameras:
            raise frag.error(("cameras", camera), repr(camera), f"a camera of {robot.name}: {', '.join(robot.cameras)}")
    twin = TwinCalibration(name=spec.name, digest=digest, latency_ticks=latency, joints=tuple(joints),
                           gravcomp=tuple(gravcomp), cameras=tuple(cameras.values()))
    shown = spec.name if name.endswith((".yaml", ".yml")) else name
    return replace(robot, name=f"{robot.name}{SEPARATOR}{shown}", calibration=twin)


def calibration_record(robot: RobotSpec) -> dict[str, str] | None:
    """What an episode and a manifest record of the twin calibration: {name, digest}, or None without one."""
    cal = robot.calibration
    return None if cal is None else {"name": cal.name, "digest": cal.digest}


def dynamics_section(cal: TwinCalibration, fit: FitSummary | None, made_by: str) -> dict[str, object]:
    """The `dynamics` section of a calibration file for `cal`'s values (what `x2 calibrate dynamics` writes)."""
    arms: dict[str, dict[str, object]] = {}
    shares = dict(cal.gravcomp)
    for arm, share in shares.items():
        arms.setdefault(arm, {})["gravcomp"] = round(share, 6)
    for j in cal.joints:
        arm = j.joint.split("_", 1)[0]
        values = {k: round(float(v), 6) for k, v in (("kp", j.kp), ("kv", j.kv), ("damping", j.damping),
                                                     ("armature", j.armature), ("frictionloss", j.frictionloss))
                  if v is not None}
        joints = arms.setdefault(arm, {}).setdefault("joints", {})
        assert isinstance(joints, dict)
        joints[j.joint] = values
    section: dict[str, object] = {"latency_ticks": cal.latency_ticks, "arms": arms}
    if fit is not None:
        section["fit"] = fit.model_dump()
    section["made_by"] = made_by
    return section


def calibration_file(name: str) -> Path:
    """Where a calibration named `name` is written: ./specs/calibrations/<name>.yaml, or `name` itself when it is
    a .yaml path (`twin_calibration_path` finds one to read)."""
    if name.endswith((".yaml", ".yml")):
        return Path(name)
    if not _NAME.match(name):
        raise SpecError("calibration", None, "--name", repr(name),
                        "a calibration name (letters, digits, _ . -) or a .yaml path")
    return Path.cwd() / FOLDER / f"{name}.yaml"


def write_dynamics(path: Path, robot: str, section: dict[str, object]) -> None:
    """Write (atomically) the calibration file at `path` with `section` as its `dynamics`: every other key of an
    existing file (its cameras) stays as it was parsed, and so do the arms of its dynamics that `section` leaves
    out (one arm fitted at a time)."""
    doc = _read_to_rewrite(path, robot)
    kept, arms = doc.get("dynamics"), section.get("arms")
    if isinstance(kept, dict) and isinstance(kept.get("arms"), dict) and isinstance(arms, dict):
        section = {**section, "arms": {**kept["arms"], **arms}}
    doc = {"name": path.stem, **doc, "robot": robot, "dynamics": section}
    _write(path, _text(path, doc))


def write_cameras(path: Path, robot: str, cameras: Mapping[str, CameraCalibration], made_by: str) -> None:
    """Put `cameras` into the `cameras` section of the calibration file at `path` (made when missing), each
    replacing its camera's entry; every other key (the dynamics section, other cameras, other notes) is written
    back as parsed. The file is replaced whole (x2.files.atomic): a reader sees the old one or the new one."""
    _write(path, cameras_text(path, robot, cameras, made_by))


def cameras_text(path: Path, robot: str, cameras: Mapping[str, CameraCalibration], made_by: str) -> str:
    """The calibration file's new text (write_cameras), the file at `path` checked and nothing written: a caller
    with other outputs checks with this before writing any of them."""
    doc = _read_to_rewrite(path, robot)
    parse_camera_calibrations(doc.get("cameras") or {}, str(path))  # an unreadable section is refused, not lost
    section = dict(doc.get("cameras") or {})  # type: ignore[call-overload]  # (checked above: a mapping)
    for name, cal in cameras.items():
        section[name] = cal.to_file()
    notes = doc.get("made_by")
    doc = {"name": path.stem, "robot": robot, **doc, "cameras": section,
           "made_by": {**(dict(notes) if isinstance(notes, Mapping) else {}), "cameras": made_by}}
    return _text(path, doc)


# ----- the one read-modify-write path of both commands: each rewrites its own section, the rest as parsed ------
def _read_to_rewrite(path: Path, robot: str) -> dict[str, object]:
    """The calibration file at `path` as a mapping to rewrite ({} when there is none), refused in one line when it
    cannot be read or calibrates another robot (nothing is overwritten that was not understood)."""
    if not path.exists():
        return {}
    where = str(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SpecError(where, None, "<file>", type(exc).__name__, "a calibration YAML x2 can read") from None
    if not isinstance(raw, Mapping):
        raise SpecError(where, None, "<file>", type(raw).__name__, "a calibration file: a mapping")
    doc = {str(k): v for k, v in raw.items()}
    if doc.get("robot", robot) != robot:
        raise SpecError(where, None, "robot", repr(doc.get("robot")),
                        f"{robot!r} (the robot being calibrated; another robot's calibration is another file: give "
                        "another --name)")
    return doc


def _text(path: Path, doc: dict[str, object]) -> str:
    """The file's text, checked against the schema before anything is written."""
    parse(CalibrationFile, Fragment(doc, file=str(path)))
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=None, width=120)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, text)
