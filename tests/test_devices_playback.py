"""The raw device stream format and `playback:FILE` (alias `replay:FILE`): round trip, original timing,
episodes recorded without a device (their actions as a leader arm), and one-line errors for malformed files."""

from __future__ import annotations

import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from x2.devices import DeviceError, make_device, read_stream, write_stream
from x2.devices.stream import joint_stream
from x2.envspec.action import ActionLayout

LAYOUT = ActionLayout.for_arms([(arm, [f"{arm}_j{i}" for i in range(1, 7)]) for arm in ("left", "right")])


def _leader_file(path: Path, seconds: float = 0.3, events=()) -> Path:
    actions = np.linspace(0.0, 1.0, round(seconds * 30))[:, None] * np.ones((1, 14))
    arrays, attrs = joint_stream(actions, 30, LAYOUT, rate_hz=100, events=list(events))
    write_stream(path, "master-arm", arrays, attrs)
    return path


def test_round_trip_and_original_timing(tmp_path: Path) -> None:
    path = _leader_file(tmp_path / "s.h5", 0.3, [(0.15, "gripper", 1), (0.25, "next", -1)])
    stream = read_stream(path)
    assert stream.kind == "master-arm" and len(stream) == 27 and stream.events[0] == (0.15, "gripper", 1)
    dev = make_device(f"playback:{path}")
    with dev:
        assert dev.kind == "master-arm"
        time.sleep(0.2)
        start = time.monotonic()
        assert dev.latest() is None  # the playback clock starts at the first poll (the first tick)
        seen, events = [], []
        assert not dev.health().finished
        while not dev.health().finished:  # played out (0.26 s); a replay that never ends meets pytest's timeout
            seen.extend(dev.drain())
            events.extend(dev.events())
            time.sleep(0.01)
        seen.extend(dev.drain())
        events.extend(dev.events())
    assert [s.seq for s in seen] == list(range(len(stream)))
    offsets = np.array([s.t for s in seen]) - start
    # Republished at the recorded offsets, not all at once: never before its offset from the first poll.
    # (Not "at most so late": a busy machine can stall the thread for a third of a second, and then
    # the samples due meanwhile come together, as they should.)
    assert np.all(offsets >= stream.t - 1e-9) and np.all(np.diff(offsets) >= 0)
    np.testing.assert_array_equal(np.stack([s.values["joints"] for s in seen]), stream.values["joints"])
    assert [(e.kind, e.arm) for e in events] == [("gripper", 1), ("next", -1)]
    # Each event between the samples recorded around it, never before its own offset.
    for event, (t, _, _) in zip(events, stream.events, strict=True):
        assert event.t - start >= t - 1e-9
        assert all(s.t <= event.t for s, ts in zip(seen, stream.t, strict=True) if ts < t)
        assert all(s.t >= event.t for s, ts in zip(seen, stream.t, strict=True) if ts > t)


def test_an_episode_without_a_device_replays_its_actions(tmp_path: Path) -> None:
    path = tmp_path / "episode_000007.h5"
    actions = np.cumsum(np.full((60, 14), 0.01), axis=0)
    actions[:, [6, 13]] = np.linspace(1.0, 0.0, 60)[:, None]
    with h5py.File(path, "w") as f:
        f.attrs.update(fps=30, seed=1234, task="pick_place", robot="artixon-h", scene_variant="default",
                       episode_index=7)
        f["action"] = actions.astype(np.float32)
        f["action"].attrs["names"] = list(LAYOUT.names)  # as every x2 episode names its actions
    stream = read_stream(path)
    assert stream.kind == "master-arm"
    assert stream.source == {"task": "pick_place", "robot": "artixon-h", "seed": 1234, "scene_variant": "default",
                             "episode_index": 7}
    t = stream.t
    for j in (0, 6, 13):
        np.testing.assert_allclose(stream.values["joints"][:, j], np.interp(t, np.arange(60) / 30, actions[:, j]),
                                   atol=1e-6)
    assert stream.values["ticks"][0, 6] == 2048 + 1024  # an open gripper, as the default calibration reads


@pytest.mark.parametrize("case, message", [
    ("missing", "playback file: found no such file"),
    ("text", "playback file: found not an HDF5 file"),
    ("empty", "device: found no /device group and no /action"),
    ("kind", "device/x.kind: found 'joystick'; allowed: keyboard, vr, master-arm"),
    ("code", "device/x/event_code: found an unknown event"),
    ("rows", "device/x/joints: found 2 rows; allowed: 3 (one per sample)"),
    ("time", "device/x/t: found non-increasing or non-finite times"),
])
def test_malformed_streams_fail_in_one_line(tmp_path: Path, case: str, message: str) -> None:
    path = tmp_path / "bad.h5"
    if case == "text":
        path.write_text("not hdf5")
    elif case != "missing":
        with h5py.File(path, "w") as f:
            if case != "empty":
                g = f.create_group("device/x")
                g.attrs.update(kind="joystick" if case == "kind" else "master-arm", fields='["joints"]',
                               events='["engage", "next"]')
                g["t"] = [0.0, 0.2, 0.1] if case == "time" else [0.0, 0.1, 0.2]
                g["seq"] = [0, 1, 2]
                g["joints"] = np.zeros((2 if case == "rows" else 3, 14))
                g["event_t"], g["event_arm"] = [0.1], [-1]
                g["event_code"] = [5 if case == "code" else 1]
    with pytest.raises(DeviceError) as err:
        make_device(f"replay:{path}")
    text = str(err.value)
    assert message in text and str(path) in text and "\n" not in text
