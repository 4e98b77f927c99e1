"""The VR device against the real pyopenvr (no SteamVR here) and against a recorded session played by a fake."""

from __future__ import annotations

import inspect
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
import openvr  # a declared test dependency (x2[vr]): an environment without it must fail here, not skip
import pytest
from helpers import fake_openvr as fake_module
from helpers.fake_openvr import CONSTANTS, INIT_ERROR_VALUES, FakeOpenVR, FakeVRSystem, Frame, button_mask, pose_matrix

from x2.devices import DeviceError, make_device
from x2.devices.base import DeviceEvent, DeviceHealth, Sample
from x2.devices.vr import _INIT_ERRORS, VRConfig, VRDevice, matrix_to_quat

# ---- rotation helpers (independent of the device's conversion) ------------------------------------------


def rot(axis, angle: float) -> np.ndarray:
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def axis_angle_quat(axis, angle: float) -> np.ndarray:
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * k])


def quat_to_matrix(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def same_rotation(q1, q2, tol: float) -> bool:
    return min(np.abs(np.asarray(q1) - q2).max(), np.abs(np.asarray(q1) + q2).max()) < tol


# ---- the conversion ----------------------------------------------------------------------------------------
KNOWN = [
    ((1, 0, 0), 0.0),
    ((1, 0, 0), math.pi / 2), ((0, 1, 0), math.pi / 2), ((0, 0, 1), -math.pi / 2),
    ((1, 0, 0), math.pi), ((0, 1, 0), math.pi), ((0, 0, 1), math.pi),  # trace = -1: the trace formula fails
    ((1, 1, 0), math.pi), ((1, -1, 1), math.pi), ((0.2, 0.3, -0.9), math.pi),
    ((0, 0, 1), math.pi - 1e-7), ((1, 2, 3), 2.5),
]


@pytest.mark.parametrize(("axis", "angle"), KNOWN)
def test_matrix_to_quat_known_rotations(axis, angle):
    q = matrix_to_quat(rot(axis, angle))
    assert same_rotation(q, axis_angle_quat(axis, angle), 1e-9)
    assert q[0] >= 0 and abs(np.linalg.norm(q) - 1) < 1e-12
    assert np.allclose(quat_to_matrix(q), rot(axis, angle), atol=1e-9)


def test_matrix_to_quat_random_and_float32():
    rng = np.random.default_rng(0)
    for _ in range(500):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        m = np.hstack([quat_to_matrix(q), rng.normal(size=(3, 1))])  # 3x4 like SteamVR's
        assert same_rotation(matrix_to_quat(m), q, 1e-9)
        out = matrix_to_quat(m.astype(np.float32))  # only nearly orthonormal, as the runtime sends it
        assert same_rotation(out, q, 1e-6) and abs(np.linalg.norm(out) - 1) < 1e-12


# ---- the real pyopenvr, no SteamVR -------------------------------------------------------------------------
def test_real_openvr_without_steamvr_is_one_sentence():
    dev = VRDevice()
    with pytest.raises(DeviceError) as err:
        dev.connect()
    msg = str(err.value)
    assert msg.startswith("vr: ") and "\n" not in msg and "SteamVR" in msg and "(InitError_" in msg
    if not openvr.isRuntimeInstalled():
        assert msg == ("vr: no SteamVR runtime found (InitError_Init_PathRegistryNotFound); "
                       "install SteamVR and start it with the headset connected")
    assert not dev.health().connected
    dev.close()


def test_registry_builds_the_vr_device():
    assert isinstance(make_device("vr"), VRDevice)
    with pytest.raises(DeviceError, match="vr:usb"):
        make_device("vr:usb")


def test_missing_openvr_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "openvr", None)
    with pytest.raises(DeviceError, match=r"^vr: the openvr package is not installed; pip install 'x2\[vr\]'$"):
        VRDevice().connect()


@pytest.mark.parametrize(("error", "says"), [
    ("InitError_Init_PathRegistryNotFound", "no SteamVR runtime found"),
    ("InitError_Init_InstallationNotFound", "no SteamVR runtime found"),
    ("InitError_Init_HmdNotFound", "SteamVR found no headset"),
    ("InitError_Init_NoServerForBackgroundApp", "SteamVR is not running"),
    ("InitError_Init_InterfaceNotFound", "the installed SteamVR does not match pyopenvr"),
    ("InitError_Init_FirmwareUpdateBusy", "SteamVR is busy"),
    ("InitError_Driver_HmdInUse", "SteamVR could not be opened"),
])
def test_init_errors_become_one_sentence(error, says):
    fake = FakeOpenVR([], init_error=error)
    dev = VRDevice(openvr_module=fake)
    with pytest.raises(DeviceError) as err:
        dev.connect()
    msg = str(err.value)
    assert msg.startswith(f"vr: {says} ({error}); ") and "\n" not in msg
    assert fake.fake_init_calls == [CONSTANTS["VRApplication_Other"]]
    assert not dev.health().connected
    assert "error_code" in fake.fake_used
    assert_used_names_are_real(fake)


