"""Leader-arm calibration: servo ticks -> joint angles (rad) and gripper openings in [0, 1].

Layout (the `joints` sample of a master-arm): per arm 6 joint angles then the gripper opening, left arm
first, so 14 values read from 14 servos listed in `ids` in the same order.

A calibration is stored per leader arm at `<dir>/<device_id>.json`, dir = $X2_CALIBRATION_DIR or
./.x2/calibration, device id = the USB serial number of the adapter (stable across replugging and
port renumbering) or, when the system does not know one, the port's basename.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from x2.base.arrays import Floats
from x2.devices.base import DeviceError
from x2.files.atomic import write_text

ARMS = 2
JOINTS_PER_ARM = 6
SERVOS_PER_ARM = JOINTS_PER_ARM + 1  # + the gripper
SERVOS = ARMS * SERVOS_PER_ARM
JOINTS = ARMS * JOINTS_PER_ARM
# Servo index (into ids / ticks / joints) of each arm joint and of each gripper.
JOINT_SLOTS = tuple(a * SERVOS_PER_ARM + j for a in range(ARMS) for j in range(JOINTS_PER_ARM))
GRIPPER_SLOTS = tuple(a * SERVOS_PER_ARM + JOINTS_PER_ARM for a in range(ARMS))

# XL330 / XM430 / STS3215 all resolve one turn into 4096 ticks with 2048 at the horn's centre mark
# (ROBOTIS e-manual, Present Position range 0-4095; Feetech STS3215 memory table likewise).
TICKS_PER_TURN = 4096
CENTER_TICKS = 2048
# Uncalibrated gripper trigger: a quarter turn from the centre mark, the GELLO trigger's usual travel.
GRIPPER_CLOSED_TICKS = 2048
GRIPPER_OPEN_TICKS = 3072
DEFAULT_IDS = tuple(range(1, SERVOS + 1))  # 1-7 left arm, 8-14 right arm
MAX_SERVO_ID = 252  # 253-255 are reserved / broadcast in both the Dynamixel 2.0 and Feetech protocols

CALIBRATION_DIR_ENV = "X2_CALIBRATION_DIR"
DEFAULT_CALIBRATION_DIR = Path(".x2") / "calibration"
FIELDS = ("device_id", "ids", "offsets", "signs", "gripper_closed", "gripper_open", "ticks_per_turn")


@dataclass(frozen=True)
class Calibration:
    """offsets[k] is the tick reading at 0 rad of joint k (12 joints, layout order); signs[k] is +1 when
    the leader joint turns the same way as the robot joint. gripper_closed/open are the tick readings of
    each arm's gripper servo at 0 (closed) and 1 (open)."""

    device_id: str
    ids: tuple[int, ...]
    offsets: tuple[float, ...]
    signs: tuple[int, ...]
    gripper_closed: tuple[float, ...]
    gripper_open: tuple[float, ...]
    ticks_per_turn: int = TICKS_PER_TURN

    def __post_init__(self) -> None:
        # Normalise lists (JSON, numpy) to tuples of plain numbers and validate once, here.
        _check({f: getattr(self, f) for f in FIELDS}, "calibration")
        object.__setattr__(self, "ids", tuple(int(i) for i in self.ids))
        object.__setattr__(self, "offsets", tuple(float(x) for x in self.offsets))
        object.__setattr__(self, "signs", tuple(int(s) for s in self.signs))
        object.__setattr__(self, "gripper_closed", tuple(float(x) for x in self.gripper_closed))
        object.__setattr__(self, "gripper_open", tuple(float(x) for x in self.gripper_open))
        object.__setattr__(self, "ticks_per_turn", int(self.ticks_per_turn))

    # ---- mapping ---------------------------------------------------------------------------------
    def to_joints(self, ticks: Sequence[float] | Floats) -> Floats:
        """14 servo readings (ids order) -> 14 values: per arm 6 joint angles (rad) then gripper in [0, 1]."""
        t = np.asarray(ticks, dtype=np.float64)
        if t.shape != (SERVOS,):
            raise ValueError(f"expected {SERVOS} tick values, got shape {t.shape}")
        out = np.empty(SERVOS)
        rad_per_tick = 2.0 * math.pi / self.ticks_per_turn
        # No wrapping: offsets come from a pose calibration and multi-turn readings (extended position
        # mode) are meaningful, so a reading maps to exactly one angle.
        j, g = list(JOINT_SLOTS), list(GRIPPER_SLOTS)
        out[j] = np.asarray(self.signs) * (t[j] - np.asarray(self.offsets)) * rad_per_tick
        closed, opened = np.asarray(self.gripper_closed), np.asarray(self.gripper_open)
        out[g] = np.clip((t[g] - closed) / (opened - closed), 0.0, 1.0)
        return out

    # ---- construction ----------------------------------------------------------------------------
    @classmethod
    def default(cls, device_id: str, ids: Sequence[int] = DEFAULT_IDS) -> Calibration:
        """No calibration file: the centre mark is 0 rad, every joint turns the robot's way."""
        return cls(device_id, tuple(ids), (float(CENTER_TICKS),) * JOINTS, (1,) * JOINTS,
                   (float(GRIPPER_CLOSED_TICKS),) * ARMS, (float(GRIPPER_OPEN_TICKS),) * ARMS)

    @classmethod
    def from_pose(cls, device_id: str, ids: Sequence[int], ticks_at_pose: Sequence[float] | Floats,
                  pose_rad: Sequence[float] | Floats, signs: Sequence[int] = (1,) * JOINTS,
                  gripper_closed: Sequence[float] = (GRIPPER_CLOSED_TICKS,) * ARMS,
                  gripper_open: Sequence[float] = (GRIPPER_OPEN_TICKS,) * ARMS,
                  ticks_per_turn: int = TICKS_PER_TURN) -> Calibration:
        """Calibrate by holding the leader at a known robot pose (e.g. home).

        ticks_at_pose: the 14 readings (ids order, as the device's `ticks`) while held there;
        pose_rad: the 12 robot joint angles of that pose (layout order). Offsets are chosen so that
        `to_joints(ticks_at_pose)` gives `pose_rad` exactly."""
        t = np.asarray(ticks_at_pose, dtype=np.float64)
        pose = np.asarray(pose_rad, dtype=np.float64)
        if t.shape != (SERVOS,):
            raise DeviceError(f"calibration: ticks_at_pose: found {t.shape[0] if t.ndim == 1 else t.shape} values; "
                              f"allowed: {SERVOS} (one per servo, ids order)")
        if pose.shape != (JOINTS,):
            raise DeviceError(f"calibration: pose_rad: found {pose.shape[0] if pose.ndim == 1 else pose.shape} "
                              f"values; allowed: {JOINTS} joint angles (6 per arm, left first)")
        s = np.asarray(signs, dtype=np.float64)
        # sign * (t - offset) * 2pi/N = pose  <=>  offset = t - sign * pose * N/2pi   (sign is +-1)
        offsets = t[list(JOINT_SLOTS)] - s * pose * ticks_per_turn / (2.0 * math.pi)
        return cls(device_id, tuple(ids), tuple(offsets.tolist()), tuple(int(x) for x in signs),
                   tuple(gripper_closed), tuple(gripper_open), ticks_per_turn)

    # ---- files -----------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DeviceError(f"{path}: calibration file not found; calibrate the leader arm or drop the "
                              "calibration option to use the default mapping") from None
        except OSError as exc:
            raise DeviceError(f"{path}: cannot read the calibration file ({exc.strerror})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DeviceError(f"{path}: line {exc.lineno}: found invalid JSON ({exc.msg}); allowed: a JSON object "
                              f"with {', '.join(FIELDS)}") from None
        _check(data, str(path))
        return cls(**data)

    def save(self, path: str | Path) -> Path:
        """Write atomically (x2.files.atomic): a crash never leaves half a file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = asdict(self)
        data = {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}
        write_text(path, json.dumps(data, indent=2) + "\n")
        return path


# ---- where calibrations live ---------------------------------------------------------------------
def calibration_dir() -> Path:
    return Path(os.environ.get(CALIBRATION_DIR_ENV) or DEFAULT_CALIBRATION_DIR)


def calibration_path(device_id: str) -> Path:
    return calibration_dir() / f"{device_id}.json"


def device_id_for_port(port: str) -> str:
    """The adapter's USB serial number if pyserial knows it, else the port's basename (ttyUSB0, COM3)."""
    serial_number = None
    try:
        from serial.tools import list_ports

        real = os.path.realpath(port)  # /dev/serial/by-id/... links resolve to the listed /dev/ttyUSBn
        for info in list_ports.comports():
            if info.serial_number and (info.device == port or os.path.realpath(info.device) == real):
                serial_number = info.serial_number
                break
    except Exception:  # pyserial missing or a platform enumeration quirk: fall back to the name
        serial_number = None
    raw = serial_number or os.path.basename(port.rstrip("/\\")) or port
    # The id becomes a file name: keep it to one portable path component.
    return re.sub(r"[^A-Za-z0-9._-]", "_", raw)


# ---- validation ----------------------------------------------------------------------------------
def _fail(where: str, field: str, found: object, allowed: str) -> DeviceError:
    return DeviceError(f"{where}: {field}: found {found!r}; allowed: {allowed}")


def _is_number(x: object) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool) and math.isfinite(x)


def _number_list(data: Mapping[str, object], where: str, field: str, n: int, what: str) -> None:
    v = data[field]
    if not isinstance(v, list | tuple | np.ndarray) or len(v) != n:
        raise _fail(where, field, v, f"a list of {n} {what}")
    for i, x in enumerate(v):
        if not _is_number(x):
            raise _fail(where, f"{field}[{i}]", x, "a finite number")


def _check(data: object, where: str) -> None:
    """Raise DeviceError 'WHERE: FIELD: found X; allowed: Y' for the first problem in a calibration record."""
    if not isinstance(data, dict):
        raise DeviceError(f"{where}: found a JSON {type(data).__name__}; allowed: a JSON object with "
                          f"{', '.join(FIELDS)}")
    for field in data:
        if field not in FIELDS:
            raise _fail(where, field, "an unknown field", ", ".join(FIELDS))
    for field in FIELDS:
        if field not in data and field != "ticks_per_turn":
            raise DeviceError(f"{where}: {field}: found nothing; allowed: {', '.join(FIELDS)} (all but "
                              "ticks_per_turn required)")
    if not isinstance(data["device_id"], str) or not data["device_id"]:
        raise _fail(where, "device_id", data["device_id"], "a non-empty string")
    ids = data["ids"]
    if not isinstance(ids, list | tuple | np.ndarray) or len(ids) != SERVOS:
        raise _fail(where, "ids", ids, f"a list of {SERVOS} servo ids (6 joints + gripper per arm, left first)")
    for i, x in enumerate(ids):
        if not isinstance(x, int | np.integer) or isinstance(x, bool) or not 0 <= x <= MAX_SERVO_ID:
            raise _fail(where, f"ids[{i}]", x, f"an integer 0-{MAX_SERVO_ID}")
    if len(set(int(x) for x in ids)) != len(ids):
        raise _fail(where, "ids", list(ids), "distinct ids")
    _number_list(data, where, "offsets", JOINTS, "tick readings at 0 rad (6 per arm, left first)")
    signs = data["signs"]
    if not isinstance(signs, list | tuple | np.ndarray) or len(signs) != JOINTS:
        raise _fail(where, "signs", signs, f"a list of {JOINTS} values, each 1 or -1")
    for i, x in enumerate(signs):
        if isinstance(x, bool) or x not in (1, -1):
            raise _fail(where, f"signs[{i}]", x, "1 or -1")
    _number_list(data, where, "gripper_closed", ARMS, "tick readings (left, right)")
    _number_list(data, where, "gripper_open", ARMS, "tick readings (left, right)")
    for a in range(ARMS):
        if data["gripper_open"][a] == data["gripper_closed"][a]:
            raise _fail(where, f"gripper_open[{a}]", data["gripper_open"][a], "a reading different from "
                        f"gripper_closed[{a}]")
    tpt = data.get("ticks_per_turn", TICKS_PER_TURN)
    if not isinstance(tpt, int | np.integer) or isinstance(tpt, bool) or tpt <= 0:
        raise _fail(where, "ticks_per_turn", tpt, "a positive integer (4096 for XL330, XM430, STS3215)")
