"""The one narrow interface every teleoperation device speaks.

A device is an asynchronous reader: a thread (or the SDK's own listener) reads the hardware and
publishes samples; the control loop asks for the `latest()` one once per tick and never waits.
Every published sample is also kept in a bounded stream buffer that the loop `drain()`s, so an
episode can store the raw device stream (and `playback:FILE` can play it back with its timing).

Sample values per kind (float64 arrays, fixed keys; the teleop mappers read these):

- keyboard:   twist (2, 6)  per arm [vx, vy, vz, wx, wy, wz] in [-1, 1], robot base frame
- vr:         pose (2, 7)   per controller [x, y, z, qw, qx, qy, qz] in the tracking frame
              valid (2,)    1 while tracked; clutch (2,) trigger in [0, 1]; gripper (2,) opening in [0, 1]
- master-arm: joints (14,)  per arm 6 joints (rad) then gripper opening in [0, 1]; ticks (14,) raw
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats
from x2.base.errors import X2Error

KINDS = ("keyboard", "vr", "master-arm")
# Stored as int codes in /device/<name>/event_code; the order is part of the stream format.
EVENTS = ("engage", "gripper", "next", "rerecord", "discard", "quit", "arm", "base")  # base: drive it / the arms
STREAM_LIMIT = 1 << 16  # samples kept between drains; more are counted as drops, never block the reader


@dataclass(frozen=True)
class Sample:
    seq: int  # 0, 1, ... per connection
    t: float  # time.monotonic() when the device produced it
    values: Mapping[str, Floats]  # float64


@dataclass(frozen=True)
class DeviceEvent:
    kind: str  # one of EVENTS
    t: float  # time.monotonic()
    arm: int = -1  # the arm it concerns, -1 for none / all


@dataclass(frozen=True)
class DeviceHealth:
    connected: bool
    rate_hz: float  # samples per second over the last ~second
    age_s: float  # age of the latest sample (inf before the first)
    drops: int  # samples lost: stream buffer overflow, failed reads, rejected jumps
    detail: str = ""  # one line for the operator ("tracking lost: right", "port /dev/ttyUSB0")
    finished: bool = False  # the device will produce nothing more (a played-back stream ended)


class DeviceError(X2Error):
    """A device could not be opened or read; the message is one sentence an operator can act on."""


class Device(Protocol):
    name: str
    kind: str  # one of KINDS: what its samples mean

    def connect(self) -> None: ...
    def latest(self) -> Sample | None: ...
    def events(self) -> list[DeviceEvent]: ...
    def drain(self) -> list[Sample]: ...
    def health(self) -> DeviceHealth: ...
    def close(self) -> None: ...
    def __enter__(self) -> Device: ...
    def __exit__(self, *exc: object) -> None: ...


@dataclass
class _Rate:
    """Samples per second over a sliding window of arrival times."""

    window_s: float = 1.0
    times: deque[float] = field(default_factory=lambda: deque(maxlen=4096))

    def add(self, t: float) -> None:
        self.times.append(t)

    def hz(self, now: float) -> float:
        while self.times and now - self.times[0] > self.window_s:
            self.times.popleft()
        return len(self.times) / self.window_s


class DeviceBase(ABC):
    """Thread-safe latest sample, stream buffer, event queue and health for concrete devices.

    Subclasses implement `_open()` and `_close()` and call `_publish(values)` / `_emit(kind, arm)` from
    their reader thread or SDK callback. `_run_reader(fn)` starts a daemon thread calling `fn()` until
    closed; `fn` does one blocking read and publishes."""

    name = "device"
    kind = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: Sample | None = None
        self._stream: deque[Sample] = deque()
        self._events: deque[DeviceEvent] = deque()
        self._seq = 0
        self._drops = 0
        self._rate = _Rate()
        self._connected = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._detail = ""
        self._finished = False
        self._error: BaseException | None = None

    # ---- the Device protocol ---------------------------------------------------------------------
    def connect(self) -> None:
        if self._connected:
            return
        self._stop.clear()
        self._open()
        self._connected = True

    def latest(self) -> Sample | None:
        self._raise_reader_error()
        return self._latest

    def events(self) -> list[DeviceEvent]:
        with self._lock:
            out = list(self._events)
            self._events.clear()
        return out

    def drain(self) -> list[Sample]:
        with self._lock:
            out = list(self._stream)
            self._stream.clear()
        return out

    def health(self) -> DeviceHealth:
        now = time.monotonic()
        with self._lock:
            latest, drops, detail = self._latest, self._drops, self._detail
            rate = self._rate.hz(now)
        age = now - latest.t if latest is not None else float("inf")
        return DeviceHealth(self._connected, rate, age, drops, detail, self._finished)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._thread = None
        if self._connected:
            self._connected = False
            self._close()

    def __enter__(self) -> DeviceBase:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- for subclasses --------------------------------------------------------------------------
    @abstractmethod
    def _open(self) -> None:
        """Open the hardware and start publishing (a reader thread or the SDK's listener)."""

    def _close(self) -> None:  # noqa: B027  (optional: devices whose reader thread owns everything)
        """Release the hardware after the reader thread stopped."""

    def _publish(self, values: Mapping[str, npt.ArrayLike], t: float | None = None) -> Sample:
        arrays = {k: np.array(v, dtype=np.float64) for k, v in values.items()}
        with self._lock:
            sample = Sample(self._seq, time.monotonic() if t is None else t, arrays)
            self._seq += 1
            self._latest = sample
            self._rate.add(sample.t)
            if len(self._stream) >= STREAM_LIMIT:
                self._stream.popleft()
                self._drops += 1
            self._stream.append(sample)
        return sample

    def _emit(self, kind: str, arm: int = -1, t: float | None = None) -> None:
        if kind not in EVENTS:
            raise ValueError(f"unknown device event {kind!r}; allowed: {EVENTS}")
        with self._lock:
            self._events.append(DeviceEvent(kind, time.monotonic() if t is None else t, arm))

    def _count_drop(self, detail: str = "") -> None:
        with self._lock:
            self._drops += 1
            if detail:
                self._detail = detail

    def _set_detail(self, detail: str, finished: bool = False) -> None:
        with self._lock:
            self._detail = detail
            self._finished = self._finished or finished

    def _run_reader(self, read_once: Callable[[], None], name: str | None = None) -> None:
        def loop() -> None:
            try:
                while not self._stop.is_set():
                    read_once()
            except BaseException as exc:  # surfaced to the control thread by latest()
                self._error = exc
                self._set_detail(f"reader stopped: {exc}")

        self._thread = threading.Thread(target=loop, name=name or f"x2-{self.name}", daemon=True)
        self._thread.start()

    def _raise_reader_error(self) -> None:
        if self._error is not None:
            exc, self._error = self._error, None
            raise DeviceError(f"{self.name}: {exc}") from exc
