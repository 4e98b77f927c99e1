"""`x2 doctor`: what this machine can do for x2, one line per thing, with the fix when it cannot.

Checks the renderer (the EGL vendor and a one-second render of the reference booth by the chosen backend's
renderer), Python and the
installed extras (LeRobot, rerun, the device SDKs), the SteamVR runtime, serial ports and whether they
can be opened, the display, and the free disk where data is written. Nothing here changes the machine.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

OK, MISSING, WARN, ABSENT = "ok", "missing", "warn", "-"
RENDER_SIZE = (240, 320)
MIN_PYTHON = (3, 12)  # LeRobot 0.6, behind x2 export lerobot
DISK_WARN_GB = 5.0
STEAMVR_PATHS = Path("~/.config/openvr/openvrpaths.vrpath")  # written by SteamVR when it first runs

# distribution -> (what needs it, how to get it)
EXTRAS: dict[str, tuple[str, str]] = {
    "lerobot": ("x2 export lerobot", "pip install 'x2[lerobot]'"),
    "rerun-sdk": ("x2 datasets view", "pip install 'x2[view]'"),
    "pynput": ("the X11 keyboard", "pip install 'x2[keyboard]'"),
    "openvr": ("the VR controller", "pip install 'x2[vr]'"),
    "dynamixel-sdk": ("a Dynamixel leader arm", "pip install 'x2[master-arm]'"),
    "feetech-servo-sdk": ("a Feetech leader arm", "pip install 'x2[master-arm]'"),
    "pyserial": ("leader-arm serial ports", "pip install 'x2[master-arm]'"),
}


@dataclass(frozen=True)
class Finding:
    name: str
    status: str  # ok | missing | warn | - (nothing there, and nothing needs it)
    detail: str
    fix: str = ""

    @property
    def failed(self) -> bool:
        return self.status == MISSING


def check_renderer(seconds: float = 1.0) -> Finding:
    backend = os.environ.get("MUJOCO_GL", "")
    fix = "apt install libegl1 libgl1-mesa-dri (Mesa's EGL), or MUJOCO_GL=osmesa"
    try:
        from x2.envspec import load_env
        from x2.sim import ImageSize, make_backend

        world = make_backend(load_env("fruit_in_microwave"))
        try:
            world.reset(0)
            with world.renderer(("head",), ImageSize(*RENDER_SIZE)) as renderer:
                renderer.set_state(world.get_state())
                vendor = _gl_vendor()
                frames, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds:
                    renderer.render("head")
                    frames += 1
                rate = frames / (time.perf_counter() - start)
        finally:
            world.close()
    except Exception as exc:  # any failure to make a context is the finding itself
        return Finding("renderer", MISSING, f"MUJOCO_GL={backend or '(unset)'}: {type(exc).__name__}: {exc}", fix)
    return Finding("renderer", OK, f"MUJOCO_GL={backend or '(unset)'}, {vendor}: {rate:.0f} frames/s "
                                   f"(head camera, {RENDER_SIZE[0]}x{RENDER_SIZE[1]}, fruit_in_microwave)")


def _gl_vendor() -> str:
    try:
        from OpenGL import GL

        vendor, renderer = GL.glGetString(GL.GL_VENDOR), GL.glGetString(GL.GL_RENDERER)
        return f"{vendor.decode()} {renderer.decode()}"
    except Exception:  # PyOpenGL absent or another platform: the render speed still says enough
        return "GL vendor unknown"


def check_python() -> Finding:
    version = ".".join(map(str, sys.version_info[:3]))
    if tuple(sys.version_info[:2]) < MIN_PYTHON:
        return Finding("python", MISSING, f"{version} at {sys.executable}", "Python >= 3.12 (LeRobot 0.6 needs it)")
    return Finding("python", OK, f"{version} at {sys.executable}")


def check_extras() -> list[Finding]:
    out = []
    for dist, (needed_by, fix) in EXTRAS.items():
        try:
            out.append(Finding(dist, OK, f"{importlib.metadata.version(dist)} ({needed_by})"))
        except importlib.metadata.PackageNotFoundError:
            out.append(Finding(dist, MISSING, f"not installed ({needed_by})", fix))
    return out


def check_steamvr() -> Finding:
    paths = STEAMVR_PATHS.expanduser()
    if paths.is_file():
        return Finding("steamvr", OK, f"runtime registered in {paths}")
    return Finding("steamvr", MISSING, f"no runtime registered ({paths} missing; the VR controller needs it)",
                   "install SteamVR and start it once")


def check_serial() -> Finding:
    try:
        from serial.tools import list_ports
    except ImportError:
        return Finding("serial", MISSING, "pyserial not installed: ports cannot be listed", EXTRAS["pyserial"][1])
    ports = sorted(p.device for p in list_ports.comports())
    if not ports:
        return Finding("serial", ABSENT, "no serial ports (a leader arm shows up as /dev/ttyUSB* or /dev/ttyACM*)")
    closed = [p for p in ports if not os.access(p, os.R_OK | os.W_OK)]
    listing = ", ".join(f"{p} ({'no access' if p in closed else 'read/write'})" for p in ports)
    if closed:
        return Finding("serial", WARN, listing, "sudo usermod -aG dialout $USER, then log in again")
    return Finding("serial", OK, listing)


def check_display() -> Finding:
    display = os.environ.get("DISPLAY", "")
    if not display:
        return Finding("display", MISSING, "DISPLAY unset: the keyboard reads the terminal, the viewer writes .rrd "
                                           "files", "run from a desktop session, or ssh -X")
    number = display.rpartition(":")[2].split(".")[0]
    socket = Path(f"/tmp/.X11-unix/X{number}")
    if display.startswith(":") and not socket.exists():
        return Finding("display", WARN, f"DISPLAY={display} but no X server socket at {socket}",
                       "start the X server or fix DISPLAY")
    return Finding("display", OK, f"DISPLAY={display}")


def check_disk(where: Path) -> Finding:
    probe = where.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    usage = shutil.disk_usage(probe)
    free_gb = usage.free / 1e9
    detail = f"{free_gb:.1f} GB free of {usage.total / 1e9:.0f} GB at {probe}"
    if free_gb < DISK_WARN_GB:
        return Finding("disk", WARN, detail + " (a rendered episode takes 20-60 MB)", "free space, or write elsewhere")
    return Finding("disk", OK, detail)


def diagnose(workspace: Path, render_seconds: float = 1.0,
             progress: Callable[[str], None] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    steps: list[tuple[str, Callable[[], Finding | list[Finding]]]] = [
        ("renderer", lambda: check_renderer(render_seconds)), ("python", check_python), ("extras", check_extras),
        ("steamvr", check_steamvr), ("serial", check_serial), ("display", check_display),
        ("disk", lambda: check_disk(workspace)),
    ]
    for name, step in steps:
        if progress is not None:
            progress(name)
        found = step()
        findings.extend(found if isinstance(found, list) else [found])
    return findings
