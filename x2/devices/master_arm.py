"""`master-arm[:[dynamixel|feetech:]PORT]`: a GELLO-style leader arm (two arms, 6 joints + gripper each).

The reader thread sync-reads the present position of all 14 servos in one bus transaction, as fast as
the bus allows, and publishes `joints` (14,) mapped by the leader's calibration and `ticks` (14,) raw.
A failed read is a drop; after ~1 s of failures the servos are pinged one by one so the health detail
names the ones that stopped answering. A servo is only called silent (on connect or then) when it
answered none of a few pings spread over a fraction of a second: one lost or late answer is not a
missing servo.

The vendor SDK (dynamixel_sdk or scservo_sdk) is imported on connect, so x2 runs without it.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import select
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, cast

import numpy as np

from x2.devices.base import DeviceBase, DeviceError
from x2.devices.calibration import DEFAULT_IDS, MAX_SERVO_ID, SERVOS, Calibration, calibration_path, device_id_for_port

if TYPE_CHECKING:  # pyserial (typed by types-pyserial) comes with the SDKs, on connect
    from serial import Serial

Sdk = Literal["dynamixel", "feetech"]
SDKS: tuple[Sdk, ...] = ("dynamixel", "feetech")
DEFAULT_PORT = "/dev/ttyUSB0"

# Dynamixel X series (XL330-M288 in GELLO, XM430) control table, ROBOTIS e-manual: Present Position,
# address 132, 4 bytes, signed (multi-turn in extended position mode). Protocol 2.0 only.
DXL_PROTOCOL = 2.0
DXL_PRESENT_POSITION = 132
DXL_PRESENT_POSITION_LEN = 4
# GELLO's DynamixelDriver default (gello_software, gello/dynamixel/driver.py), also the X series' factory
# baud rate; GELLO builds commonly raise it to 1 Mbps, pass baudrate then.
DXL_DEFAULT_BAUDRATE = 57_600

# Feetech STS3215 memory table (as in Feetech's docs and LeRobot's feetech tables): Present Position,
# address 56, 2 bytes, sign-magnitude with the sign in bit 15. STS words are little-endian, which
# scservo_sdk calls protocol_end 0 (the older SCS series is big-endian, 1).
STS_PRESENT_POSITION = 56
STS_PRESENT_POSITION_LEN = 2
STS_SIGN_BIT = 15
STS_PROTOCOL_END = 0
STS_DEFAULT_BAUDRATE = 1_000_000  # STS3215 factory default

DEFAULT_BAUDRATE: dict[str, int] = {"dynamixel": DXL_DEFAULT_BAUDRATE, "feetech": STS_DEFAULT_BAUDRATE}
INSTALL_HINT = "pip install 'x2[master-arm]'"  # the extra carries both vendors' SDKs

FAILURE_REPORT_S = 1.0  # failing this long -> find out (by pinging) which servos stopped answering
# ... and this many failed reads in a row at least: a host stalled for a second between two reads (a
# suspended laptop, a swapping machine) saw two late answers, not a bus failing for a second. A silent
# servo fails every read, ~13 per second at 57600 baud (the SDK's 70 ms sync-read timeout + the backoff).
FAILURE_REPORT_READS = 5
FAILURE_BACKOFF_S = 0.005  # after a failed read, so a dead bus costs no CPU when reads fail instantly

# Pinging. The SDKs wait for a ping's status packet for twice the 16 ms USB-serial latency timer plus
# 2 ms plus the bytes' transfer time: ~36 ms at 57600 baud, ~34 ms at 1 Mbps. That budget is for the
# adapter, not for the host: an answer is missed when the line drops a packet (noise, a collision with
# a late status packet, a servo still booting after power-up) or when this process does not run for
# longer than that (a busy CPU's scheduler, a garbage-collection pause), and a real bus does both now
# and then. So a servo that does not answer is asked again, in rounds PING_RETRY_GAP_S apart (several
# scheduler time slices, so a retry does not fall into the same stall), and is silent only after
# PING_ATTEMPTS unanswered pings. On the pty test bus with both cores of a 2-core machine busy, about 1
# ping in 150 went unanswered while the SDK spun waiting (see _sleep_while_waiting), 2 in 4,200 servos
# twice in a row, and none of 11,200 once it sleeps; three in a row is the margin for a real bus. A
# servo that is really gone costs PING_ATTEMPTS timeouts and the gaps, ~0.3 s, once.
PING_ATTEMPTS = 3
PING_RETRY_GAP_S = 0.1


# ---- what x2 uses of dynamixel_sdk and scservo_sdk (same names in both; neither ships types) -----------------
class _PortHandler(Protocol):
    ser: Serial  # opened by openPort (None before: _close_port checks)
    packet_timeout: float  # ms: the deadline of the packet in flight, from its start
    readPort: Callable[[int], bytes]  # a method the SDK calls; _sleep_while_waiting replaces it

    def openPort(self) -> bool: ...
    def setBaudRate(self, baudrate: int, /) -> bool: ...
    def closePort(self) -> None: ...
    def getTimeSinceStart(self) -> float: ...  # ms


class _PacketHandler(Protocol):
    def ping(self, port: _PortHandler, servo_id: int, /) -> tuple[int, int, int]: ...  # model, result, error
    def getTxRxResult(self, result: int, /) -> str: ...


class _GroupSyncRead(Protocol):
    data_dict: dict[int, list[int]]  # servo id -> the bytes of its last answer

    def addParam(self, servo_id: int, /) -> bool: ...
    def txRxPacket(self) -> int: ...
    def getData(self, servo_id: int, address: int, length: int, /) -> int: ...


class _ServoSdk(Protocol):
    """The SDK module."""

    @property
    def COMM_SUCCESS(self) -> int: ...
    @property
    def COMM_RX_CORRUPT(self) -> int: ...
    def PortHandler(self, port_name: str, /) -> _PortHandler: ...
    def PacketHandler(self, protocol: float, /) -> _PacketHandler: ...
    def GroupSyncRead(self, port: _PortHandler, packet: _PacketHandler, start_address: int, data_length: int,
                      /) -> _GroupSyncRead: ...


@dataclass(frozen=True)
class MasterArmConfig:
    """ids: 14 servo ids in layout order (left arm 6 joints + gripper, then right); a calibration file
    carries its own ids and takes precedence. calibration: a file, or None for <dir>/<device_id>.json
    when it exists and the default mapping otherwise. device_id: None derives it from the port."""

    port: str = DEFAULT_PORT
    sdk: Sdk = "dynamixel"
    baudrate: int | None = None  # None: the sdk's default (DEFAULT_BAUDRATE); always set after __post_init__
    ids: tuple[int, ...] = DEFAULT_IDS
    calibration: Path | None = None
    device_id: str | None = None
    # Reads per second at most: 200 Hz samples a 30 Hz loop finely, while a 1 Mbps bus could run at
    # ~800 Hz and store four times the raw stream for nothing.
    max_rate_hz: float = 200.0

    def __post_init__(self) -> None:
        if self.sdk not in SDKS:
            raise DeviceError(f"master-arm: sdk: found {self.sdk!r}; allowed: {', '.join(SDKS)}")
        if self.baudrate is None:
            object.__setattr__(self, "baudrate", DEFAULT_BAUDRATE[self.sdk])
        ids = tuple(self.ids)
        if len(ids) != SERVOS or len(set(ids)) != SERVOS or not all(
                isinstance(i, int) and 0 <= i <= MAX_SERVO_ID for i in ids):
            raise DeviceError(f"master-arm: ids: found {list(ids)}; allowed: {SERVOS} distinct ids 0-{MAX_SERVO_ID} "
                              "(6 joints + gripper per arm, left first)")
        object.__setattr__(self, "ids", ids)
        if not self.max_rate_hz > 0:
            raise DeviceError(f"master-arm: max_rate_hz: found {self.max_rate_hz}; allowed: a positive number")
        if self.calibration is not None:
            object.__setattr__(self, "calibration", Path(self.calibration))


@dataclass
class _Bus:
    """The SDK objects of one open connection and how to decode a reading."""

    sdk: Sdk
    port: _PortHandler
    packet: _PacketHandler
    sync: _GroupSyncRead
    success: int  # the SDK's COMM_SUCCESS
    corrupt: int  # its COMM_RX_CORRUPT
    address: int
    length: int
    ids: tuple[int, ...]

    def sync_read(self) -> int:
        self.discard_input()
        return self.sync.txRxPacket()

    def discard_input(self) -> None:
        """Drop whatever arrived since the last transaction: late answers to it. The SDKs take the first
        status packet with the right id for an answer, so a late one left in the input buffer would be
        read as the next request's answer, and that one's as the one after: stale data, and a ping's
        status taken for a reading. dynamixel_sdk clears the input before each request, but scservo_sdk's
        clearPort() flushes the output instead (pyserial's flush()), so this is done here for both."""
        self.port.ser.reset_input_buffer()

    def answers_complete(self) -> bool:
        """Whether each servo's answer to the last sync read carries its data. The SDKs match a status
        packet to a servo by id alone, so a late answer to an earlier ping (no data) can be taken for a
        servo's reading: dynamixel_sdk's getData then raises IndexError, scservo_sdk's returns 0."""
        return all(len(self.sync.data_dict.get(i, ())) >= self.length for i in self.ids)

    def decode(self, raw: int) -> int:
        if self.sdk == "dynamixel":  # getData returns the 4 bytes unsigned: reinterpret as int32
            return raw - (1 << 32) if raw & (1 << 31) else raw
        magnitude = raw & ((1 << STS_SIGN_BIT) - 1)
        return -magnitude if raw & (1 << STS_SIGN_BIT) else magnitude

    def ping(self, servo_id: int) -> bool:
        self.discard_input()
        try:
            _, result, _ = self.packet.ping(self.port, servo_id)
        except IndexError:
            # scservo_sdk's ping reads the model number next and indexes that answer unchecked: the late
            # answer to an earlier ping of this servo, taken for the read's, raises. Ask again.
            return False
        return result == self.success

    def silent(self, ids: tuple[int, ...] | list[int], stop: threading.Event) -> list[int]:
        """The ids that answered none of PING_ATTEMPTS pings (see PING_ATTEMPTS); as far as it got when
        `stop` is set. When no servo answers at all the cause is power, baud rate or protocol, which
        asking again does not change: then each is pinged once."""
        silent = list(ids)
        for attempt in range(PING_ATTEMPTS):
            if attempt and (len(silent) == len(ids) or stop.wait(PING_RETRY_GAP_S)):
                break
            still = []
            for i in silent:
                if stop.is_set():
                    return silent
                if not self.ping(i):
                    still.append(i)
            silent = still
            if not silent:
                break
        return silent

    def describe(self, result: int) -> str:
        try:
            return str(self.packet.getTxRxResult(result)).removeprefix("[TxRxResult] ").rstrip("!. ")
        except Exception:  # an SDK without the helper: the code is still actionable for support
            return f"result {result}"


class MasterArmDevice(DeviceBase):
    name = "master-arm"
    kind = "master-arm"

    def __init__(self, config: MasterArmConfig | None = None) -> None:
        super().__init__()
        self.config = config or MasterArmConfig()
        self.device_id: str = self.config.device_id or device_id_for_port(self.config.port)
        self.calibration: Calibration | None = None  # the mapping in use, set by connect()
        self._bus: _Bus | None = None
        self._failing_since: float | None = None
        self._failed_reads = 0  # in a row
        self._last_report = 0.0
        self._ok_detail = ""
        self._next_read = 0.0

    @classmethod
    def from_arg(cls, arg: str | None) -> MasterArmDevice:
        """None, "PORT", "dynamixel:PORT", "feetech:PORT", or a bare "dynamixel" / "feetech"."""
        if not arg:
            return cls(MasterArmConfig())
        sdk, sep, rest = arg.partition(":")
        if sdk in SDKS:
            return cls(MasterArmConfig(port=rest if sep and rest else DEFAULT_PORT, sdk=sdk))
        return cls(MasterArmConfig(port=arg))  # a plain port, which may itself contain ':' (COM ports do not)

    # ---- connection -------------------------------------------------------------------------------
    def _open(self) -> None:
        cfg = self.config
        sdk = _import_sdk(cfg.sdk)
        if os.sep in cfg.port and not os.path.exists(cfg.port):
            raise _port_not_found(cfg.port)
        self.calibration = self._load_calibration()
        bus = self._connect_bus(sdk)
        try:
            self._check_servos(bus)
        except BaseException:
            _close_bus(bus)
            raise
        self._bus = bus
        self._failing_since = None
        self._failed_reads = 0
        self._ok_detail = f"port {cfg.port} ({cfg.sdk}, {cfg.baudrate} baud, device {self.device_id})"
        self._set_detail(self._ok_detail)
        self._run_reader(self._read_once, "x2-master-arm")

    def _close(self) -> None:
        if self._bus is not None:
            _close_bus(self._bus)
            self._bus = None

    def _load_calibration(self) -> Calibration:
        cfg = self.config
        if cfg.calibration is not None:
            return Calibration.load(cfg.calibration)
        stored = calibration_path(self.device_id)
        if stored.exists():
            return Calibration.load(stored)
        return Calibration.default(self.device_id, cfg.ids)

    def _connect_bus(self, sdk: _ServoSdk) -> _Bus:
        cfg = self.config
        assert cfg.baudrate is not None  # MasterArmConfig.__post_init__ sets the sdk's default
        is_dxl = cfg.sdk == "dynamixel"
        port = sdk.PortHandler(cfg.port)
        packet = sdk.PacketHandler(DXL_PROTOCOL if is_dxl else STS_PROTOCOL_END)
        try:
            if not port.openPort() or not port.setBaudRate(cfg.baudrate):
                raise DeviceError(f"master-arm: baud rate {cfg.baudrate} is not supported by the {cfg.sdk} SDK; "
                                  "pass a standard rate such as 57600 or 1000000")
            _lock_port(port, cfg.port)
        except OSError as exc:  # serial.SerialException is an OSError
            _close_port(port)
            raise _port_error(cfg.port, exc) from None
        except BaseException:
            _close_port(port)
            raise
        _try_low_latency(port)
        _sleep_while_waiting(port, _selectable_fd(port))
        address = DXL_PRESENT_POSITION if is_dxl else STS_PRESENT_POSITION
        length = DXL_PRESENT_POSITION_LEN if is_dxl else STS_PRESENT_POSITION_LEN
        ids = self.calibration.ids if self.calibration else cfg.ids
        bus = _Bus(cfg.sdk, port, packet, sdk.GroupSyncRead(port, packet, address, length), sdk.COMM_SUCCESS,
                   sdk.COMM_RX_CORRUPT, address, length, ids)
        for i in ids:
            bus.sync.addParam(i)
        return bus

    def _check_servos(self, bus: _Bus) -> None:
        cfg = self.config
        missing = bus.silent(bus.ids, self._stop)
        if len(missing) == len(bus.ids):
            raise DeviceError(f"master-arm: no servos answered on {cfg.port} at {cfg.baudrate} baud (pinged IDs "
                              f"{_id_list(bus.ids)}); check the leader arm's power, the baud rate and the sdk "
                              f"({cfg.sdk})")
        if missing:
            raise DeviceError(f"master-arm: servos {_id_list(missing)} did not answer on {cfg.port} at "
                              f"{cfg.baudrate} baud (the other {len(bus.ids) - len(missing)} did); check their "
                              "cables and IDs")

    # ---- reading ----------------------------------------------------------------------------------
    def _read_once(self) -> None:
        bus = self._bus
        assert bus is not None and self.calibration is not None
        wait = self._next_read - time.monotonic()
        if wait > 0 and self._stop.wait(wait):
            return
        self._next_read = max(self._next_read + 1.0 / self.config.max_rate_hz, time.monotonic())  # no bursts
        try:
            result = bus.sync_read()
            now = time.monotonic()
            if result == bus.success and not bus.answers_complete():
                result = bus.corrupt
            if result != bus.success:
                self._on_failure(bus, result, now)  # pings servos after a while: may meet the dead port too
                return
        except (OSError, termios.error) as exc:  # unplugged (pyserial's tcflush raises termios.error): for good
            raise DeviceError(f"lost serial port {self.config.port} ({exc}); check the USB cable and reconnect "
                              "the leader arm") from None
        ticks = np.array([bus.decode(bus.sync.getData(i, bus.address, bus.length)) for i in bus.ids], dtype=np.float64)
        self._publish({"joints": self.calibration.to_joints(ticks), "ticks": ticks}, t=now)
        self._failed_reads = 0
        if self._failing_since is not None:
            self._failing_since = None
            self._set_detail(self._ok_detail)

    def _on_failure(self, bus: _Bus, result: int, now: float) -> None:
        if self._failing_since is None:
            self._failing_since = now
        self._failed_reads += 1
        failing_for = now - self._failing_since
        failing = failing_for >= FAILURE_REPORT_S and self._failed_reads >= FAILURE_REPORT_READS
        if not failing or now - self._last_report < FAILURE_REPORT_S:
            self._count_drop("" if failing else f"read failed on {self.config.port}: {bus.describe(result)}")
            self._stop.wait(FAILURE_BACKOFF_S)
            return
        # Failing for a while: a sync read stops at the first silent servo, so ask each one.
        self._last_report = now
        silent = bus.silent(bus.ids, self._stop)
        if self._stop.is_set():
            return
        if silent:
            detail = (f"servos {_id_list(silent)} stopped answering on {self.config.port} {failing_for:.1f} s ago; "
                      "check their cables and power")
        else:
            detail = f"reads failing on {self.config.port} for {failing_for:.1f} s: {bus.describe(result)}"
        self._count_drop(detail)


# ---- SDK and port helpers -------------------------------------------------------------------------
def _import_sdk(sdk: str) -> _ServoSdk:
    module = "dynamixel_sdk" if sdk == "dynamixel" else "scservo_sdk"
    try:
        return cast(_ServoSdk, importlib.import_module(module))  # untyped SDKs: _ServoSdk is what x2 uses
    except ImportError as exc:  # also pyserial missing, which both SDKs import at module level
        raise DeviceError(f"master-arm: the {sdk} SDK is not installed ({exc.name or module} missing); "
                          f"{INSTALL_HINT}") from None


def _port_error(port: str, exc: OSError) -> DeviceError:
    code = exc.errno
    text = str(exc)
    if code in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return DeviceError(f"master-arm: permission denied on serial port {port}; add your user to the dialout "
                           "group (sudo usermod -aG dialout $USER, then log in again)")
    if code == errno.EBUSY or "busy" in text.lower() or "lock" in text.lower():
        return _port_busy(port)
    if code in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
        return _port_not_found(port)
    return DeviceError(f"master-arm: cannot open serial port {port} ({text}); check the cable and the port name")


def _port_not_found(port: str) -> DeviceError:
    return DeviceError(f"master-arm: serial port {port} not found; plug the leader arm in or pass "
                       "--device master-arm:PORT")


def _port_busy(port: str) -> DeviceError:
    return DeviceError(f"master-arm: serial port {port} is busy; close the other program using it")


def _lock_port(port: _PortHandler, name: str) -> None:
    """Take an exclusive advisory lock, as pyserial's exclusive=True does, so a second reader (another x2,
    a calibration script) fails loudly instead of stealing half the status packets."""
    try:
        import fcntl
    except ImportError:  # Windows opens serial ports exclusively anyway
        return
    fd = port.ser.fileno()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        # Anything but "held by someone else" is a file system without flock: run unlocked.
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise _port_busy(name) from None


def _selectable_fd(port: _PortHandler) -> int | None:
    if os.name != "posix":
        return None
    try:
        return int(port.ser.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def _sleep_while_waiting(port: _PortHandler, fd: int | None) -> None:
    """Make the SDK wait for answer bytes asleep. Both SDKs read a non-blocking port in a loop until a
    status packet is complete or its packet timeout passes, so every transaction (a 14-servo sync read
    takes ~35 ms at 57600 baud; a ping waits up to ~36 ms for a silent servo) spins a core and holds
    the GIL, starving the control loop in the same process and, on a busy machine, whatever must run
    for the answer to come (the pty test bus answers from a thread of the same process: with both
    cores loaded it missed about one ping in 150 while the SDK spun, none sleeping). A read that finds
    nothing sleeps in select() until a byte arrives or the SDK's deadline for this packet passes, so
    the SDK's loop and timeouts are unchanged. Without a selectable fd (Windows) it spins as before."""
    if fd is None:
        return
    read = port.readPort

    def read_port(length: int) -> bytes:
        data = read(length)
        if not data:
            left_ms = port.packet_timeout - port.getTimeSinceStart()  # the SDK's deadline for this packet
            if left_ms > 0:
                select.select([fd], [], [], left_ms / 1000.0)
                data = read(length)
        return data

    port.readPort = read_port


def _try_low_latency(port: _PortHandler) -> None:
    # FTDI adapters (the U2D2 is one) hold received bytes up to their 16 ms latency timer, which caps a
    # request/response bus near 30 Hz; Linux's ftdi_sio drops it to 1 ms for the low-latency flag.
    # Not Linux, not a real UART (ptys) or not permitted: still correct, just slower.
    with contextlib.suppress(AttributeError, ValueError, OSError, NotImplementedError):
        port.ser.set_low_latency_mode(True)


def _close_port(port: _PortHandler) -> None:
    try:
        if getattr(port, "ser", None) is not None:
            port.closePort()
    except OSError:
        pass


def _close_bus(bus: _Bus) -> None:
    _close_port(bus.port)  # closing the fd releases the flock


def _id_list(ids: list[int] | tuple[int, ...]) -> str:
    """1, 2, 3, 5 -> '1-3, 5': short enough for one line of health detail."""
    runs: list[list[int]] = []  # consecutive ids
    for i in sorted(ids):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)
