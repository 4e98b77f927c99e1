"""Teleoperation devices: asynchronous readers with latest()/events()/drain()/health().

Importing x2.devices imports no device SDK; each device module imports its SDK when it connects,
and a missing SDK, runtime, display or port becomes one `DeviceError` sentence.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from x2.devices.base import EVENTS, KINDS, Device, DeviceBase, DeviceError, DeviceEvent, DeviceHealth, Sample
from x2.devices.stream import Stream, StreamBuilder, read_stream, write_stream


class _FromArg(Protocol):
    """A device class of REGISTRY: made from the text after "name:" (or None)."""

    def from_arg(self, arg: str | None, /) -> Device: ...


# name -> (module, class), imported only when a device of that name is made; each class but playback's (made
# from its file) is a _FromArg.
REGISTRY: dict[str, tuple[str, str]] = {
    "keyboard": ("x2.devices.keyboard", "KeyboardDevice"),
    "vr": ("x2.devices.vr", "VRDevice"),
    "master-arm": ("x2.devices.master_arm", "MasterArmDevice"),
    "playback": ("x2.devices.playback", "PlaybackDevice"),
}
# Older spellings, kept so command lines typed before a rename still work.
ALIASES: dict[str, str] = {"replay": "playback"}
EXAMPLES = ("keyboard", "keyboard:terminal", "vr", "master-arm:/dev/ttyUSB0", "master-arm:feetech:/dev/ttyACM0",
            "playback:FILE.h5 (alias replay:FILE.h5)")


def make_device(spec: str) -> Device:
    """`keyboard[:x11|terminal]`, `vr`, `master-arm[:[dynamixel|feetech:]PORT]` or `playback:FILE`
    (alias `replay:FILE`)."""
    typed, _, arg = spec.partition(":")
    name = ALIASES.get(typed, typed)
    if name not in REGISTRY:
        raise DeviceError(f"--device: found {spec!r}; allowed: {', '.join(EXAMPLES)}")
    if name == "playback":
        if not arg:
            raise DeviceError(f"--device: found {typed!r} without a file; allowed: playback:FILE.h5, replay:FILE.h5")
        from x2.devices.playback import PlaybackDevice

        return PlaybackDevice(Path(arg))
    module, cls = REGISTRY[name]
    device_class: _FromArg = getattr(importlib.import_module(module), cls)
    return device_class.from_arg(arg or None)


__all__ = [
    "ALIASES", "EVENTS", "EXAMPLES", "KINDS", "REGISTRY", "Device", "DeviceBase", "DeviceError", "DeviceEvent",
    "DeviceHealth", "Sample", "Stream", "StreamBuilder", "make_device", "read_stream", "write_stream",
]
