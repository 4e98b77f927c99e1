"""A stand-in for the `openvr` module (pyopenvr) that plays a recorded controller session.

It implements only the boundary x2.devices.vr uses, under the real module's names and values (tests compare
them with the installed pyopenvr). Frames are played by wall time since `init`, so the device's reader thread
sees them the way it would see live tracking. Attributes starting with `fake_` are for tests only; every other
public name the device reads is logged in `fake_used` so a test can check it exists in the real module.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

# ---- constants: the real names and values ----------------------------------------------------------------
CONSTANTS = {
    "k_unMaxTrackedDeviceCount": 64,
    "VRApplication_Other": 0,
    "VRApplication_Background": 3,
    "TrackingUniverseStanding": 1,
    "TrackedDeviceClass_Invalid": 0,
    "TrackedDeviceClass_HMD": 1,
    "TrackedDeviceClass_Controller": 2,
    "TrackedDeviceClass_TrackingReference": 4,
    "TrackedControllerRole_Invalid": 0,
    "TrackedControllerRole_LeftHand": 1,
    "TrackedControllerRole_RightHand": 2,
    "k_EButton_ApplicationMenu": 1,
    "k_EButton_Grip": 2,
    "k_EButton_A": 7,
}


# ---- openvr.error_code -----------------------------------------------------------------------------------
class OpenVRError(Exception):
    pass


class ErrorCode(OpenVRError):
    def __init__(self, error_value: int, message: str = ""):
        super().__init__(message)
        self.error_value = error_value


class InitError(ErrorCode):
    pass


INIT_ERROR_VALUES = {  # EVRInitError values
    "InitError_Init_InstallationNotFound": 100,
    "InitError_Init_HmdNotFound": 108,
    "InitError_Init_PathRegistryNotFound": 110,
    "InitError_Init_NoServerForBackgroundApp": 121,
    "InitError_Init_InterfaceNotFound": 105,
    "InitError_Init_FirmwareUpdateBusy": 138,
    "InitError_Driver_HmdInUse": 205,
}
error_code = SimpleNamespace(
    OpenVRError=OpenVRError, ErrorCode=ErrorCode, InitError=InitError,
    **{name: type(name, (InitError,), {}) for name in INIT_ERROR_VALUES},
)


# ---- a recorded session ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    """The state of both controllers from time `t` (s after init) until the next frame."""

    t: float
    matrix: tuple[np.ndarray, np.ndarray]  # (left, right) 3x4 device-to-standing transforms
    valid: tuple[bool, bool]
    trigger: tuple[float, float]
    buttons: tuple[int, int]  # ulButtonPressed bits
    stick: tuple[tuple[float, float], tuple[float, float]] = ((0.0, 0.0), (0.0, 0.0))  # rAxis[0] (x, y) per hand


def button_mask(*button_ids: int) -> int:
    return sum(1 << b for b in button_ids)


def pose_matrix(position: Sequence[float], rotation: np.ndarray) -> np.ndarray:
    return np.hstack([np.asarray(rotation, dtype=float), np.asarray(position, dtype=float).reshape(3, 1)])


@dataclass
class _Pose:  # the fields of TrackedDevicePose_t the device may read
    mDeviceToAbsoluteTracking: list[list[float]]
    bPoseIsValid: int
    bDeviceIsConnected: int = 1
    eTrackingResult: int = 200  # TrackingResult_Running_OK


@dataclass
class _ControllerState:  # VRControllerState_t
    unPacketNum: int
    ulButtonPressed: int
    ulButtonTouched: int
    rAxis: list[SimpleNamespace] = field(default_factory=list)


# Device slots as SteamVR numbers them: headset first, then base stations, then controllers.
HMD, BASE_STATIONS, LEFT_INDEX, RIGHT_INDEX = 0, (1, 2), 3, 4


class FakeVRSystem:
    """The IVRSystem methods the device calls, with the real parameter names."""

    def __init__(self, vr: FakeOpenVR):
        self._vr = vr

    def getTrackedDeviceClass(self, deviceIndex: int) -> int:
        return self._vr._device_class(deviceIndex)

    def getControllerRoleForTrackedDeviceIndex(self, deviceIndex: int) -> int:
        return self._vr._role(deviceIndex)

    def getDeviceToAbsoluteTrackingPose(self, origin: int, predictedSecondsToPhotonsFromNow: float,
                                        trackedDevicePoseArray: object) -> list[_Pose]:
        if origin != CONSTANTS["TrackingUniverseStanding"] or trackedDevicePoseArray != 64:
            raise AssertionError(f"unexpected pose query {origin=}, {trackedDevicePoseArray=}")
        return self._vr._poses()

    def getControllerState(self, controllerDeviceIndex: int) -> tuple[int, _ControllerState]:
        return self._vr._controller_state(controllerDeviceIndex)


class FakeOpenVR:
    """Use as `VRDevice(openvr_module=FakeOpenVR(frames))`."""

    def __init__(self, frames: Sequence[Frame], controllers: tuple[bool, bool] = (True, True),
                 init_error: str | None = None):
        self.fake_frames = list(frames)
        self._times = [f.t for f in self.fake_frames]
        self.fake_controllers = list(controllers)  # (left present, right present); tests may change it live
        self.fake_init_error = init_error
        self.fake_init_calls: list[int] = []
        self.fake_shutdowns = 0
        self.fake_served: list[int] = []  # frame index behind each pose query, in order
        self.fake_t0: float | None = None
        self.fake_used: set[str] = set()
        self._latched = 0
        self._lock = threading.Lock()

    def __getattribute__(self, name: str):
        if not name.startswith(("_", "fake_")):
            object.__getattribute__(self, "fake_used").add(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str):
        if name in CONSTANTS:
            return CONSTANTS[name]
        raise AttributeError(f"fake openvr has no {name!r}")

    error_code = error_code

    # ---- module functions ----
    def init(self, applicationType: int, pStartupInfo: str | None = None) -> FakeVRSystem:
        self.fake_init_calls.append(applicationType)
        if self.fake_init_error is not None:
            name = self.fake_init_error
            raise getattr(error_code, name)(INIT_ERROR_VALUES[name])
        self.fake_t0 = time.monotonic()
        return FakeVRSystem(self)

    def shutdown(self) -> None:
        self.fake_shutdowns += 1

    # ---- playback ----
    def _frame_now(self) -> int:
        assert self.fake_t0 is not None, "VRSystem used before init"
        return max(bisect.bisect_right(self._times, time.monotonic() - self.fake_t0) - 1, 0)

    def _slot(self, index: int) -> int | None:
        """Which controller (0 left, 1 right) sits in a device slot, if present."""
        for arm, slot in enumerate((LEFT_INDEX, RIGHT_INDEX)):
            if index == slot and self.fake_controllers[arm]:
                return arm
        return None

    def _device_class(self, index: int) -> int:
        if index == HMD:
            return CONSTANTS["TrackedDeviceClass_HMD"]
        if index in BASE_STATIONS:
            return CONSTANTS["TrackedDeviceClass_TrackingReference"]
        if self._slot(index) is not None:
            return CONSTANTS["TrackedDeviceClass_Controller"]
        return CONSTANTS["TrackedDeviceClass_Invalid"]

    def _role(self, index: int) -> int:
        arm = self._slot(index)
        if arm is None:
            return CONSTANTS["TrackedControllerRole_Invalid"]
        return CONSTANTS["TrackedControllerRole_RightHand" if arm else "TrackedControllerRole_LeftHand"]

    def _poses(self) -> list[_Pose]:
        with self._lock:
            i = self._latched = self._frame_now()
            self.fake_served.append(i)
        frame = self.fake_frames[i]
        out = [_Pose(np.zeros((3, 4)).tolist(), 0, 0, 1) for _ in range(64)]  # TrackingResult_Uninitialized
        for arm, slot in enumerate((LEFT_INDEX, RIGHT_INDEX)):
            if not self.fake_controllers[arm]:
                continue
            if frame.valid[arm]:
                # float32 like the runtime's HmdMatrix34_t
                out[slot] = _Pose(frame.matrix[arm].astype(np.float32).astype(float).tolist(), 1)
            else:  # the runtime leaves stale or zero matrices in invalid poses
                out[slot] = _Pose(np.zeros((3, 4)).tolist(), 0, 1, 101)  # TrackingResult_Calibrating_OutOfRange
        return out

    def _controller_state(self, index: int) -> tuple[int, _ControllerState]:
        arm = self._slot(index)
        if arm is None:
            return 0, _ControllerState(0, 0, 0, [SimpleNamespace(x=0.0, y=0.0) for _ in range(5)])
        # A frame is one snapshot: buttons come from the frame the last pose query latched.
        frame = self.fake_frames[self._latched]
        axes = [SimpleNamespace(x=0.0, y=0.0) for _ in range(5)]
        axes[1].x = float(np.float32(frame.trigger[arm]))
        axes[0].x, axes[0].y = (float(np.float32(v)) for v in frame.stick[arm])
        return 1, _ControllerState(self._latched, frame.buttons[arm], frame.buttons[arm], axes)
