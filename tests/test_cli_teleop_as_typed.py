"""`x2 collect teleop --robot artixon-g`, exactly as typed, at a terminal: the task is asked for (Enter
takes the robot's reference task), the panel runs, keys drive the arm, Escape saves the episode and
quits. With no display the keyboard falls back to the terminal backend; under an X server (Xvfb,
keys typed with xdotool) pynput reads them, the usual desktop set-up."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.xvfb import Xvfb, require_x_tools

from x2.datasets import Dataset

# The 30 Hz loop paces these episodes by the wall clock: `make test` runs them alone, after the rest.
pytestmark = pytest.mark.realtime


class Screen:
    """Reads the terminal all the time (a full pty buffer would block the panel, and so the program)."""

    def __init__(self, fd: int):
        self.fd, self.seen, self._stop = fd, bytearray(), threading.Event()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen.extend(os.read(self.fd, 65536))
                except OSError:  # the child closed the terminal
                    return

    def wait_for(self, needle: bytes) -> None:
        """Until `needle` is on the screen, or the program closed its terminal without showing it (a program
        that hangs is stopped by the test timeout: no wall-clock deadline of ours to miss on a busy machine)."""
        while needle not in self.seen:
            if not self._thread.is_alive():  # the terminal is closed: what it showed is all there is
                assert needle in self.seen, f"the program ended without showing {needle!r}:\n{self.tail()}"
            time.sleep(0.05)

    def tail(self) -> str:
        return self.seen[-3000:].decode(errors="replace")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _press_w_then_escape(master: int, x: Xvfb | None) -> None:
    if x is None:  # the terminal: autorepeat sends the key ~20 times a second while held
        for _ in range(16):
            os.write(master, b"w")
            time.sleep(0.05)
        time.sleep(0.3)
        os.write(master, b"\x1b")
    else:  # the X server: a real press and release, typed into no window in particular (pynput's RECORD)
        x.xdotool("keydown", "w")
        time.sleep(0.8)
        x.xdotool("keyup", "w")
        time.sleep(0.3)
        x.xdotool("key", "Escape")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["terminal", "x11"])
def test_collect_teleop_as_typed(tmp_path: Path, where: str) -> None:
    with contextlib.ExitStack() as stack:
        x = None
        if where == "x11":
            require_x_tools()
            x = stack.enter_context(Xvfb())
        _run_session(tmp_path, x)
    ds = Dataset.open(tmp_path / "data" / "fruit_in_microwave")
    (rec,) = ds.episodes()
    with ds.load(rec.index) as ep:
        assert ep.attrs["teleop_end"] == "quit" and ep.attrs["robot"] == "artixon-g"
        ee = ep["observations/ee_pose"]
        moved = ee[-1, 1, :3] - ee[0, 1, :3]  # the keyboard starts on the right arm; w = forward (+x)
        assert 0.06 < moved[0] < 0.2 and np.abs(moved[1:]).max() < 0.01, moved  # 0.8 s at 15 cm/s, in reach
        assert np.allclose(ee[-1, 0, :3], ee[0, 0, :3], atol=0.01)  # the left arm stayed home
        twist = ep["device/keyboard/twist"]
        assert twist[:, 1, 0].max() == 1.0


def _run_session(tmp_path: Path, x: Xvfb | None) -> None:
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.update(MUJOCO_GL="egl", COLUMNS="120", LINES="40", TERM="xterm-256color")
    if x is not None:
        env["DISPLAY"] = x.display
    proc = subprocess.Popen([sys.executable, "-m", "x2", "collect", "teleop", "--robot", "artixon-g"], cwd=tmp_path,
                            env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    screen = Screen(master)
    try:
        screen.wait_for(b"task")  # the prompt, listing the tasks
        os.write(master, b"\r")  # Enter: the robot's reference task
        screen.wait_for(b"keys")  # the live panel is up
        screen.wait_for(b"x11 on" if x is not None else b"terminal, active arm")  # the backend in use
        screen.wait_for("▀".encode())  # the camera preview, drawn in half blocks
        time.sleep(0.5)
        _press_w_then_escape(master, x)
        proc.wait(timeout=60)
        screen.wait_for(b"teleop episodes")
    finally:
        if proc.poll() is None:
            proc.kill()
        screen.stop()
        os.close(master)
    assert proc.returncode == 0, screen.tail()
    assert b"Traceback" not in screen.seen
