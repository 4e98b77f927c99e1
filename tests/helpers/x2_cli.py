"""Running the real `x2` command in a subprocess, as a person with no display and no terminal would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# No display and no terminal: `--keys auto` adds no keyboard, a played-back stream ends the episodes.
HEADLESS_ENV = {**{k: v for k, v in os.environ.items() if k != "DISPLAY"}, "MUJOCO_GL": "egl"}


def run_x2(args: list[str], cwd: Path, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "x2", *args], cwd=cwd, env=HEADLESS_ENV, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=timeout, **kw)
