"""`x2 devices ...`: what input devices x2 knows, a live check of one, and leader-arm calibration."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import Annotated

import numpy as np
import typer
from rich.live import Live
from rich.table import Table

from x2.cli._common import console, fail
from x2.cli.group_class import typer_group
from x2.devices import EXAMPLES, Device, make_device
from x2.devices.calibration import JOINTS, calibration_dir, calibration_path
from x2.devices.leader_calibration import calibrate_leader, parse_flips
from x2.devices.master_arm import MasterArmDevice
from x2.envspec import load_robot

app = typer_group(
    "devices", "Input devices: list them, check one live, calibrate a leader arm.",
    "  x2 devices ls\n\n"
    "  x2 devices check --device keyboard\n\n"
    "  x2 devices calibrate --device master-arm:/dev/ttyUSB0 --robot artixon-g",
)

DeviceOpt = Annotated[str, typer.Option("--device", "-D", help=f"device: {', '.join(EXAMPLES)}")]
# What each kind needs, for `ls`: the SDK module (found without importing it) and how to install it.
NEEDS = {
    "keyboard": ("pynput", "x2[keyboard]; without a display the terminal backend needs nothing"),
    "vr": ("openvr", "x2[vr], and SteamVR running with the headset connected"),
    "master-arm": ("dynamixel_sdk", "x2[master-arm] (Dynamixel and Feetech SDKs, pyserial)"),
    "playback": (None, "a stream or episode file (alias: replay)"),
}


@app.command("ls")
def ls() -> None:
    """List device kinds, whether their SDK is installed, serial ports and stored calibrations.

    Example: [cyan]x2 devices ls[/cyan]
    """
    table = Table(title="devices", title_justify="left")
    for col in ("device", "sdk", "needs"):
        table.add_column(col)
    for name, (module, needs) in NEEDS.items():
        have = "-" if module is None else ("installed" if importlib.util.find_spec(module) else "missing")
        table.add_row(name, have, needs)
    console.print(table)
    console.print(f"display: {os.environ.get('DISPLAY') or 'none (keyboard uses the terminal)'}; "
                  f"terminal: {'yes' if sys.stdin.isatty() else 'no'}")
    if importlib.util.find_spec("serial"):
        from serial.tools import list_ports

        ports = [f"{p.device} ({p.description}, serial {p.serial_number or '-'})" for p in list_ports.comports()]
        console.print("serial ports: " + ("; ".join(ports) if ports else "none"))
    folder = calibration_dir()
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    console.print(f"calibrations in {folder}: " + (", ".join(f.stem for f in files) if files else "none"))


def _sample_table(dev: Device) -> Table:
    h = dev.health()
    table = Table(title=f"{dev.name} ({dev.kind})", title_justify="left", show_header=False)
    age = "-" if not np.isfinite(h.age_s) else f"{h.age_s * 1e3:.0f} ms"
    table.add_row("health", f"{h.rate_hz:.0f} Hz, age {age}, drops {h.drops}, {h.detail}")
    latest = dev.latest()
    for key, value in (latest.values.items() if latest else ()):
        table.add_row(key, np.array2string(np.asarray(value), precision=3, suppress_small=True, max_line_width=100))
    return table


@app.command("check")
def check(device: DeviceOpt = "keyboard",
          seconds: Annotated[float, typer.Option("--seconds", min=0.5, help="how long to watch")] = 10.0) -> None:
    """Connect a device and show its live samples, rate, sample age and events (Ctrl-C stops).

    Example: [cyan]x2 devices check --device master-arm:/dev/ttyUSB0 --seconds 30[/cyan]
    """
    dev = make_device(device)
    events: list[str] = []
    with dev:
        deadline = time.monotonic() + seconds
        with Live(_sample_table(dev), console=console, refresh_per_second=4, transient=not console.is_terminal) as live:
            while time.monotonic() < deadline:
                events.extend(f"{e.kind}" + (f"(arm {e.arm})" if e.arm >= 0 else "") for e in dev.events())
                table = _sample_table(dev)
                table.add_row("events", ", ".join(events[-8:]) or "-")
                live.update(table)
                time.sleep(0.1)
        h = dev.health()
    console.print(f"{device}: {h.rate_hz:.0f} Hz, drops {h.drops}, {len(events)} events")


@app.command("calibrate")
def calibrate(
    device: DeviceOpt = "master-arm",
    robot: Annotated[str, typer.Option("--robot", "-r", help="robot whose home pose the leader is held in")] = (
        "artixon-g"),
    flip: Annotated[str, typer.Option("--flip", help="joints (1-12, left arm first) whose leader servo turns "
                                      "the other way, e.g. 2,8")] = "",
) -> None:
    """Calibrate a leader arm: hold it in the robot's home pose, then open both grippers. Writes
    ./.x2/calibration/<device id>.json (or under $X2_CALIBRATION_DIR), used from then on.

    Example: [cyan]x2 devices calibrate --device master-arm:/dev/ttyUSB0 --robot artixon-g[/cyan]
    """
    signs = parse_flips(flip)
    dev = make_device(device)
    if not isinstance(dev, MasterArmDevice):
        raise fail(f"--device: found {device!r}; allowed: master-arm[:[dynamixel|feetech:]PORT]")
    arms = load_robot(robot).model.arms
    home = np.concatenate([np.asarray(a.home, dtype=np.float64) for a in arms])
    if home.shape != (JOINTS,):
        raise fail(f"--robot: found {robot} with {home.size} arm joints; allowed: a robot with 2 arms of 6 joints")
    pose = ", ".join(f"{a.name} [{', '.join(f'{q:.2f}' for q in a.home)}]" for a in arms)
    with dev:
        console.print(f"leader arm on {dev.config.port} (device id [bold]{dev.device_id}[/bold])")
        calib = calibrate_leader(dev, home, signs, f"{robot}'s home pose ({pose} rad)",
                                 confirm=lambda step: typer.prompt(step, default="", show_default=False))
    path = calib.save(calibration_path(dev.device_id))
    console.print(f"saved [bold]{path}[/bold]; check it with [cyan]x2 devices check --device {device}[/cyan]")
