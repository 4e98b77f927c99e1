"""A throwaway X server (Xvfb) and xdotool key presses for tests of X11 input devices."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

MISSING_HINT = "install xvfb and xdotool (make system-deps)"


def require_x_tools() -> None:
    """Fail, not skip: a machine without these silently stops testing the X11 path."""
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not found: {MISSING_HINT}", pytrace=False)


class Xvfb:
    """`with Xvfb() as x:` runs an X server on a free display; `x.display` is ':N'."""

    def __init__(self, screen: str = "640x480x24", start_timeout_s: float = 10.0):
        self.screen, self.start_timeout_s = screen, start_timeout_s
        self.display = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Xvfb:
        # -displayfd: the server picks a free display itself and writes its number once it listens, so
        # parallel test runs never race for the same :N. -noreset: by default the server resets when its
        # last client leaves and refuses connections meanwhile (a desktop always has clients; a test not).
        read_end, write_end = os.pipe()
        deadline = time.monotonic() + self.start_timeout_s
        with tempfile.TemporaryFile() as log:
            try:
                self._proc = subprocess.Popen(
                    ["Xvfb", "-displayfd", str(write_end), "-screen", "0", self.screen, "-nolisten", "tcp", "-noreset"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, pass_fds=(write_end,))
            finally:
                os.close(write_end)
            number = b""
            try:
                while not number.endswith(b"\n"):
                    ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
                    chunk = os.read(read_end, 16) if ready else b""
                    if not chunk:  # timed out, or the server exited
                        break
                    number += chunk
            finally:
                os.close(read_end)
            socket = Path(f"/tmp/.X11-unix/X{number.decode().strip()}")
            while number.endswith(b"\n") and not socket.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            if not number.endswith(b"\n") or not socket.exists():
                self.__exit__()
                log.seek(0)
                raise RuntimeError(f"Xvfb did not start; its output: {log.read()[-500:]!r}")
        self.display = f":{number.decode().strip()}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def xdotool(self, *args: str) -> None:
        env = {**os.environ, "DISPLAY": self.display}
        subprocess.run(["xdotool", *args], env=env, check=True, timeout=10,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
