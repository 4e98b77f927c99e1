"""`vr`: two SteamVR controllers read through pyopenvr (the `openvr` package, `pip install 'x2[vr]'`).

Left hand drives arm 0, right hand arm 1. Per sample (see x2.devices.base): `pose` (2, 7) [x, y, z, qw, qx, qy,
qz] in the standing tracking frame (+y up, metres), `valid` (2,), `clutch` (2,) = trigger, `stick` (2, 2) =
thumbstick or trackpad [x right, y forward] in [-1, 1] (a mobile robot's base), `gripper` (2,) = commanded
opening, toggled by the grip button.

Events (on press, not while held): trigger rising through 0.5 -> "engage" (arm); grip -> "gripper" (arm);
application menu -> "next". The A button (k_EButton_A, e.g. A/X on Touch controllers) has no action, so every
function stays reachable on Vive wands, which have none. Input is SteamVR's legacy controller state: on Valve
Index the legacy binding reports A as the grip bit and B as the menu bit (k_EButton_IndexController_A/B), so
there A toggles the gripper and B is "next".

A pose is published as valid only when the runtime tracks it and it is plausible: a jump larger than
`jump_threshold_m` from the last accepted position is held back (valid 0, drop counted) until `settle_samples`
consecutive samples agree, which rejects one-off tracking glitches yet follows a real shift of the tracking
origin. The teleop mapper re-anchors whenever valid goes 0 -> 1, so neither reaches the robot as a jump.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats
from x2.devices.base import DeviceBase, DeviceError

RESCAN_S = 1.0  # controllers are switched on, paired and re-assigned hands while a session runs
ENGAGE_ON = 0.5
ENGAGE_REARM = 0.4  # hysteresis: a trigger resting near 0.5 must not fire "engage" on every wobble
LEFT, RIGHT = 0, 1
HANDS = ("left", "right")
NO_CONTROLLER = "no controller (switch it on; SteamVR must assign it this hand)"
IDLE_POSE: Floats = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])

# Init error class names (openvr.error_code) -> what the operator should do. Matched by name so a pyopenvr
# release that adds or drops codes cannot break the import of this module.
_NO_RUNTIME = ("no SteamVR runtime found", "install SteamVR and start it with the headset connected")
_NO_HMD = ("SteamVR found no headset", "connect and power on the headset and wait until SteamVR shows it ready")
_NOT_RUNNING = ("SteamVR is not running", "start SteamVR and wait until the headset shows ready")
_BUSY = ("SteamVR is busy", "wait for the firmware update or restart to finish, then try again")
_MISMATCH = ("the installed SteamVR does not match pyopenvr", "update SteamVR (or pin an older openvr package)")
_INIT_ERRORS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("InitError_Init_PathRegistryNotFound", "InitError_Init_InstallationNotFound",
                     "InitError_Init_InstallationCorrupt", "InitError_Init_VRClientDLLNotFound",
                     "InitError_Init_FileNotFound", "InitError_Init_NoConfigPath"), _NO_RUNTIME),
    **dict.fromkeys(("InitError_Init_HmdNotFound", "InitError_Init_HmdNotFoundPresenceFailed",
                     "InitError_Driver_HmdUnknown", "InitError_Driver_HmdDisplayNotFound",
                     "InitError_Driver_NotLoaded", "InitError_Driver_Failed"), _NO_HMD),
    **dict.fromkeys(("InitError_Init_NoServerForBackgroundApp", "InitError_Init_VRServiceStartupFailed",
                     "InitError_Init_VRMonitorNotFound", "InitError_Init_VRMonitorStartupFailed",
                     "InitError_Init_ShuttingDown", "InitError_Init_NotInitialized"), _NOT_RUNNING),
    **dict.fromkeys(("InitError_Init_RebootingBusy", "InitError_Init_FirmwareUpdateBusy",
                     "InitError_Init_FirmwareRecoveryBusy", "InitError_Init_USBServiceBusy",
                     "InitError_Init_Retry"), _BUSY),
    **dict.fromkeys(("InitError_Init_InterfaceNotFound", "InitError_Init_InvalidInterface",
                     "InitError_Init_MismatchedRuntimes", "InitError_Driver_RuntimeOutOfDate"), _MISMATCH),
}


# ---- what x2 uses of pyopenvr (it ships no types); tests/helpers/fake_openvr.py plays the same names ---------------
class _Axis(Protocol):  # VRControllerAxis_t
    @property
    def x(self) -> float: ...
    @property
    def y(self) -> float: ...


class _ControllerState(Protocol):  # VRControllerState_t
    @property
    def rAxis(self) -> Sequence[_Axis]: ...  # [0] thumbstick or trackpad, [1] trigger
    @property
    def ulButtonPressed(self) -> int: ...


class _Matrix34(Protocol):  # HmdMatrix34_t, read as [row][column]
    def __getitem__(self, row: int, /) -> Sequence[float]: ...


class _TrackedPose(Protocol):  # TrackedDevicePose_t
    @property
    def bPoseIsValid(self) -> int: ...
    @property
    def mDeviceToAbsoluteTracking(self) -> _Matrix34: ...


class _VRSystem(Protocol):  # IVRSystem
    def getTrackedDeviceClass(self, deviceIndex: int, /) -> int: ...
    def getControllerRoleForTrackedDeviceIndex(self, deviceIndex: int, /) -> int: ...
    def getDeviceToAbsoluteTrackingPose(self, origin: int, predictedSecondsToPhotonsFromNow: float,
                                        trackedDevicePoseArray: int, /) -> Sequence[_TrackedPose]: ...
    def getControllerState(self, controllerDeviceIndex: int, /) -> tuple[int, _ControllerState]: ...


class _ErrorCodes(Protocol):  # openvr.error_code
    @property
    def OpenVRError(self) -> type[Exception]: ...


class OpenVR(Protocol):
    """The `openvr` module, as far as VRDevice reads it."""

    @property
    def error_code(self) -> _ErrorCodes: ...
    @property
    def VRApplication_Other(self) -> int: ...
    @property
    def TrackingUniverseStanding(self) -> int: ...
    @property
    def k_unMaxTrackedDeviceCount(self) -> int: ...
    @property
    def TrackedDeviceClass_Controller(self) -> int: ...
    @property
    def TrackedControllerRole_LeftHand(self) -> int: ...
    @property
    def TrackedControllerRole_RightHand(self) -> int: ...
    @property
    def k_EButton_Grip(self) -> int: ...
    @property
    def k_EButton_ApplicationMenu(self) -> int: ...
    def init(self, applicationType: int, /) -> _VRSystem: ...
    def shutdown(self) -> None: ...


@dataclass(frozen=True)
class VRConfig:
    rate_hz: float = 90.0  # SteamVR's own tracking rate; polling faster only repeats poses
    jump_threshold_m: float = 0.15  # 13 m/s between two samples at 90 Hz: no hand moves like that
    settle_samples: int = 5

    def __post_init__(self) -> None:
        if not self.rate_hz > 0 or not self.jump_threshold_m > 0 or self.settle_samples < 1:
            raise DeviceError(f"vr: found {self}; allowed: rate_hz > 0, jump_threshold_m > 0, settle_samples >= 1")


def matrix_to_quat(m: npt.ArrayLike) -> Floats:
    """[qw, qx, qy, qz] (unit, qw >= 0) of the rotation in a 3x3 or 3x4 matrix.

    Shepperd's method: divide by the largest of the four |q| candidates, so no branch takes the square root
    of a near-zero number (plain trace formulas lose all precision near 180 degrees)."""
    r = np.asarray(m, dtype=np.float64)[:3, :3]
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    i = int(np.argmax([tr, r[0, 0], r[1, 1], r[2, 2]]))
    if i == 0:
        s = 2.0 * np.sqrt(max(1.0 + tr, 0.0))
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    elif i == 1:
        s = 2.0 * np.sqrt(max(1.0 + r[0, 0] - r[1, 1] - r[2, 2], 0.0))
        q = [(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s]
    elif i == 2:
        s = 2.0 * np.sqrt(max(1.0 - r[0, 0] + r[1, 1] - r[2, 2], 0.0))
        q = [(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(max(1.0 - r[0, 0] - r[1, 1] + r[2, 2], 0.0))
        q = [(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s]
    out: Floats = np.array(q)
    out /= np.linalg.norm(out)  # SteamVR sends float32 matrices that are only nearly orthonormal
    return -out if out[0] < 0 else out


def init_error_sentence(exc: BaseException) -> str:
    """One operator sentence for an exception raised by `openvr.init`."""
    name = type(exc).__name__
    text = " ".join(str(exc).split())
    what, todo = _INIT_ERRORS.get(name, ("SteamVR could not be opened", "restart SteamVR with the headset "
                                                                        "connected and try again"))
    return f"vr: {what} ({name}{': ' + text if text else ''}); {todo}"


@dataclass
class _Hand:
    """What the reader knows about one controller between samples."""

    index: int | None = None  # tracked-device index, None while no controller holds this hand's role
    pose: Floats = field(default_factory=IDLE_POSE.copy)  # last accepted pose, held while invalid
    valid: bool = False
    seen: bool = False  # a pose has been accepted since connect
    settling: list[Floats] = field(default_factory=list)  # consecutive positions away from `pose`
    status: str = ""  # why it is invalid, for the health line
    clutch: float = 0.0
    stick: tuple[float, float] = (0.0, 0.0)  # thumbstick (or trackpad) x right, y forward, in [-1, 1]
    gripper: float = 1.0  # open, so a first grip press closes
    buttons: int | None = None  # None: take the next reading as the baseline, so held buttons fire nothing
    engaged: bool = False


class VRDevice(DeviceBase):
    name = "vr"
    kind = "vr"

    def __init__(self, config: VRConfig | None = None, openvr_module: OpenVR | None = None):
        super().__init__()
        self.config = config or VRConfig()
        self._module = openvr_module
        self._vr: OpenVR | None = None
        self._system: _VRSystem | None = None
        self._hands = [_Hand(), _Hand()]
        self._grip_bit = self._menu_bit = 0
        self._next_t = 0.0
        self._next_scan = 0.0

    @classmethod
    def from_arg(cls, arg: str | None) -> VRDevice:
        if arg:
            raise DeviceError(f"--device: found 'vr:{arg}'; allowed: vr (it takes no argument)")
        return cls()

    # ---- DeviceBase ------------------------------------------------------------------------------
    def _open(self) -> None:
        vr = self._module if self._module is not None else _import_openvr()
        try:
            # Other, not Background: Background refuses to start when SteamVR is not yet running, and Scene
            # would take the compositor from whatever the operator shows in the headset.
            system = vr.init(vr.VRApplication_Other)
        except vr.error_code.OpenVRError as exc:
            with contextlib.suppress(Exception):  # some failures (interface lookup) come after the runtime loaded
                vr.shutdown()
            raise DeviceError(init_error_sentence(exc)) from exc
        self._vr, self._system = vr, system
        self._hands = [_Hand(), _Hand()]
        # Bits of ulButtonPressed; pyopenvr does not export openvr.h's inline ButtonMaskFromId (1 << id).
        self._grip_bit = 1 << int(vr.k_EButton_Grip)
        self._menu_bit = 1 << int(vr.k_EButton_ApplicationMenu)
        now = time.monotonic()
        self._scan(vr, system)
        self._next_scan = now + RESCAN_S
        self._next_t = now
        self._run_reader(self._read_once, "x2-vr")

    def _close(self) -> None:
        vr, self._vr, self._system = self._vr, None, None
        if vr is not None:
            vr.shutdown()

    # ---- reader thread ---------------------------------------------------------------------------
    def _read_once(self) -> None:
        vr, system = self._vr, self._system
        assert vr is not None and system is not None  # set by _open before the reader starts
        delay = self._next_t - time.monotonic()
        if delay > 0 and self._stop.wait(delay):
            return
        now = time.monotonic()
        period = 1.0 / self.config.rate_hz
        self._next_t += period
        if self._next_t < now - period:  # after a stall skip the missed ticks instead of bursting to catch up
            self._next_t = now
        if now >= self._next_scan:
            self._scan(vr, system)
            self._next_scan = now + RESCAN_S
        self._poll(vr, system, now)

    def _scan(self, vr: OpenVR, system: _VRSystem) -> None:
        found: dict[int, int] = {}
        for i in range(vr.k_unMaxTrackedDeviceCount):
            if system.getTrackedDeviceClass(i) != vr.TrackedDeviceClass_Controller:
                continue
            role = system.getControllerRoleForTrackedDeviceIndex(i)
            if role == vr.TrackedControllerRole_LeftHand:
                found.setdefault(LEFT, i)
            elif role == vr.TrackedControllerRole_RightHand:
                found.setdefault(RIGHT, i)
        for arm, hand in enumerate(self._hands):
            index = found.get(arm)
            if index != hand.index:
                hand.index, hand.buttons, hand.engaged = index, None, False

    def _poll(self, vr: OpenVR, system: _VRSystem, now: float) -> None:
        poses = system.getDeviceToAbsoluteTrackingPose(vr.TrackingUniverseStanding, 0, vr.k_unMaxTrackedDeviceCount)
        jumps = 0
        for arm, hand in enumerate(self._hands):
            if hand.index is None:
                hand.valid, hand.clutch, hand.stick, hand.status = False, 0.0, (0.0, 0.0), NO_CONTROLLER
                hand.settling.clear()
                continue
            p = poses[hand.index]
            if p.bPoseIsValid:
                jumps += self._track(hand, p.mDeviceToAbsoluteTracking)
            else:
                hand.valid, hand.status = False, "tracking lost"
                hand.settling.clear()  # agreement must be among consecutive samples
            ok, state = system.getControllerState(hand.index)
            self._read_input(arm, hand, ok, state, now)
        detail = "; ".join(f"{HANDS[a]}: {h.status}" for a, h in enumerate(self._hands) if h.status)
        self._set_detail(detail)
        for _ in range(jumps):  # one drop per rejected controller pose
            self._count_drop()
        self._publish({
            "pose": np.stack([h.pose for h in self._hands]),
            "valid": [float(h.valid) for h in self._hands],
            "clutch": [h.clutch for h in self._hands],
            "stick": [h.stick for h in self._hands],
            "gripper": [h.gripper for h in self._hands],
        }, t=now)

    def _track(self, hand: _Hand, matrix: _Matrix34) -> bool:
        """Accept or hold back one valid pose; True when it was rejected as a jump."""
        m = np.array([[float(matrix[r][c]) for c in range(4)] for r in range(3)])
        pos = m[:, 3]
        thr = self.config.jump_threshold_m
        plausible = not hand.seen or np.linalg.norm(pos - hand.pose[:3]) <= thr
        if not plausible:
            if hand.settling and np.linalg.norm(pos - hand.settling[-1]) > thr:
                hand.settling.clear()
            hand.settling.append(pos)
            if len(hand.settling) < self.config.settle_samples:
                jump = np.linalg.norm(pos - hand.pose[:3])
                hand.valid, hand.status = False, f"jump of {jump:.2f} m rejected, settling"
                return True
        hand.settling.clear()
        q = matrix_to_quat(m)
        if hand.seen and np.dot(q, hand.pose[3:]) < 0:
            q = -q  # stay in the previous hemisphere so filters downstream see no sign flip
        hand.pose = np.concatenate([pos, q])
        hand.valid, hand.seen, hand.status = True, True, ""
        return False

    def _read_input(self, arm: int, hand: _Hand, ok: int, state: _ControllerState, now: float) -> None:
        if not ok:
            # losing input must never keep the robot engaged (or driving); and no edges from a failed read
            hand.clutch, hand.stick = 0.0, (0.0, 0.0)
            return
        trigger = float(np.clip(state.rAxis[1].x, 0.0, 1.0))
        hand.stick = (float(np.clip(state.rAxis[0].x, -1.0, 1.0)), float(np.clip(state.rAxis[0].y, -1.0, 1.0)))
        pressed = int(state.ulButtonPressed)
        hand.clutch = trigger
        previous, hand.buttons = hand.buttons, pressed
        if previous is None:  # first reading of this controller: what is already held is no press
            hand.engaged = trigger >= ENGAGE_ON
            return
        if trigger >= ENGAGE_ON and not hand.engaged:
            hand.engaged = True
            self._emit("engage", arm, now)
        elif trigger < ENGAGE_REARM:
            hand.engaged = False
        down = pressed & ~previous
        if down & self._grip_bit:
            hand.gripper = 1.0 - hand.gripper
            self._emit("gripper", arm, now)
        if down & self._menu_bit:
            self._emit("next", -1, now)


def _import_openvr() -> OpenVR:
    try:
        import openvr
    except ImportError:
        raise DeviceError("vr: the openvr package is not installed; pip install 'x2[vr]'") from None
    except OSError as exc:  # pyopenvr loads libopenvr_api with ctypes at import time
        raise DeviceError(f"vr: the openvr package could not load its native library ({exc}); "
                          "reinstall it with pip install --force-reinstall openvr") from exc
    return cast(OpenVR, openvr)  # pyopenvr ships no types: OpenVR names what x2 reads of it
