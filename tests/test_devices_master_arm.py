"""The master-arm device through the unmodified vendor SDKs; only the serial line is fake (a pty)."""

from __future__ import annotations

import errno
import json
import math
import sys
import time
from collections.abc import Callable

import numpy as np
import pytest
import serial
from helpers.fake_servo_bus import FakeDynamixelBus, FakeFeetechBus

from x2.devices import DeviceError, make_device
from x2.devices.calibration import Calibration, calibration_path, device_id_for_port
from x2.devices.master_arm import PING_ATTEMPTS, MasterArmConfig, MasterArmDevice, _id_list, _port_error

IDS = tuple(range(1, 15))
RAD_PER_TICK = 2 * math.pi / 4096


# How long a wait_for gives a condition before failing: it returns as soon as the condition holds, so
# this only bounds how long a real failure takes to show. Generous, because on a loaded machine the
# reader thread, the fake bus thread and the test share cores with everything else.
WAIT_S = 15.0


def wait_for[T](check: Callable[[], T], timeout: float = WAIT_S, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_ticks(dev, ticks: dict[int, int]) -> np.ndarray:
    """The joints of the first sample whose raw ticks are the ones just set on the bus."""
    want = np.array([ticks[i] for i in IDS], dtype=np.float64)

    def fresh():
        s = dev.latest()
        return s if s is not None and np.array_equal(s.values["ticks"], want) else None

    return wait_for(fresh, what=f"ticks {want}").values["joints"]


def ramp() -> dict[int, int]:
    ticks = {i: 2048 + k * 100 for k, i in enumerate(IDS)}
    ticks[7], ticks[14] = 2560, 3072  # grippers: half open, fully open
    return ticks


@pytest.fixture(autouse=True)
def calibration_dir(tmp_path, monkeypatch):
    # Keep a stray ./.x2/calibration from changing the mapping under test.
    monkeypatch.setenv("X2_CALIBRATION_DIR", str(tmp_path / "calibration"))
    return tmp_path / "calibration"


@pytest.fixture
def bus():
    with FakeDynamixelBus(IDS) as b:
        yield b


def pose_calibration(device_id: str) -> tuple[Calibration, dict[int, int], np.ndarray]:
    ticks = ramp()
    pose = np.linspace(-1.2, 1.1, 12)
    signs = (1, -1, 1, 1, -1, 1, -1, 1, 1, 1, -1, 1)
    cal = Calibration.from_pose(device_id, IDS, [ticks[i] for i in IDS], pose, signs,
                                gripper_closed=(3000, 1000), gripper_open=(2000, 2000))
    return cal, ticks, pose


# ---- mapping ----------------------------------------------------------------------------------------
def test_default_mapping_through_the_registry(bus):
    ticks = ramp()
    bus.set_ticks(ticks)
    with make_device(f"master-arm:{bus.path}") as dev:
        assert (dev.name, dev.kind) == ("master-arm", "master-arm")
        joints = wait_ticks(dev, ticks)
        expected = [(ticks[i] - 2048) * RAD_PER_TICK for i in (1, 2, 3, 4, 5, 6)] + [0.5]
        expected += [(ticks[i] - 2048) * RAD_PER_TICK for i in (8, 9, 10, 11, 12, 13)] + [1.0]
        np.testing.assert_allclose(joints, expected, atol=1e-12)
        assert joints.shape == (14,) and dev.latest().values["ticks"].shape == (14,)

        # Grippers clip to [0, 1]; multi-turn / negative readings pass through as signed int32.
        ticks |= {7: 2048, 14: 5000, 1: -1000, 8: 6144}
        bus.set_ticks(ticks)
        joints = wait_ticks(dev, ticks)
        assert joints[6] == 0.0 and joints[13] == 1.0
        assert joints[0] == pytest.approx(-3048 * RAD_PER_TICK) and joints[7] == pytest.approx(math.pi * 2)


def test_registry_accepts_an_explicit_sdk(bus):
    with make_device(f"master-arm:dynamixel:{bus.path}") as dev:
        assert wait_for(dev.latest, what="a sample").values["joints"].shape == (14,)


def test_feetech_bus(calibration_dir):
    with FakeFeetechBus(IDS) as fb:
        ticks = ramp() | {2: -100, 9: 4095}
        fb.set_ticks(ticks)
        dev = make_device(f"master-arm:feetech:{fb.path}")
        assert dev.config.baudrate == 1_000_000
        with dev:
            joints = wait_ticks(dev, ticks)
        assert joints[1] == pytest.approx(-2148 * RAD_PER_TICK) and joints[8] == pytest.approx(2047 * RAD_PER_TICK)
        assert (joints[6], joints[13]) == (0.5, 1.0)


def test_calibration_file_maps_the_pose(bus, tmp_path):
    cal, ticks, pose = pose_calibration("leader-a")
    path = cal.save(tmp_path / "leader-a.json")
    bus.set_ticks(ticks)
    with MasterArmDevice(MasterArmConfig(port=bus.path, calibration=path)) as dev:
        joints = wait_ticks(dev, ticks)
        np.testing.assert_allclose(joints[[0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12]], pose, atol=1e-12)
        # Left gripper is mounted reversed (closed 3000 > open 2000); right closes at 1000.
        assert joints[6] == pytest.approx(0.44) and joints[13] == pytest.approx(1.0)

        # A sign of -1 turns the robot joint the other way.
        moved = ticks | {1: ticks[1] + 100, 2: ticks[2] + 100}
        bus.set_ticks(moved)
        joints = wait_ticks(dev, moved)
        assert joints[0] == pytest.approx(pose[0] + 100 * RAD_PER_TICK)
        assert joints[1] == pytest.approx(pose[1] - 100 * RAD_PER_TICK)


def test_calibration_found_by_device_id(bus, calibration_dir):
    device_id = device_id_for_port(bus.path)
    cal, ticks, pose = pose_calibration(device_id)
    cal.save(calibration_path(device_id))
    assert calibration_path(device_id).parent == calibration_dir
    bus.set_ticks(ticks)
    with MasterArmDevice(MasterArmConfig(port=bus.path)) as dev:
        assert dev.device_id == device_id and dev.calibration == cal
        joints = wait_ticks(dev, ticks)
    np.testing.assert_allclose(joints[[0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12]], pose, atol=1e-12)


def test_calibration_round_trip(tmp_path):
    cal, _, _ = pose_calibration("FT8ABC12")
    path = cal.save(tmp_path / "sub" / "FT8ABC12.json")
    assert Calibration.load(path) == cal
    assert sorted(p.name for p in path.parent.iterdir()) == ["FT8ABC12.json"]  # no temp file left behind
    assert json.loads(path.read_text())["signs"] == list(cal.signs)
    assert Calibration.default("x").to_joints([2048] * 14).tolist() == [0.0] * 14


@pytest.mark.parametrize(("change", "message"), [
    ({"signs": [1, 1, 1, 0] + [1] * 8}, "signs[3]: found 0; allowed: 1 or -1"),
    ({"ids": [1, 2, 3]}, "ids: found [1, 2, 3]; allowed: a list of 14 servo ids"),
    ({"offsets": [2048] * 11 + ["x"]}, "offsets[11]: found 'x'; allowed: a finite number"),
    ({"gripper_open": [2048, 3072]}, "gripper_open[0]: found 2048"),
    ({"colour": "red"}, "colour: found 'an unknown field'; allowed: device_id, ids"),
    ({"device_id": None}, "device_id: found None; allowed: a non-empty string"),
])
def test_malformed_calibration_is_one_line(tmp_path, change, message):
    data = json.loads(Calibration.default("x").save(tmp_path / "x.json").read_text())
    data.update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DeviceError) as info:
        Calibration.load(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_unreadable_calibration_files(tmp_path, bus):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(DeviceError, match=r"bad.json: line 1: found invalid JSON"):
        Calibration.load(bad)
    missing = MasterArmDevice(MasterArmConfig(port=bus.path, calibration=tmp_path / "nope.json"))
    with pytest.raises(DeviceError, match=r"nope.json: calibration file not found"):
        missing.connect()
    data = json.loads(Calibration.default("x").save(tmp_path / "x.json").read_text())
    del data["offsets"]
    bad.write_text(json.dumps(data))
    with pytest.raises(DeviceError, match=r"bad.json: offsets: found nothing; allowed: device_id"):
        Calibration.load(bad)


# ---- health and failures ----------------------------------------------------------------------------
def test_health_rate_drops_and_silent_servos(bus):
    with make_device(f"master-arm:{bus.path}") as dev:
        time.sleep(1.2)
        h = dev.health()
        reads = dev.latest().seq + 1
        # The rate is measured (reads in the last second), never above the cap. Drops: a read whose answer
        # came after the SDK's timeout is a drop, and on a busy machine an answer is late now and then;
        # a healthy bus drops almost none, a broken read path fails most reads.
        assert h.connected and 0 < h.rate_hz <= 1.1 * MasterArmConfig().max_rate_hz
        assert h.drops <= max(2, reads // 20), (h.drops, reads)
        assert bus.path in h.detail

        bus.remove(3, 9)
        named = wait_for(lambda: "stopped answering" in dev.health().detail and dev.health(),
                         what="the detail to name the silent servos")
        assert named.detail.startswith("servos 3, 9 stopped answering on ") and named.drops > 0
        # Still failing, still counted.
        wait_for(lambda: dev.health().drops > named.drops, what="more drops")

        bus.restore()
        seq = dev.latest().seq
        wait_for(lambda: dev.latest().seq > seq + 5, what="reads to recover")
        assert bus.path in dev.health().detail and "stopped" not in dev.health().detail
        assert dev.health().age_s < 1.0  # fresh samples again


def test_a_lost_or_late_answer_is_a_drop_not_a_silent_servo(bus):
    ticks = ramp()
    bus.set_ticks(ticks)
    with make_device(f"master-arm:{bus.path}") as dev:
        wait_ticks(dev, ticks)
        pings = sum(bus.pings.values())
        for trouble in (lambda: bus.lose(4), lambda: bus.answer_late(6, 0.3)):
            drops, seq = dev.health().drops, dev.latest().seq
            trouble()
            wait_for(lambda d=drops: dev.health().drops > d, what="the failed read to count as a drop")
            wait_for(lambda s=seq: dev.latest().seq > s + 5, what="reads to go on")
        moved = ticks | {4: 1000, 6: 3000}
        bus.set_ticks(moved)
        wait_ticks(dev, moved)  # the late answer did not leave stale readings behind
        assert bus.path in dev.health().detail and "stopped" not in dev.health().detail
        # One failed read is no reason to look for silent servos: nothing was pinged.
        assert sum(bus.pings.values()) == pings


def test_missing_port(tmp_path):
    port = str(tmp_path / "ttyUSB7")
    with pytest.raises(DeviceError) as info:
        MasterArmDevice.from_arg(port).connect()
    assert str(info.value) == (f"master-arm: serial port {port} not found; plug the leader arm in or pass "
                               "--device master-arm:PORT")


def test_no_servos_answering_names_port_baud_and_ids():
    with FakeDynamixelBus([]) as empty:
        with pytest.raises(DeviceError) as info:
            MasterArmDevice.from_arg(empty.path).connect()
        assert f"no servos answered on {empty.path} at 57600 baud (pinged IDs 1-14)" in str(info.value)
        # Nothing answering is power, baud rate or protocol: no retries to wait through.
        assert empty.pings == {i: 1 for i in IDS}


def test_some_servos_missing_on_open(bus):
    bus.remove(5, 12)
    dev = MasterArmDevice.from_arg(bus.path)
    with pytest.raises(DeviceError, match=r"servos 5, 12 did not answer on .* \(the other 12 did\)"):
        dev.connect()
    # The silent ones were asked PING_ATTEMPTS times before being named, the others once (or, when an
    # answer was late on a busy machine, again: that is what the retries are for).
    assert bus.pings[5] == bus.pings[12] == PING_ATTEMPTS
    assert all(1 <= bus.pings[i] <= PING_ATTEMPTS for i in IDS)
    bus.restore()
    with dev:  # the failed attempt released the port
        assert wait_for(dev.latest, what="a sample") is not None


def test_a_lost_or_late_ping_is_asked_again(bus):
    bus.lose(9, PING_ATTEMPTS - 1)  # noise eats all but the last ping
    bus.answer_late(3, 0.3)  # the first answer comes after the SDK stopped waiting
    with MasterArmDevice.from_arg(bus.path) as dev:
        assert wait_for(dev.latest, what="a sample") is not None
    assert bus.pings[9] == PING_ATTEMPTS and bus.pings[3] >= 2

    bus.lose(9, PING_ATTEMPTS)  # every ping lost: a missing servo
    with pytest.raises(DeviceError, match=r"servos 9 did not answer on .* \(the other 13 did\)"):
        MasterArmDevice.from_arg(bus.path).connect()


def test_feetech_late_ping_answer_is_not_taken_for_the_next(calibration_dir):
    # The answer to servo 14's first ping comes after the SDK stopped waiting (34 ms at 1 Mbps) and
    # before the retry: left in the input buffer (scservo_sdk does not clear it), every later request
    # to servo 14 would read the answer to the one before, and its model-number read a ping's status.
    with FakeFeetechBus(IDS) as fb:
        fb.answer_late(14, 0.06)
        with MasterArmDevice.from_arg(f"feetech:{fb.path}") as dev:
            assert wait_for(dev.latest, what="a sample") is not None
        assert fb.pings[14] >= 2


def test_feetech_ping_taking_a_late_answer_for_the_model_read(calibration_dir):
    # scservo_sdk's ping reads the model number after the ping; a ping status in its place (the late
    # answer to an earlier ping) makes the SDK raise IndexError, which is one more unanswered ping.
    with FakeFeetechBus(IDS) as fb:
        fb.answer_stray(10)
        with MasterArmDevice.from_arg(f"feetech:{fb.path}") as dev:
            assert wait_for(dev.latest, what="a sample") is not None
        assert fb.pings[10] >= 2


def test_a_stray_status_packet_is_a_drop_not_a_reading(calibration_dir):
    with FakeFeetechBus(IDS) as b:
        ticks = ramp()
        b.set_ticks(ticks)
        with make_device(f"master-arm:feetech:{b.path}") as dev:
            wait_ticks(dev, ticks)
            dev.drain()
            drops, seq = dev.health().drops, dev.latest().seq
            # Servo 2 answers a read with a ping's status packet (no data), as when a late ping answer
            # is taken for a reading; scservo_sdk reads that as 0 ticks. (dynamixel_sdk reads a ping's
            # status as data, its CRC included: undetectable here, which is why stale input is discarded
            # before each request.)
            b.answer_stray(2)
            wait_for(lambda: dev.health().drops > drops, what="the stray answer to count as a drop")
            wait_for(lambda: dev.latest().seq > seq + 5, what="reads to go on")
            want = np.array([ticks[i] for i in IDS], dtype=np.float64)
            assert all(np.array_equal(s.values["ticks"], want) for s in dev.drain())  # no made-up reading


def test_port_busy(bus):
    with make_device(f"master-arm:{bus.path}"), pytest.raises(DeviceError, match=r"serial port .* is busy; close "
                                                                       "the other program using it"):
        make_device(f"master-arm:{bus.path}").connect()


def test_unplugged_adapter_surfaces_as_device_error():
    b = FakeDynamixelBus(IDS)
    with make_device(f"master-arm:{b.path}") as dev:
        wait_for(dev.latest, what="a sample")
        b.close()  # the pty disappears like a yanked USB adapter

        def raised() -> str:
            try:
                dev.latest()
            except DeviceError as exc:
                return str(exc)
            return ""

        assert wait_for(raised, what="the reader error").startswith("master-arm: lost serial port ")


def test_port_open_errors_are_actionable():
    denied = _port_error("/dev/ttyUSB0", serial.SerialException(errno.EACCES, "could not open port: Permission"))
    assert "permission denied on serial port /dev/ttyUSB0; add your user to the dialout group" in str(denied)
    busy = _port_error("/dev/ttyUSB0", serial.SerialException(errno.EBUSY, "could not open port"))
    assert "serial port /dev/ttyUSB0 is busy" in str(busy)


def test_missing_sdk(monkeypatch, bus):
    monkeypatch.setitem(sys.modules, "dynamixel_sdk", None)
    with pytest.raises(DeviceError, match=r"dynamixel SDK is not installed .*; pip install 'x2\[master-arm\]'"):
        MasterArmDevice.from_arg(bus.path).connect()
    monkeypatch.setitem(sys.modules, "scservo_sdk", None)
    with pytest.raises(DeviceError, match=r"feetech SDK is not installed .*; pip install 'x2\[master-arm\]'"):
        MasterArmDevice.from_arg(f"feetech:{bus.path}").connect()


# ---- configuration ------------------------------------------------------------------------------------
def test_from_arg_and_config():
    assert MasterArmDevice.from_arg(None).config == MasterArmConfig()
    assert MasterArmConfig().baudrate == 57_600 and MasterArmConfig(sdk="feetech").baudrate == 1_000_000
    cfg = MasterArmDevice.from_arg("feetech:/dev/ttyACM0").config
    assert (cfg.sdk, cfg.port, cfg.baudrate) == ("feetech", "/dev/ttyACM0", 1_000_000)
    assert MasterArmDevice.from_arg("/dev/ttyUSB3").config.port == "/dev/ttyUSB3"
    assert MasterArmDevice.from_arg("/dev/ttyUSB3").device_id == "ttyUSB3"
    with pytest.raises(DeviceError, match=r"ids: found \[1, 2\]; allowed: 14 distinct ids"):
        MasterArmConfig(ids=(1, 2))
    assert _id_list([14, 1, 2, 3, 5, 9, 10]) == "1-3, 5, 9, 10, 14"