def test_every_mapped_init_error_exists_in_pyopenvr():
    assert [name for name in _INIT_ERRORS if not hasattr(openvr.error_code, name)] == []


def test_config_is_checked():
    with pytest.raises(DeviceError, match="settle_samples"):
        VRConfig(settle_samples=0)


# ---- a recorded session ----------------------------------------------------------------------------------
DT = 0.01  # recorded at 100 Hz, polled at 90 Hz: the device never sees the recording's clock
END = 2.6
CENTER = (np.array([-0.25, 1.0, -0.35]), np.array([0.25, 1.0, -0.35]))
LEFT_R = rot((1, 0, 0), math.pi / 2)
MENU, A_BUTTON, GRIP = (0.5, 0.6), (0.7, 0.8), (0.8, 0.9)
DROPOUT = (1.1, 1.3)  # right controller occluded
GLITCH = (1.8, 1.83)  # right pose 0.5 m off for 30 ms: 2-3 samples at 90 Hz, fewer than settle_samples
SHIFT_AT = 2.2  # the tracking origin moves 0.3 m for good (both controllers)
SHIFT = np.array([0.0, 0.3, 0.0])


def within(t: float, span: tuple[float, float]) -> bool:
    return span[0] <= t < span[1]


def right_trigger(t: float) -> float:
    if t < 0.1:
        return 0.0
    if t < 0.4:
        return 0.7 * (t - 0.1) / 0.3  # rises through 0.5 once: engage
    if within(t, (0.95, 1.05)):
        return 0.45  # below 0.5 but not released: crossing back up is no new engage
    if within(t, (1.5, 1.6)):
        return 0.0  # released: the next press engages again
    return 0.7


@dataclass
class Truth:
    pos: np.ndarray  # (2, 3)
    quat: np.ndarray  # (2, 4)


def recording() -> tuple[list[Frame], list[Truth]]:
    frames, truth = [], []
    for i in range(round(END / DT) + 1):
        t = round(i * DT, 6)
        theta = math.pi * t  # one circle in 2 s, r = 0.1 m: 0.31 m/s
        shift = SHIFT if t >= SHIFT_AT else np.zeros(3)
        left = CENTER[0] + shift
        right = CENTER[1] + 0.1 * np.array([math.cos(theta), 0.0, math.sin(theta)]) + shift
        right_r = rot((0, 1, 0), theta)
        seen_right = right + (np.array([0.5, 0.0, 0.0]) if within(t, GLITCH) else 0.0)
        buttons_left = (button_mask(CONSTANTS["k_EButton_ApplicationMenu"]) if within(t, MENU) else 0) | (
            button_mask(CONSTANTS["k_EButton_A"]) if within(t, A_BUTTON) else 0)
        buttons_right = button_mask(CONSTANTS["k_EButton_Grip"]) if within(t, GRIP) else 0
        frames.append(Frame(
            t=t,
            matrix=(pose_matrix(left, LEFT_R), pose_matrix(seen_right, right_r)),
            valid=(True, not within(t, DROPOUT)),
            trigger=(0.0, right_trigger(t)),
            buttons=(buttons_left, buttons_right),
        ))
        truth.append(Truth(np.stack([left, right]), np.stack([axis_angle_quat((1, 0, 0), math.pi / 2),
                                                              axis_angle_quat((0, 1, 0), theta)])))
    return frames, truth


@dataclass
class Run:
    fake: FakeOpenVR
    frames: list[Frame]
    truth: list[Truth]
    samples: list[Sample]
    events: list[DeviceEvent]
    health_mid: DeviceHealth
    health_dropout: DeviceHealth
    health_end: DeviceHealth
    config: VRConfig

    def frame_t(self, k: int) -> float:
        return self.frames[self.fake.fake_served[k]].t

    def where(self, pred) -> list[int]:
        return [k for k in range(len(self.samples)) if pred(self.frame_t(k))]


def wait_for(fake: FakeOpenVR, t: float) -> None:
    assert fake.fake_t0 is not None
    time.sleep(max(0.0, fake.fake_t0 + t - time.monotonic()))


@pytest.fixture(scope="module")
def run() -> Run:
    frames, truth = recording()
    fake = FakeOpenVR(frames)
    config = VRConfig()
    dev = VRDevice(config, openvr_module=fake)
    with dev:
        wait_for(fake, 1.2)
        health_dropout = dev.health()
        wait_for(fake, 1.6)
        health_mid = dev.health()
        wait_for(fake, END + 0.1)
        dev.latest()  # re-raises a reader failure
    samples, events = dev.drain(), dev.events()
    return Run(fake, frames, truth, samples, events, health_mid, health_dropout, dev.health(), config)


