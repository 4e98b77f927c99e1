"""Fake servo buses on a pseudo-terminal: the unmodified vendor SDK opens the pty's slave path as its
serial port and talks to servos emulated here, so tests run the device's real code path end to end.

Written from the protocol documentation, not from SDK code:
- Dynamixel Protocol 2.0 (ROBOTIS e-manual, "DYNAMIXEL Protocol 2.0"): packets
  FF FF FD 00 | ID | LEN_L LEN_H | INST | PARAMS | CRC_L CRC_H, LEN counting INST..CRC after byte
  stuffing (FF FF FD -> FF FF FD FD inside INST..PARAMS), CRC-16 poly 0x8005, init 0, unreflected, over
  everything before the CRC. Status packets carry INST 0x55 then an error byte.
- Feetech SCS/STS (the Dynamixel 1.0 framing): FF FF | ID | LEN | INST/ERR | PARAMS | ~sum(ID..PARAMS) & 0xFF,
  LEN = len(PARAMS) + 2.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
import tty
from collections import Counter

PING, READ, SYNC_READ = 0x01, 0x02, 0x82
BROADCAST = 0xFE
DXL_STATUS = 0x55
DXL_HEADER = b"\xff\xff\xfd\x00"
SCS_HEADER = b"\xff\xff"

# Control-table addresses the emulation fills (ROBOTIS e-manual XL330-M288 / Feetech STS3215 memory table).
DXL_MODEL_ADDR, DXL_FIRMWARE_ADDR, DXL_ID_ADDR, DXL_POSITION_ADDR = 0, 6, 7, 132
DXL_MODEL = 1200  # XL330-M288-T, the GELLO leader's servo
SCS_MODEL_ADDR, SCS_ID_ADDR, SCS_POSITION_ADDR = 3, 5, 56
SCS_MODEL = 777  # STS3215
TABLE_SIZE = 256


def dxl_crc(data: bytes) -> int:
    """CRC-16 as the Protocol 2.0 spec defines it: polynomial x^16 + x^15 + x^2 + 1 (0x8005), initial value 0."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def dxl_stuff(body: bytes) -> bytes:
    out = bytearray()
    for b in body:
        out.append(b)
        if b == 0xFD and out[-3:] == b"\xff\xff\xfd":
            out.append(0xFD)
    return bytes(out)


