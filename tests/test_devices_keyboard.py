"""The keyboard device on its real code paths: pynput on a throwaway X server driven by xdotool, and the
terminal reader on a pty. Only the transport is replaced."""

from __future__ import annotations

import os
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from helpers.xvfb import Xvfb, require_x_tools

from x2.devices import DeviceError, DeviceEvent, make_device
from x2.devices.keyboard import KeyboardConfig, KeyboardDevice, _TerminalDecoder, keymap_lines

# How long wait_until gives a condition: it returns as soon as the condition holds, so this only bounds
# how long a real failure takes to show; generous for a loaded machine (xdotool, the X server, the
# reader thread and the test all share the cores with whatever else runs).
TIMEOUT_S = 10.0


def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def twist(dev: KeyboardDevice) -> np.ndarray:
    sample = dev.latest()
    assert sample is not None
    return sample.values["twist"]


def expect_twist(dev: KeyboardDevice, arm: int, **axes: float) -> None:
    want = np.zeros((2, 6))
    for name, value in axes.items():
        want[arm, ("vx", "vy", "vz", "wx", "wy", "wz").index(name)] = value
    assert wait_until(lambda: np.array_equal(twist(dev), want)), f"twist {twist(dev).tolist()} != {want.tolist()}"


class EventLog:
    def __init__(self, dev: KeyboardDevice):
        self.dev, self.seen = dev, []

    def expect(self, kind: str, arm: int = -1) -> None:
        def arrived() -> bool:
            self.seen += self.dev.events()
            return bool(self.seen)

        assert wait_until(arrived), f"no {kind!r} event"
        event: DeviceEvent = self.seen.pop(0)
        assert (event.kind, event.arm) == (kind, arm)

    def expect_none(self, settle_s: float = 0.15) -> None:
        time.sleep(settle_s)
        self.seen += self.dev.events()
        assert self.seen == []


# ---- X11 ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def xserver() -> Iterator[Xvfb]:
    require_x_tools()
    # One server for the module: pynput checks the display once, when it is first imported.
    with Xvfb() as server:
        yield server


@pytest.fixture
def x11(xserver: Xvfb, monkeypatch: pytest.MonkeyPatch) -> Iterator[Xvfb]:
    monkeypatch.setenv("DISPLAY", xserver.display)
    yield xserver


def test_x11_held_keys_sum_and_release(x11: Xvfb) -> None:
    with KeyboardDevice(KeyboardConfig(backend="x11")) as dev:
        assert dev.backend == "x11"
        assert dev.health().detail == f"x11 on {x11.display}, active arm right"
        expect_twist(dev, 1)
        x11.xdotool("keydown", "w")
        expect_twist(dev, 1, vx=1.0)
        x11.xdotool("keydown", "a")
        x11.xdotool("keydown", "j")
        expect_twist(dev, 1, vx=1.0, vy=1.0, wz=1.0)
        x11.xdotool("keydown", "s")  # opposite of w: cancels it
        expect_twist(dev, 1, vy=1.0, wz=1.0)
        seq = dev.latest().seq
        # Nothing changes, yet the heartbeat (50 Hz) keeps publishing, so the sample stays fresh.
        assert wait_until(lambda: dev.latest().seq >= seq + 3)
        assert dev.health().age_s < 0.5  # 25 heartbeat periods: a margin for a busy machine
        x11.xdotool("keyup", "w", "keyup", "a", "keyup", "j", "keyup", "s")
        expect_twist(dev, 1)
    assert dev.backend == "" and not dev.health().connected


@pytest.mark.parametrize("order", [("w", "shift", "w", "shift"), ("shift", "w", "shift", "w")])
def test_x11_shift_never_leaves_a_key_held(x11: Xvfb, order: tuple[str, ...]) -> None:
    down_1, down_2, up_1, up_2 = order
    with KeyboardDevice(KeyboardConfig(backend="x11")) as dev:
        x11.xdotool("keydown", down_1, "keydown", down_2)
        expect_twist(dev, 1, vx=1.0)
        x11.xdotool("keyup", up_1, "keyup", up_2)  # the release may arrive as 'W'
        expect_twist(dev, 1)
        x11.xdotool("key", "u")  # and nothing else is stuck either
        expect_twist(dev, 1)