def assert_used_names_are_real(fake: FakeOpenVR) -> None:
    for name in fake.fake_used:
        real = getattr(openvr, name)  # every name the device read from the fake exists in pyopenvr...
        if name in CONSTANTS:
            assert CONSTANTS[name] == real, name  # ...with the same value
        elif inspect.isfunction(real):
            fake_params = list(inspect.signature(getattr(FakeOpenVR, name)).parameters)[1:]
            assert fake_params == list(inspect.signature(real).parameters), name


def test_fake_mirrors_the_real_openvr(run):
    expected = {"init", "shutdown", "VRApplication_Other", "k_EButton_Grip", "k_unMaxTrackedDeviceCount"}
    assert expected <= run.fake.fake_used
    assert_used_names_are_real(run.fake)
    for name, value in CONSTANTS.items():
        assert getattr(openvr, name) == value, name
    for name, method in vars(FakeVRSystem).items():
        if not name.startswith("_"):
            real_params = list(inspect.signature(getattr(openvr.IVRSystem, name)).parameters)
            assert list(inspect.signature(method).parameters) == real_params, name
    for name, value in INIT_ERROR_VALUES.items():
        real = openvr.error_code.InitError.error_index[value]
        assert real.__name__ == name and issubclass(real, openvr.error_code.OpenVRError)
        assert issubclass(getattr(fake_module.error_code, name), fake_module.error_code.OpenVRError)
    real_pose_fields = {f[0] for f in openvr.TrackedDevicePose_t._fields_}
    assert set(fake_module._Pose.__dataclass_fields__) <= real_pose_fields
    real_state_fields = [f[0] for f in openvr.VRControllerState_t._fields_]
    assert list(fake_module._ControllerState.__dataclass_fields__) == real_state_fields


def test_every_poll_published_one_sample(run):
    assert len(run.samples) == len(run.fake.fake_served) > 200
    assert [s.seq for s in run.samples] == list(range(len(run.samples)))
    for s in run.samples:
        assert s.values["pose"].shape == (2, 7) and s.values["valid"].shape == (2,)
        assert s.values["clutch"].shape == (2,) and s.values["gripper"].shape == (2,)


def test_poses_match_the_recording(run):
    settle = run.config.settle_samples
    settling = set(run.where(lambda t: t >= SHIFT_AT)[: settle - 1])
    normal = [k for k in run.where(lambda t: not within(t, DROPOUT) and not within(t, GLITCH)) if k not in settling]
    assert len(normal) > 150
    for k in normal:
        pose, valid = run.samples[k].values["pose"], run.samples[k].values["valid"]
        truth = run.truth[run.fake.fake_served[k]]
        assert valid.tolist() == [1.0, 1.0], (k, run.frame_t(k))
        assert np.allclose(pose[:, :3], truth.pos, atol=1e-6)
        for arm in range(2):
            assert same_rotation(pose[arm, 3:], truth.quat[arm], 1e-6)
    # the quaternion keeps its hemisphere from sample to sample
    quats = np.array([s.values["pose"][1, 3:] for s in run.samples])
    assert (np.sum(quats[1:] * quats[:-1], axis=1) > 0).all()


def test_tracking_dropout_holds_the_last_pose(run):
    lost = run.where(lambda t: within(t, DROPOUT))
    assert len(lost) > 10
    held = run.samples[lost[0] - 1].values["pose"][1]
    for k in lost:
        assert run.samples[k].values["valid"].tolist() == [1.0, 0.0]
        assert np.array_equal(run.samples[k].values["pose"][1], held)
    assert run.samples[lost[-1] + 1].values["valid"].tolist() == [1.0, 1.0]  # 6 cm later: within the threshold
    assert "right: tracking lost" in run.health_dropout.detail


def test_glitch_is_rejected_and_counted(run):
    glitch = run.where(lambda t: within(t, GLITCH))
    assert 1 <= len(glitch) < run.config.settle_samples
    held = run.samples[glitch[0] - 1].values["pose"][1]
    for k in glitch:
        assert run.samples[k].values["valid"][1] == 0.0
        assert np.array_equal(run.samples[k].values["pose"][1], held)
    assert run.samples[glitch[-1] + 1].values["valid"][1] == 1.0
    for s in run.samples:  # never published as valid anywhere near the glitch
        if s.values["valid"][1]:
            assert s.values["pose"][1, 0] < CENTER[1][0] + 0.2
    assert run.health_end.drops == len(glitch) + 2 * (run.config.settle_samples - 1)