def dxl_unstuff(body: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(body):
        out.append(body[i])
        if body[i] == 0xFD and out[-3:] == b"\xff\xff\xfd" and i + 1 < len(body) and body[i + 1] == 0xFD:
            i += 1  # the stuffed copy
        i += 1
    return bytes(out)


def dxl_packet(servo_id: int, inst: int, params: bytes) -> bytes:
    body = dxl_stuff(bytes([inst]) + params)
    head = DXL_HEADER + bytes([servo_id]) + (len(body) + 2).to_bytes(2, "little")
    crc = dxl_crc(head + body)
    return head + body + crc.to_bytes(2, "little")


def scs_packet(servo_id: int, inst: int, params: bytes) -> bytes:
    core = bytes([servo_id, len(params) + 2, inst]) + params
    return SCS_HEADER + core + bytes([~sum(core) & 0xFF])


class _FakeBus:
    """A thread answering on the pty master as the servos with the given ids would."""

    def __init__(self, ids: list[int] | range, reply_delay_s: float = 0.0) -> None:
        self.reply_delay_s = reply_delay_s  # bus turnaround + transfer time of a real line, if wanted
        self._lock = threading.Lock()
        self._tables: dict[int, bytearray] = {}
        self._silent: set[int] = set()
        self._lost: Counter[int] = Counter()  # servo id -> instructions it will miss
        self._late: dict[int, list[float]] = {}  # servo id -> delays of its next answers
        self._stray: Counter[int] = Counter()  # servo id -> reads answered with a ping's status packet
        self._write_lock = threading.Lock()  # the serving thread and late answers' timers both write
        self._timers: list[threading.Timer] = []
        self.requests = 0  # instruction packets seen (ours to answer or not)
        self.sync_reads = 0
        self.pings: Counter[int] = Counter()  # PING instructions addressed to each id
        for i in ids:
            self._tables[i] = self._new_table(i)
        self._master, self._slave = os.openpty()
        # Raw before the SDK opens it: no echo of our answers back to us, no newline translation.
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        self._stop = threading.Event()
        self._buf = bytearray()
        self._thread = threading.Thread(target=self._serve, name="fake-servo-bus", daemon=True)
        self._thread.start()

    # ---- test controls (thread-safe) --------------------------------------------------------------
    def set_ticks(self, ticks: dict[int, int]) -> None:
        with self._lock:
            for servo_id, value in ticks.items():
                self._write_position(self._tables[servo_id], int(value))

    def remove(self, *ids: int) -> None:
        """The servos stop answering (unplugged cable, brown-out)."""
        with self._lock:
            self._silent.update(ids)

    def restore(self, *ids: int) -> None:
        with self._lock:
            self._silent.difference_update(ids or set(self._silent))

    def lose(self, servo_id: int, times: int = 1) -> None:
        """The servo misses its next `times` instructions (noise on the line): no answer to them."""
        with self._lock:
            self._lost[servo_id] += times

    def answer_late(self, servo_id: int, delay_s: float, times: int = 1) -> None:
        """The servo's next `times` answers arrive `delay_s` late, after the host stopped waiting."""
        with self._lock:
            self._late.setdefault(servo_id, []).extend([delay_s] * times)

    def answer_stray(self, servo_id: int, times: int = 1) -> None:
        """The servo's next `times` answers to a read are the status packet of a ping (no data): what
        the host receives when a late answer to its earlier ping arrives while it waits for a read."""
        with self._lock:
            self._stray[servo_id] += times

    def close(self) -> None:
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        self._thread.join(timeout=2.0)
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> _FakeBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- protocol-specific parts ------------------------------------------------------------------
    def _new_table(self, servo_id: int) -> bytearray:
        raise NotImplementedError

    def _write_position(self, table: bytearray, value: int) -> None:
        raise NotImplementedError

    def _take_packet(self) -> tuple[int, int, bytes] | None:
        """(id, instruction, params) of the next complete instruction packet in self._buf, or None."""
        raise NotImplementedError

    def _status(self, servo_id: int, params: bytes) -> bytes:
        raise NotImplementedError

    def _read_params(self, params: bytes) -> tuple[int, int]:
        raise NotImplementedError

    def _sync_params(self, params: bytes) -> tuple[int, int, bytes]:
        raise NotImplementedError

    def _ping_params(self, table: bytearray) -> bytes:
        raise NotImplementedError

    # ---- the servo side ---------------------------------------------------------------------------
    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # the slave side went away for good
                return
            self._buf.extend(chunk)
            while (packet := self._take_packet()) is not None:
                reply, late = self._answer(*packet)
                if reply:
                    if self.reply_delay_s:
                        time.sleep(self.reply_delay_s)
                    self._write(reply)
                for delay, answer in late:
                    timer = threading.Timer(delay, self._write, (answer,))
                    timer.daemon = True
                    self._timers.append(timer)
                    timer.start()

    def _write(self, data: bytes) -> None:
        with self._write_lock, contextlib.suppress(OSError):  # a late answer after close goes nowhere
            if not self._stop.is_set():
                os.write(self._master, data)

    def _answer(self, servo_id: int, inst: int, params: bytes) -> tuple[bytes, list[tuple[float, bytes]]]:
        """The answer to write now, and late answers as (delay, bytes)."""
        with self._lock:
            self.requests += 1
            live = {i: t for i, t in self._tables.items() if i not in self._silent}
            if inst == PING:
                if servo_id != BROADCAST:
                    self.pings[servo_id] += 1
                targets = sorted(live) if servo_id == BROADCAST else ([servo_id] if servo_id in live else [])
                return self._timed((i, self._status(i, self._ping_params(live[i]))) for i in targets)
            if inst == READ and servo_id in live:
                addr, length = self._read_params(params)
                return self._timed([(servo_id, self._read_status(servo_id, live[servo_id], addr, length))])
            if inst == SYNC_READ and servo_id == BROADCAST:
                self.sync_reads += 1
                addr, length, ids = self._sync_params(params)
                # One status packet per listed id, in the listed order; a silent servo just leaves a gap.
                return self._timed((i, self._read_status(i, live[i], addr, length)) for i in ids if i in live)
            return b"", []

    def _read_status(self, servo_id: int, table: bytearray, addr: int, length: int) -> bytes:
        if self._stray[servo_id] > 0:
            self._stray[servo_id] -= 1
            return self._status(servo_id, self._ping_params(table))
        return self._status(servo_id, bytes(table[addr:addr + length]))

    def _timed(self, answers) -> tuple[bytes, list[tuple[float, bytes]]]:
        """Sort the servos' answers into now, late and lost (see lose() and answer_late())."""
        now, late = [], []
        for servo_id, status in answers:
            if self._lost[servo_id] > 0:
                self._lost[servo_id] -= 1
            elif self._late.get(servo_id):
                late.append((self._late[servo_id].pop(0), status))
            else:
                now.append(status)
        return b"".join(now), late


class FakeDynamixelBus(_FakeBus):
    """Dynamixel Protocol 2.0 servos (XL330 control table) answering PING, READ and SYNC_READ."""

    def _new_table(self, servo_id: int) -> bytearray:
        t = bytearray(TABLE_SIZE)
        t[DXL_MODEL_ADDR:DXL_MODEL_ADDR + 2] = DXL_MODEL.to_bytes(2, "little")
        t[DXL_FIRMWARE_ADDR] = 52
        t[DXL_ID_ADDR] = servo_id
        self._write_position(t, 2048)
        return t

    def _write_position(self, table: bytearray, value: int) -> None:
        table[DXL_POSITION_ADDR:DXL_POSITION_ADDR + 4] = value.to_bytes(4, "little", signed=True)

    def _take_packet(self) -> tuple[int, int, bytes] | None:
        buf = self._buf
        while True:
            start = buf.find(DXL_HEADER)
            if start < 0:
                del buf[:max(0, len(buf) - 3)]  # keep a possible partial header
                return None
            del buf[:start]
            if len(buf) < 7:
                return None
            total = 7 + int.from_bytes(buf[5:7], "little")
            if len(buf) < total:
                return None
            packet = bytes(buf[:total])
            del buf[:total]
            if total < 10 or dxl_crc(packet[:-2]) != int.from_bytes(packet[-2:], "little"):
                continue  # corrupt: a real servo stays silent (or reports a CRC error), never acts on it
            body = dxl_unstuff(packet[7:-2])
            if body[0] == DXL_STATUS:
                continue  # another servo's answer, not an instruction
            return packet[4], body[0], body[1:]

    def _status(self, servo_id: int, params: bytes) -> bytes:
        return dxl_packet(servo_id, DXL_STATUS, b"\x00" + params)  # error byte 0: no alert

    def _read_params(self, params: bytes) -> tuple[int, int]:
        return int.from_bytes(params[0:2], "little"), int.from_bytes(params[2:4], "little")

    def _sync_params(self, params: bytes) -> tuple[int, int, bytes]:
        return int.from_bytes(params[0:2], "little"), int.from_bytes(params[2:4], "little"), params[4:]

    def _ping_params(self, table: bytearray) -> bytes:
        return bytes(table[DXL_MODEL_ADDR:DXL_MODEL_ADDR + 2]) + bytes([table[DXL_FIRMWARE_ADDR]])


class FakeFeetechBus(_FakeBus):
    """Feetech STS3215 servos (SCS protocol, little-endian words) answering PING, READ and SYNC_READ."""

    def _new_table(self, servo_id: int) -> bytearray:
        t = bytearray(TABLE_SIZE)
        t[SCS_MODEL_ADDR:SCS_MODEL_ADDR + 2] = SCS_MODEL.to_bytes(2, "little")
        t[SCS_ID_ADDR] = servo_id
        self._write_position(t, 2048)
        return t

    def _write_position(self, table: bytearray, value: int) -> None:
        # STS position registers are sign-magnitude with the sign in bit 15 (STS3215 memory table).
        raw = (abs(value) & 0x7FFF) | (0x8000 if value < 0 else 0)
        table[SCS_POSITION_ADDR:SCS_POSITION_ADDR + 2] = raw.to_bytes(2, "little")

    def _take_packet(self) -> tuple[int, int, bytes] | None:
        buf = self._buf
        while True:
            start = buf.find(SCS_HEADER)
            if start < 0:
                del buf[:max(0, len(buf) - 1)]
                return None
            del buf[:start]
            if len(buf) < 4:
                return None
            if buf[2] == 0xFF:  # FF FF FF ...: the header may start one byte later
                del buf[0]
                continue
            total = 4 + buf[3]
            if len(buf) < total:
                return None
            packet = bytes(buf[:total])
            del buf[:total]
            if total < 6 or (~sum(packet[2:-1]) & 0xFF) != packet[-1]:
                continue
            return packet[2], packet[4], packet[5:-1]

    def _status(self, servo_id: int, params: bytes) -> bytes:
        return scs_packet(servo_id, 0x00, params)  # the error byte sits where the instruction was

    def _read_params(self, params: bytes) -> tuple[int, int]:
        return params[0], params[1]

    def _sync_params(self, params: bytes) -> tuple[int, int, bytes]:
        return params[0], params[1], params[2:]

    def _ping_params(self, table: bytearray) -> bytes:
        return b""