def test_x11_lifecycle_keys(x11: Xvfb) -> None:
    with KeyboardDevice(KeyboardConfig(backend="x11")) as dev:
        log = EventLog(dev)
        x11.xdotool("key", "Tab")
        log.expect("arm", 0)
        assert dev.active_arm == 0 and dev.health().detail.endswith("active arm left")
        x11.xdotool("keydown", "r")
        expect_twist(dev, 0, vz=1.0)  # motion goes to the newly active arm only
        x11.xdotool("key", "Tab")
        log.expect("arm", 1)
        expect_twist(dev, 1, vz=1.0)  # a held key follows the switch
        x11.xdotool("keyup", "r")
        for key, kind, arm in [("space", "gripper", 1), ("Return", "engage", -1), ("Right", "next", -1),
                               ("Left", "rerecord", -1), ("BackSpace", "discard", -1), ("Delete", "discard", -1),
                               ("Escape", "quit", -1)]:
            x11.xdotool("key", key)
            log.expect(kind, arm)
        x11.xdotool("key", "Up", "x", "F5")
        log.expect_none()
        expect_twist(dev, 1)


def test_x11_autorepeat_fires_an_event_once(x11: Xvfb) -> None:
    with KeyboardDevice(KeyboardConfig(backend="x11")) as dev:
        log = EventLog(dev)
        x11.xdotool("keydown", "Right")
        time.sleep(0.8)  # past the X server's autorepeat delay (660 ms)
        x11.xdotool("keyup", "Right")
        log.expect("next")
        log.expect_none()


def test_x11_lifecycle_only(x11: Xvfb) -> None:
    with KeyboardDevice(KeyboardConfig(backend="x11", motion=False)) as dev:
        log = EventLog(dev)
        x11.xdotool("keydown", "w", "key", "Tab", "key", "space", "keyup", "w")
        log.expect("arm", 0)
        log.expect("gripper", 0)
        assert dev.latest() is None and dev.drain() == []
        assert dev.health().detail.endswith("lifecycle keys only")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # pynput's dying thread
def test_x11_server_gone_stops_the_arm(x11: Xvfb, monkeypatch: pytest.MonkeyPatch) -> None:
    with Xvfb() as doomed:
        monkeypatch.setenv("DISPLAY", doomed.display)
        with KeyboardDevice(KeyboardConfig(backend="x11")) as dev:
            doomed.xdotool("keydown", "w")
            expect_twist(dev, 1, vx=1.0)
            doomed.__exit__()
            with pytest.raises(DeviceError, match="keyboard: the X11 key listener stopped"):
                wait_until(lambda: dev.latest() is None)
            assert not twist(dev).any()  # the last sample never keeps an arm moving