def test_tracking_origin_shift_is_accepted_after_settling(run):
    settle = run.config.settle_samples
    after = run.where(lambda t: t >= SHIFT_AT)
    before = run.samples[after[0] - 1].values["pose"]
    for k in after[: settle - 1]:
        assert run.samples[k].values["valid"].tolist() == [0.0, 0.0]
        assert np.array_equal(run.samples[k].values["pose"], before)
    for k in after[settle - 1:]:
        s = run.samples[k]
        assert s.values["valid"].tolist() == [1.0, 1.0]
        assert np.allclose(s.values["pose"][:, :3], run.truth[run.fake.fake_served[k]].pos, atol=1e-6)
    assert np.allclose(run.samples[after[settle - 1]].values["pose"][:, 1], 1.3, atol=1e-6)


def test_no_jump_reaches_a_valid_stream(run):
    """What the teleop mapper relies on: between two valid samples with no invalid one between, no jump."""
    for arm in range(2):
        last = None
        for s in run.samples:
            if not s.values["valid"][arm]:
                last = None
                continue
            pos = s.values["pose"][arm, :3]
            if last is not None:
                assert np.linalg.norm(pos - last) <= run.config.jump_threshold_m
            last = pos


def test_clutch_gripper_and_events(run):
    for k, s in enumerate(run.samples):
        frame = run.frames[run.fake.fake_served[k]]
        assert s.values["clutch"][0] == 0.0
        assert abs(s.values["clutch"][1] - frame.trigger[1]) < 1e-6
        assert s.values["gripper"][0] == 1.0
        assert s.values["gripper"][1] == (0.0 if frame.t >= GRIP[0] else 1.0)
    assert Counter((e.kind, e.arm) for e in run.events) == {("engage", 1): 2, ("gripper", 1): 1, ("next", -1): 1}
    t_of = {s.t: run.frame_t(k) for k, s in enumerate(run.samples)}  # events carry their sample's time
    engage = [t_of[e.t] for e in run.events if e.kind == "engage"]
    assert 0.1 + 0.3 * 5 / 7 <= engage[0] < 0.4 and 1.6 <= engage[1] < 1.65
    assert [within(t_of[e.t], GRIP) for e in run.events if e.kind == "gripper"] == [True]
    assert [within(t_of[e.t], MENU) for e in run.events if e.kind == "next"] == [True]


def test_health_and_close(run):
    assert run.health_mid.connected
    assert 0.85 * run.config.rate_hz <= run.health_mid.rate_hz <= 1.05 * run.config.rate_hz
    assert run.health_mid.age_s < 0.5  # ~45 periods: the reader thread may wait for a busy core
    assert not run.health_end.connected
    assert run.fake.fake_shutdowns == 1
    assert run.fake.fake_init_calls == [CONSTANTS["VRApplication_Other"]]


def test_missing_controller_is_found_by_the_rescan():
    held = button_mask(CONSTANTS["k_EButton_Grip"], CONSTANTS["k_EButton_ApplicationMenu"])
    # Trigger and buttons already held when a controller is first seen are a baseline, not presses.
    still = [Frame(0.0, (pose_matrix(CENTER[0], np.eye(3)), pose_matrix(CENTER[1], np.eye(3))), (True, True),
                   (0.8, 0.9), (held, held))]
    fake = FakeOpenVR(still, controllers=(False, True))
    with VRDevice(openvr_module=fake) as dev:
        time.sleep(0.2)
        assert dev.latest().values["valid"].tolist() == [0.0, 1.0]
        assert dev.health().detail.startswith("left: no controller")
        fake.fake_controllers[0] = True
        while dev.latest().values["valid"][0] == 0.0:  # picked up by a rescan (never: the test timeout ends it)
            time.sleep(0.01)
        latest = dev.latest().values
        assert np.allclose(latest["pose"][0], [*CENTER[0], 1, 0, 0, 0], atol=1e-6)
        assert np.allclose(latest["clutch"], [0.8, 0.9]) and latest["gripper"].tolist() == [1.0, 1.0]
        assert dev.health().detail == ""
    assert dev.events() == [] and fake.fake_shutdowns == 1


def test_thumbsticks_are_published_per_hand():
    """rAxis[0] (a thumbstick or trackpad: x right, y forward) of each controller is the sample's `stick` row, the
    value a mobile robot's base is driven by (x2/teleop/mapping.py)."""
    pushed = [Frame(0.0, (pose_matrix(CENTER[0], np.eye(3)), pose_matrix(CENTER[1], np.eye(3))), (True, True),
                    (0.0, 0.0), (0, 0), ((-0.5, 0.75), (0.25, 0.0)))]
    with VRDevice(openvr_module=FakeOpenVR(pushed)) as dev:
        while dev.latest() is None:  # (the first poll; a hang is the test timeout's)
            time.sleep(0.01)
        assert np.allclose(dev.latest().values["stick"], [[-0.5, 0.75], [0.25, 0.0]])
