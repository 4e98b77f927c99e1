"""Importing x2 (the CLI included) never imports a device SDK: each is imported when its device connects."""

from __future__ import annotations

import subprocess
import sys

SDKS = ("pynput", "openvr", "dynamixel_sdk", "scservo_sdk", "serial", "Xlib", "evdev")


def test_no_device_sdk_at_import() -> None:
    code = ("import sys, x2, x2.devices, x2.teleop, x2.cli.app, x2.cli.teleop, x2.cli.devices; "
            f"print([m for m in sys.modules if m.split('.')[0] in {SDKS!r}])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