def test_x11_unreachable_display(x11: Xvfb, monkeypatch: pytest.MonkeyPatch) -> None:
    free = next(n for n in range(200, 300) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    monkeypatch.setenv("DISPLAY", f":{free}")
    with pytest.raises(DeviceError) as err:
        KeyboardDevice(KeyboardConfig(backend="x11")).connect()
    assert str(err.value) == (f"keyboard: no X display reachable (DISPLAY=:{free}); run under a desktop session "
                              "or use --device keyboard:terminal")


# ---- terminal -------------------------------------------------------------------------------------
class Pty:
    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.open = [self.master, self.slave]

    def hang_up(self) -> None:
        os.close(self.master)
        self.open.remove(self.master)


@pytest.fixture
def pty() -> Iterator[Pty]:
    p = Pty()
    yield p
    for fd in p.open:
        os.close(fd)


def terminal(slave: int, **config: object) -> KeyboardDevice:
    return KeyboardDevice(KeyboardConfig(backend="terminal", **config), fd=slave)  # type: ignore[arg-type]


def test_terminal_key_latches_then_releases(pty: Pty) -> None:
    master, slave = pty.master, pty.slave
    config = KeyboardConfig()
    with terminal(slave) as dev:
        assert dev.backend == "terminal" and dev.health().detail == "terminal, active arm right"
        expect_twist(dev, 1)
        dev.drain()
        os.write(master, b"w")
        expect_twist(dev, 1, vx=1.0)
        assert wait_until(lambda: not twist(dev).any())
        # the latch holds at least its time, on the device's own clock (its samples' times: the press, then the
        # release); a busy machine only releases it later, so no upper bound
        samples = dev.drain()
        pressed = next(k for k, s in enumerate(samples) if s.values["twist"][1, 0] == 1.0)
        released = next(s.t for s in samples[pressed:] if not s.values["twist"].any())
        assert released - samples[pressed].t >= config.first_latch_s - 0.05

        dev.drain()
        os.write(master, b"d")  # a held key repeats every ~35 ms after the first latch
        expect_twist(dev, 1, vy=-1.0)
        end = time.monotonic() + config.first_latch_s + 0.3
        while time.monotonic() < end:
            time.sleep(0.035)
            os.write(master, b"D")  # Caps Lock or Shift: the same key
        last = time.monotonic()
        time.sleep(0.03)
        samples = dev.drain()
        first = next(s.t for s in samples if s.values["twist"].any())
        held = [s.values["twist"][1, 1] for s in samples if first <= s.t < last + 0.03]
        assert len(held) > 30 and all(v == -1.0 for v in held)
        # and it lets go once the repeats stop (how soon is the latch's time on an idle machine, a hang the
        # wait's: the seconds a busy machine adds are not the device's)
        assert wait_until(lambda: not twist(dev).any())


def test_terminal_lifecycle_keys_and_escape_sequences(pty: Pty) -> None:
    master, slave = pty.master, pty.slave
    with terminal(slave) as dev:
        log = EventLog(dev)
        for chunks, kind, arm in [([b"\t"], "arm", 0), ([b" "], "gripper", 0), ([b"\r"], "engage", -1),
                                  ([b"\x1b[C"], "next", -1), ([b"\x1bOD"], "rerecord", -1),
                                  ([b"\x7f"], "discard", -1), ([b"\x1b[3", b"~"], "discard", -1),
                                  ([b"\x1b"], "quit", -1)]:
            for chunk in chunks:  # a sequence split across reads still decodes
                os.write(master, chunk)
                time.sleep(0.01)
            log.expect(kind, arm)
        os.write(master, b"\x1b[A\x1b[1;5B\x1bwx")  # Up, Ctrl+Down, Alt+w, an unmapped key: nothing
        log.expect_none()
        assert dev.latest() is not None and not twist(dev).any()


def test_terminal_autorepeat_fires_an_event_once(pty: Pty) -> None:
    master, slave = pty.master, pty.slave
    with terminal(slave, first_latch_s=0.3, repeat_latch_s=0.1) as dev:
        log = EventLog(dev)
        for _ in range(12):  # Right held: first press, then repeats every 40 ms past the first latch
            os.write(master, b"\x1b[C")
            time.sleep(0.04)
        log.expect("next")
        log.expect_none(settle_s=0.2)  # the latch has run out ...
        os.write(master, b"\x1b[C")  # ... so this is a new press
        log.expect("next")


def test_terminal_attributes_restored_exactly(pty: Pty) -> None:
    before = termios.tcgetattr(pty.slave)
    with terminal(pty.slave):
        during = termios.tcgetattr(pty.slave)
        assert not during[3] & (termios.ICANON | termios.ECHO) and during[3] & termios.ISIG  # Ctrl-C still works
    assert termios.tcgetattr(pty.slave) == before


def test_terminal_restored_when_the_reader_dies(pty: Pty, monkeypatch: pytest.MonkeyPatch) -> None:
    master, slave = pty.master, pty.slave
    before = termios.tcgetattr(slave)
    with terminal(slave) as dev:
        os.write(master, b"w")
        expect_twist(dev, 1, vx=1.0)

        def broken(data: bytes, now: float) -> list[str]:
            raise RuntimeError("decoder broke")

        monkeypatch.setattr(dev._decoder, "feed", broken)
        os.write(master, b"w")
        assert wait_until(lambda: termios.tcgetattr(slave) == before)
        with pytest.raises(DeviceError, match="keyboard: decoder broke"):
            wait_until(lambda: dev.latest() is None)
        assert not twist(dev).any()  # the last sample never keeps an arm moving


def test_terminal_hangup_is_an_error(pty: Pty) -> None:
    master, slave = pty.master, pty.slave
    with terminal(slave) as dev:
        os.write(master, b"w")
        expect_twist(dev, 1, vx=1.0)
        pty.hang_up()
        with pytest.raises(DeviceError, match="the terminal closed"):
            wait_until(lambda: dev.latest() is None)
        assert not twist(dev).any()


def test_terminal_lifecycle_only(pty: Pty) -> None:
    master, slave = pty.master, pty.slave
    with terminal(slave, motion=False) as dev:
        log = EventLog(dev)
        os.write(master, b"w")
        os.write(master, b"\t")
        log.expect("arm", 0)
        os.write(master, b"ww ")
        log.expect("gripper", 0)
        time.sleep(0.1)
        assert dev.latest() is None and dev.drain() == []


def test_decoder_holds_a_partial_sequence_and_times_out_a_lone_escape() -> None:
    dec = _TerminalDecoder()
    assert dec.feed(b"W\x1b", 0.0) == ["w"] and dec.wait_s(0.0) == pytest.approx(0.05)
    assert dec.feed(b"[3", 0.01) == []
    assert dec.feed(b"~\x1b\x1b", 0.02) == ["delete", "esc"]
    assert dec.feed(b"", 0.05) == [] and dec.feed(b"", 0.08) == ["esc"] and dec.wait_s(0.08) is None
    assert dec.feed(b"\x1b[", 1.0) == [] and dec.feed(b"", 1.1) == [] and dec.feed(b"s", 1.2) == ["s"]
    assert dec.feed(b"\x08\n\x1bOC\x1b[Z", 2.0) == ["backspace", "enter", "right"]  # Z: Shift+Tab, ignored


# ---- choosing a backend ---------------------------------------------------------------------------
def test_auto_prefers_x11_then_the_terminal(x11: Xvfb, pty: Pty, monkeypatch: pytest.MonkeyPatch) -> None:
    before = termios.tcgetattr(pty.slave)
    with KeyboardDevice(fd=pty.slave) as dev:
        assert dev.backend == "x11"
        assert not termios.tcgetattr(pty.slave)[3] & termios.ECHO  # keys for X11 do not echo into the terminal
    assert termios.tcgetattr(pty.slave) == before
    monkeypatch.delenv("DISPLAY")
    with KeyboardDevice(fd=pty.slave) as dev:
        assert dev.backend == "terminal"
        os.write(pty.master, b"\t")
        EventLog(dev).expect("arm", 0)


def test_terminal_needs_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    with open(os.devnull) as devnull:
        monkeypatch.setattr(sys, "stdin", devnull)
        dev = make_device("keyboard:terminal")
        with pytest.raises(DeviceError) as err:
            dev.connect()
    assert str(err.value) == ("keyboard: stdin is not a terminal; run x2 from an interactive terminal or use "
                              "--device keyboard:x11 under a desktop session")


def test_backend_errors_without_display_or_tty() -> None:
    # A subprocess: pynput's failed import (no DISPLAY) must not touch this process's pynput.
    script = textwrap.dedent("""
        from x2.devices import DeviceError, make_device
        for spec in ("keyboard:x11", "keyboard"):
            try:
                make_device(spec).connect()
            except DeviceError as exc:
                print(exc)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    out = subprocess.run([sys.executable, "-c", script], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "keyboard: no X display reachable (DISPLAY is unset); run under a desktop session or use "
        "--device keyboard:terminal",
        "keyboard: no X display reachable (DISPLAY is unset) and stdin is not a terminal; run under a desktop "
        "session (--device keyboard:x11) or in an interactive terminal (--device keyboard:terminal)",
    ]


def test_device_spec_and_keymap() -> None:
    with pytest.raises(DeviceError, match="allowed: keyboard, keyboard:x11, keyboard:terminal"):
        make_device("keyboard:joystick")
    assert make_device("keyboard:x11").config.backend == "x11"  # type: ignore[attr-defined]
    assert make_device("keyboard").config.backend == "auto"  # type: ignore[attr-defined]
    lines = keymap_lines()
    assert lines[0].startswith("w/s") and any(line.startswith("Esc") for line in lines)
    assert not any(line.startswith("w/s") for line in keymap_lines(motion=False))
