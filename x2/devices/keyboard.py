"""`keyboard[:x11|terminal]`: Cartesian jog and episode lifecycle keys.

Samples are `twist` (2, 6): per arm [vx, vy, vz, wx, wy, wz] as unit fractions in [-1, 1] (the teleop
mapper scales them to speeds); only the active arm's row is non-zero. The device starts on arm 1
(right, the usual dominant hand) and Tab switches arms. A sample is published on every change and at
`heartbeat_hz` so its age stays fresh while a key is held or nothing is pressed. With `motion=False`
(lifecycle keys beside a VR or master-arm device) motion keys are ignored and nothing is published;
events still are.

Backends:

- x11: a pynput listener on the X server's RECORD extension sees presses and releases typed into any
  window, so the operator can keep the viewer focused. Under Wayland it only sees keys typed into
  X11 (XWayland) windows. Several motion keys can be held at once. A terminal on stdin stops echoing
  meanwhile and its unread keys are dropped on close, so jog keys never end up in the shell.
- terminal: the controlling terminal in cbreak mode (Ctrl-C still interrupts). Terminals send no key
  releases and repeat only the last key held, so a motion key is held while its bytes keep arriving
  (see `KeyboardConfig.first_latch_s`) and only one motion key at a time is reliable.
- auto: x11 when DISPLAY is set and the listener starts, else the terminal.

A key's event fires when it goes down, not on autorepeat, so holding Right does not skip episodes. In
the terminal a key counts as down while its latch runs, so a second press of the same key within
`first_latch_s` is taken for autorepeat too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

import numpy as np

from x2.devices.base import DeviceBase, DeviceError

if TYPE_CHECKING:  # pynput (typed by types-pynput) is imported when the x11 backend opens
    from pynput.keyboard import Key, KeyCode, Listener

ARMS = ("left", "right")
START_ARM = 1  # right: the usual dominant hand

# (key, opposite key, axis of [vx, vy, vz, wx, wy, wz], sign of the first key, help text); robot base frame,
# x forward, y left, z up.
MOTION_PAIRS: tuple[tuple[str, str, int, float, str], ...] = (
    ("w", "s", 0, 1.0, "forward / back (+x / -x)"),
    ("a", "d", 1, 1.0, "left / right (+y / -y)"),
    ("r", "f", 2, 1.0, "up / down (+z / -z)"),
    ("u", "o", 3, -1.0, "roll - / + (wx)"),
    ("i", "k", 4, 1.0, "pitch + / - (wy)"),
    ("j", "l", 5, 1.0, "yaw + / - (wz)"),
)
MOTION_KEYS: dict[str, tuple[int, float]] = {
    key: (axis, s) for one, other, axis, sign, _ in MOTION_PAIRS for key, s in ((one, sign), (other, -sign))
}
# key name -> event kind (see base.EVENTS); "arm" switches the active arm first.
ACTION_KEYS: dict[str, str] = {
    "tab": "arm",
    "b": "base",
    "space": "gripper",
    "enter": "engage",
    "right": "next",
    "left": "rerecord",
    "backspace": "discard",
    "delete": "discard",
    "esc": "quit",
}
_ACTION_HELP = (
    ("Tab", "switch arm"),
    ("B", "drive the base (w/s a/d j/l) / the arms"),
    ("Space", "toggle gripper"),
    ("Enter", "pause / resume the arms"),
    ("Right", "next episode"),
    ("Left", "re-record"),
    ("Bksp/Del", "discard"),
    ("Esc", "quit"),
)


def keymap_lines(motion: bool = True) -> list[str]:
    """Short lines for an on-screen help panel."""
    lines = [f"{one}/{other:<7} {text}" for one, other, _, _, text in MOTION_PAIRS] if motion else []
    return lines + [f"{key:<9} {text}" for key, text in _ACTION_HELP]


Backend = Literal["auto", "x11", "terminal"]
BACKENDS: tuple[str, ...] = ("auto", "x11", "terminal")


@dataclass(frozen=True)
class KeyboardConfig:
    backend: Backend = "auto"
    heartbeat_hz: float = 50.0
    # Terminal only. Autorepeat starts ~0.5 s after a key goes down (X: `xset q`, desktops: 0.5-0.6 s)
    # and then repeats every ~30-40 ms; with no release events, a first press must outlast that delay
    # and each repeat byte must bridge one repeat interval, else a held key would stutter.
    first_latch_s: float = 0.55
    repeat_latch_s: float = 0.12
    motion: bool = True

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise DeviceError(f"keyboard backend: found {self.backend!r}; allowed: {', '.join(BACKENDS)}")
        for name in ("heartbeat_hz", "first_latch_s", "repeat_latch_s"):
            if not getattr(self, name) > 0:
                raise DeviceError(f"keyboard {name}: found {getattr(self, name)}; allowed: a positive number")


class _Unavailable(DeviceError):
    """One backend cannot run here; `reason` lets "auto" combine two of them into one sentence."""

    def __init__(self, reason: str, hint: str):
        super().__init__(f"keyboard: {reason}; {hint}")
        self.reason = reason


_X11_HINT = "run under a desktop session or use --device keyboard:terminal"
_TERMINAL_HINT = "run x2 from an interactive terminal or use --device keyboard:x11 under a desktop session"
_LISTENER_START_S = 3.0
# A terminal's attributes, as termios.tcgetattr gives them and tcsetattr takes them back.
_TermAttrs = list[int | list[bytes | int]]


class KeyboardDevice(DeviceBase):
    name = "keyboard"
    kind = "keyboard"

    def __init__(self, config: KeyboardConfig | None = None, fd: int | None = None):
        super().__init__()
        self.config = config or KeyboardConfig()
        self._fd = fd  # the terminal to read (terminal) or keep quiet (x11); None = stdin
        self._state = threading.Lock()  # guards the fields below; taken before DeviceBase's lock
        self._active = START_ARM
        self._down: set[str] = set()  # mapped keys currently down (terminal: latched)
        self._latch: dict[str, float] = {}  # terminal: key -> monotonic time it releases
        self._last_publish = -np.inf
        self._backend = ""
        self._listener: Listener | None = None
        self._tty: int | None = None  # fd whose attributes we changed
        self._tty_saved: _TermAttrs | None = None
        self._decoder = _TerminalDecoder()

    @classmethod
    def from_arg(cls, arg: str | None) -> KeyboardDevice:
        if arg not in (None, "x11", "terminal"):
            raise DeviceError(f"--device: found 'keyboard:{arg}'; allowed: keyboard, keyboard:x11, keyboard:terminal")
        return cls(KeyboardConfig(backend=cast(Backend, arg or "auto")))

    @property
    def backend(self) -> str:
        """The backend in use while connected ("x11" or "terminal"), else ""."""
        return self._backend

    @property
    def active_arm(self) -> int:
        return self._active

    # ---- lifecycle -------------------------------------------------------------------------------
    def _open(self) -> None:
        with self._state:
            self._active, self._down, self._latch = START_ARM, set(), {}
        choice = self.config.backend
        if choice == "x11":
            self._open_x11()
        elif choice == "terminal":
            self._open_terminal()
        else:
            try:
                self._open_x11()
            except _Unavailable as x11:
                try:
                    self._open_terminal()
                except _Unavailable as term:
                    raise DeviceError(
                        f"keyboard: {x11.reason} and {term.reason}; run under a desktop session "
                        "(--device keyboard:x11) or in an interactive terminal (--device keyboard:terminal)"
                    ) from None
        self._update_detail()
        if self.config.motion:
            with self._state:
                self._publish_twist()  # latest() has a (zero) sample as soon as connect() returns

    def _close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            _stop_listener(listener)
        self._restore_tty()
        with self._state:
            self._down.clear()
            self._latch.clear()
        self._backend = ""

    # ---- x11 -------------------------------------------------------------------------------------
    def _open_x11(self) -> None:
        display = os.environ.get("DISPLAY", "")
        if not display:
            raise _Unavailable("no X display reachable (DISPLAY is unset)", _X11_HINT)
        _check_x_server(display)
        try:
            from pynput import keyboard
        except ModuleNotFoundError as exc:
            if exc.name != "pynput":
                raise _Unavailable(f"no X display reachable (DISPLAY={display})", _X11_HINT) from None
            raise _Unavailable("the X11 backend needs pynput (pip install 'x2[keyboard]')",
                               "or use --device keyboard:terminal") from None
        except Exception:  # pynput's import connects to the X server and raises ImportError if it can't
            raise _Unavailable(f"no X display reachable (DISPLAY={display})", _X11_HINT) from None
        names: dict[Key | KeyCode | None, str] = {
            keyboard.Key.tab: "tab", keyboard.Key.space: "space", keyboard.Key.enter: "enter",
            keyboard.Key.right: "right", keyboard.Key.left: "left", keyboard.Key.backspace: "backspace",
            keyboard.Key.delete: "delete", keyboard.Key.esc: "esc"}

        def key_name(key: Key | KeyCode | None) -> str | None:
            # pynput's X11 vk is the keysym, which Shift changes ('w' 119 down, 'W' 87 up); the lowercased
            # char is the same both ways, so Shift or Caps Lock never leave a motion key held.
            if key in names:
                return names[key]
            char: str | None = getattr(key, "char", None)  # KeyCode's; a Key has none
            return char.lower() if char else None

        # A listener that missed its start deadline may still come up later: only the adopted one counts.
        def on_press(key: Key | KeyCode | None, injected: bool = False) -> None:
            if self._listener is listener and (name := key_name(key)) is not None:
                self._key_down(name)

        def on_release(key: Key | KeyCode | None, injected: bool = False) -> None:
            if self._listener is listener and (name := key_name(key)) is not None:
                self._key_up(name)

        listener = keyboard.Listener(on_press=on_press, on_release=on_release)
        listener.start()
        # Listener.wait() never returns if the listener thread dies before it is ready, so wait on a side
        # thread and watch both.
        ready = threading.Thread(target=listener.wait, name="x2-keyboard-ready", daemon=True)
        ready.start()
        deadline = time.monotonic() + _LISTENER_START_S
        while ready.is_alive():
            if not listener.is_alive() or time.monotonic() > deadline:
                raise _Unavailable(f"the X11 key listener did not start on DISPLAY={display}",
                                   "use --device keyboard:terminal")
            ready.join(0.01)
        self._listener, self._backend = listener, "x11"
        self._quiet_tty(required=False)  # keys typed into this terminal must not echo or reach the shell later
        self._run_reader(self._x11_tick, "x2-keyboard")

    def _x11_tick(self) -> None:
        if self._stop.wait(self._until_heartbeat(time.monotonic())):
            return
        listener = self._listener
        if listener is not None and not listener.is_alive():
            self._release_all()
            raise RuntimeError(f"the X11 key listener stopped (X server on {os.environ.get('DISPLAY')} gone?)")
        self._heartbeat()

    # ---- terminal --------------------------------------------------------------------------------
    def _open_terminal(self) -> None:
        self._quiet_tty(required=True)
        self._backend = "terminal"
        self._decoder = _TerminalDecoder()
        self._run_reader(self._terminal_tick, "x2-keyboard")

    def _terminal_tick(self) -> None:
        fd = self._tty
        assert fd is not None
        try:
            now = time.monotonic()
            ready, _, _ = select.select([fd], [], [], self._terminal_wait(now))
            data = os.read(fd, 256) if ready else b""
            if ready and not data:
                raise RuntimeError("the terminal closed (end of input)")
            now = time.monotonic()
            for key in self._decoder.feed(data, now):
                self._terminal_key(key, now)
            self._expire(now)
            self._heartbeat()
        except BaseException:
            self._release_all()
            self._restore_tty()  # the operator's terminal must come back even if the reader dies
            raise

    def _terminal_wait(self, now: float) -> float:
        wait = self._until_heartbeat(now)
        with self._state:
            if self._latch:
                wait = min(wait, min(self._latch.values()) - now)
        pending = self._decoder.wait_s(now)
        if pending is not None:
            wait = min(wait, pending)
        return max(wait, 0.0)

    def _terminal_key(self, key: str, now: float) -> None:
        with self._state:
            if key in self._latch:  # autorepeat (or a re-press before the latch ran out): keep it down
                self._latch[key] = max(self._latch[key], now + self.config.repeat_latch_s)
                return
            if self._key_down_locked(key):
                self._latch[key] = now + self.config.first_latch_s

    def _expire(self, now: float) -> None:
        with self._state:
            for key in [k for k, t in self._latch.items() if t <= now]:
                del self._latch[key]
                self._key_up_locked(key)

    def _quiet_tty(self, required: bool) -> None:
        """cbreak without echo: keys arrive byte by byte, nothing is printed, Ctrl-C still works."""
        where = "stdin" if self._fd is None else f"fd {self._fd}"
        try:
            fd = sys.stdin.fileno() if self._fd is None else self._fd
            is_tty = os.isatty(fd)
        except (AttributeError, ValueError, OSError):
            is_tty = False
        if not is_tty:
            if required:
                raise _Unavailable(f"{where} is not a terminal", _TERMINAL_HINT)
            return
        try:
            saved = termios.tcgetattr(fd)
            quiet = termios.tcgetattr(fd)
            quiet[3] &= ~(termios.ICANON | termios.ECHO)
            quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except termios.error as exc:
            if required:
                raise _Unavailable(f"{where} cannot be switched to key-by-key input ({exc})", _TERMINAL_HINT) from None
            return
        self._tty, self._tty_saved = fd, saved
        atexit.register(self._restore_tty)

    def _restore_tty(self) -> None:
        with self._state:
            fd, saved, self._tty, self._tty_saved = self._tty, self._tty_saved, None, None
        if fd is None or saved is None:
            return
        atexit.unregister(self._restore_tty)
        # TCSAFLUSH also drops unread keys, so they do not land in the shell after x2 exits; a terminal
        # that is already gone has nothing to restore.
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSAFLUSH, saved)

    # ---- key state (both backends) ---------------------------------------------------------------
    def _key_down(self, key: str) -> None:
        with self._state:
            self._key_down_locked(key)

    def _key_up(self, key: str) -> None:
        with self._state:
            self._key_up_locked(key)

    def _key_down_locked(self, key: str) -> bool:
        """Apply a key going down; False if it is ignored (unmapped, already down, motion while motion=False)."""
        if key in self._down or (key in MOTION_KEYS and not self.config.motion):
            return False
        if key in MOTION_KEYS:
            self._down.add(key)
            self._publish_twist()
            return True
        kind = ACTION_KEYS.get(key)
        if kind is None:
            return False
        self._down.add(key)
        if kind == "arm":
            self._active = 1 - self._active
            self._emit("arm", self._active)
            self._update_detail()
            if self.config.motion and self._down & MOTION_KEYS.keys():
                self._publish_twist()
        else:
            self._emit(kind, self._active if kind == "gripper" else -1)
        return True

    def _key_up_locked(self, key: str) -> None:
        if key in self._down:
            self._down.discard(key)
            if key in MOTION_KEYS:
                self._publish_twist()

    def _release_all(self) -> None:
        with self._state:
            moving = bool(self._down & MOTION_KEYS.keys())
            self._down.clear()
            self._latch.clear()
            if moving:
                self._publish_twist()  # never leave a moving twist as the last sample

    def _until_heartbeat(self, now: float) -> float:
        period = 1.0 / self.config.heartbeat_hz
        return min(period, max(0.0, self._last_publish + period - now))

    def _heartbeat(self) -> None:
        if not self.config.motion:
            return
        with self._state:
            if time.monotonic() - self._last_publish >= 0.999 / self.config.heartbeat_hz:
                self._publish_twist()

    def _publish_twist(self) -> None:
        # Called with self._state held, so samples leave in the order the key changes happened.
        if not self.config.motion:
            return
        twist = np.zeros((2, 6))
        for key in self._down & MOTION_KEYS.keys():
            axis, sign = MOTION_KEYS[key]
            twist[self._active, axis] += sign
        self._last_publish = self._publish({"twist": np.clip(twist, -1.0, 1.0)}).t

    def _update_detail(self) -> None:
        where = f"x11 on {os.environ.get('DISPLAY', '')}" if self._backend == "x11" else self._backend
        keys = "" if self.config.motion else ", lifecycle keys only"
        self._set_detail(f"{where}, active arm {ARMS[self._active]}{keys}")


def _stop_listener(listener: Listener) -> None:
    # pynput (<= 1.8) disables the RECORD context on the connection that is blocked reading it, so the
    # listener (and its two X connections) lingers until the next key event anywhere. XRecord wants the
    # disable on another connection: send it on the listener's second one, as its own cleanup does.
    context, conn = getattr(listener, "_context", None), getattr(listener, "_display_stop", None)
    with contextlib.suppress(Exception):  # a listener whose X server is gone fails all of this
        listener.stop()
        if context is not None and conn is not None:
            conn.record_disable_context(context)
            conn.flush()
        listener.join(1.0)  # re-raises what a callback raised; that must not stop close()


def _check_x_server(display: str) -> None:
    """Fail with a clear sentence before pynput's listener thread would die with a traceback."""
    try:
        import Xlib.display
    except ImportError:  # not an Xlib platform: pynput's own import check decides
        return
    try:
        conn = Xlib.display.Display(display)
    except Exception:
        raise _Unavailable(f"no X display reachable (DISPLAY={display})", _X11_HINT) from None
    try:
        has_record = conn.has_extension("RECORD")
    finally:
        conn.close()
    if not has_record:
        raise _Unavailable(f"the X server on DISPLAY={display} lacks the RECORD extension the key listener needs",
                           "use --device keyboard:terminal")


