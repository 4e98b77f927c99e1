"""`x2 devices ls | check | calibrate`: the calibration flow drives a leader arm on a fake Dynamixel
bus over a pty (the unmodified SDK talks to it) and the file it writes maps the home pose exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from helpers.fake_servo_bus import FakeDynamixelBus
from helpers.teleop_streams import home_stream
from helpers.x2_cli import HEADLESS_ENV, run_x2

from x2.devices.calibration import Calibration
from x2.envspec import load_robot


def test_ls_and_check(tmp_path: Path) -> None:
    run = run_x2(["devices", "ls"], tmp_path)
    assert run.returncode == 0, run.stderr
    for name in ("keyboard", "vr", "master-arm", "replay"):
        assert name in run.stdout
    stream = home_stream(tmp_path / "s.h5", 2.0, [(0.5, "next", -1)])
    run = run_x2(["devices", "check", "--device", f"replay:{stream}", "--seconds", "1.5"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert "1 events" in run.stdout
    bad = run_x2(["devices", "check", "--device", "joystick"], tmp_path)
    assert bad.returncode == 2 and "--device: found 'joystick'" in bad.stderr and "Traceback" not in bad.stderr


def _wait_for(proc: subprocess.Popen, text: str, out: list[str]) -> None:
    """Read the command's output until `text` (a command that hangs is stopped by the test timeout)."""
    while not any(text in chunk for chunk in out):
        chunk = os.read(proc.stdout.fileno(), 4096).decode()
        assert chunk, f"the command closed its output before {text!r}:\n" + "".join(out)
        out.append(chunk)


def test_calibrate_from_the_home_pose(tmp_path: Path) -> None:
    home = np.concatenate([a.home for a in load_robot("artixon-g").model.arms])
    rng = np.random.default_rng(4)
    # A leader assembled with arbitrary horn offsets, joint 2 mounted the other way round.
    offsets = rng.integers(1000, 3000, 12)
    signs = np.ones(12)
    signs[1] = -1
    at_home = np.round(offsets + signs * home * 4096 / (2 * np.pi)).astype(int)
    servo_ticks = {i + 1: 0 for i in range(14)}
    joint_slots = [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12]
    for k, slot in enumerate(joint_slots):
        servo_ticks[slot + 1] = int(at_home[k])
    servo_ticks[7], servo_ticks[14] = 1500, 1600  # grippers closed
    cal_dir = tmp_path / "cal"
    with FakeDynamixelBus(range(1, 15)) as bus:
        bus.set_ticks(servo_ticks)
        proc = subprocess.Popen([sys.executable, "-m", "x2", "devices", "calibrate", "--device",
                                 f"master-arm:{bus.path}", "--flip", "2"], cwd=tmp_path,
                                env={**HEADLESS_ENV, "X2_CALIBRATION_DIR": str(cal_dir)}, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out: list[str] = []
        _wait_for(proc, "1/2", out)
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        _wait_for(proc, "2/2", out)
        bus.set_ticks({7: 2100, 14: 2300})  # grippers opened
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, "".join(out) + rest.decode()
    (path,) = cal_dir.glob("*.json")
    calib = Calibration.load(path)
    assert json.loads(path.read_text())["signs"][1] == -1
    ticks = np.array([servo_ticks[i + 1] for i in range(14)], float)
    joints = calib.to_joints(ticks)
    np.testing.assert_allclose(joints[joint_slots], home, atol=1e-9)
    assert joints[6] == 0.0 and joints[13] == 0.0  # closed
    ticks[6], ticks[13] = 2100, 2300
    opened = calib.to_joints(ticks)
    assert opened[6] == 1.0 and opened[13] == 1.0