# Escape sequences after ESC [ (CSI) or ESC O (SS3), without the prefix; others (Up, Down, F-keys) are ignored.
_SEQUENCES = {b"C": "right", b"D": "left", b"3~": "delete"}
_BYTES = {0x09: "tab", 0x20: "space", 0x0D: "enter", 0x0A: "enter", 0x7F: "backspace", 0x08: "backspace"}
_ESC = 0x1B


@dataclass
class _TerminalDecoder:
    """Terminal bytes -> key names. A sequence may span reads; a lone ESC is Escape once `esc_wait_s` passes."""

    esc_wait_s: float = 0.05
    _buf: bytearray = field(default_factory=bytearray)
    _pending_since: float | None = None

    def wait_s(self, now: float) -> float | None:
        """Seconds until a pending ESC resolves, None if nothing is pending."""
        return None if self._pending_since is None else max(0.0, self._pending_since + self.esc_wait_s - now)

    def feed(self, data: bytes, now: float) -> list[str]:
        self._buf += data
        timed_out = self._pending_since is not None and now - self._pending_since >= self.esc_wait_s
        keys: list[str] = []
        buf, i = self._buf, 0
        while i < len(buf):
            byte = buf[i]
            if byte != _ESC:
                key = _BYTES.get(byte) or (chr(byte).lower() if chr(byte).isascii() and chr(byte).isalpha() else None)
                if key:
                    keys.append(key)
                i += 1
                continue
            if i + 1 == len(buf) or buf[i + 1] == _ESC:
                if i + 1 == len(buf) and not timed_out:
                    break  # maybe the start of a sequence: wait for the rest
                keys.append("esc")
                i += 1
                continue
            if buf[i + 1] not in b"[O":
                i += 2  # ESC + key is Alt+key: ignored, so Alt combinations never quit
                continue
            end = i + 2
            if buf[i + 1] == ord("["):
                while end < len(buf) and 0x20 <= buf[end] <= 0x3F:  # CSI parameter and intermediate bytes
                    end += 1
            if end >= len(buf):
                if not timed_out and end - i < 16:
                    break
                i = len(buf)  # a truncated or runaway sequence: drop it
                continue
            if (key := _SEQUENCES.get(bytes(buf[i + 2 : end + 1]))) is not None:
                keys.append(key)
            i = end + 1
        del buf[:i]
        if not buf:
            self._pending_since = None
        elif self._pending_since is None or i:
            self._pending_since = now
        return keys
