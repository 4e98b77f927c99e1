"""Device streams for teleop tests and benchmarks, made with x2's own pieces (not fakes of them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from x2.base.seeding import slot_seed
from x2.devices.base import EVENTS
from x2.devices.stream import joint_stream, stream_attrs, write_stream
from x2.envspec import load_env


def demo_stream(path: Path, task: str = "fruit_in_microwave", master_seed: int = 0) -> Path:
    """A leader-arm stream that solves `task` in the scene of teleop episode 0 under `master_seed`:
    a synthesised demonstration of exactly that seed, replayed as if a leader arm moved."""
    from x2.synth.attempt import SynthSession
    from x2.synth.options import SessionOptions

    out = SynthSession(SessionOptions(task)).attempt(0, slot_seed(master_seed, 0), keep_rejected=True)
    assert out.accepted and out.arrays is not None, f"synthesis of the fixture failed: {out.reason} {out.detail}"
    arrays, attrs = joint_stream(out.arrays["action"], 30, load_env(task).robot.action)
    write_stream(path, "master-arm", arrays, attrs)
    return path


def home_stream(path: Path, seconds: float, events: list[tuple[float, str, int]] = (),
                task: str = "pick_place", wiggle: float = 0.0) -> Path:
    """A leader held at the robot's home (optionally wiggling its wrists) with lifecycle events."""
    env = load_env(task)
    home = env.robot.home_action()
    t = np.arange(0.0, seconds, 1 / 30)
    actions = np.repeat(home[None], len(t), axis=0)
    if wiggle:
        for wrist in (5, 12):  # j6 of each arm
            actions[:, wrist] += wiggle * np.sin(2 * np.pi * 0.25 * t)
    arrays, attrs = joint_stream(actions, 30, env.robot.action, events=list(events))
    write_stream(path, "master-arm", arrays, attrs)
    return path


def keyboard_stream(path: Path, seconds: float, events: list[tuple[float, str, int]] = (),
                    forward_s: float = 0.0, rate_hz: float = 30.0) -> Path:
    """A keyboard's stream as `KeyboardDevice` publishes it (one (2, 6) twist per sample, the arms' rows left and
    right): `w` (forward) held on the right arm for the first `forward_s` seconds, then nothing; with
    lifecycle events (Esc is "quit", → "next")."""
    t = np.arange(0.0, seconds, 1 / rate_hz)
    twist = np.zeros((len(t), 2, 6))
    twist[t < forward_s, 1, 0] = 1.0
    ev = sorted(events)
    arrays = {"t": t, "seq": np.arange(len(t), dtype=np.int64), "twist": twist,
              "event_t": np.array([e[0] for e in ev], np.float64),
              "event_code": np.array([EVENTS.index(e[1]) for e in ev], np.int16),
              "event_arm": np.array([e[2] for e in ev], np.int16)}
    write_stream(path, "keyboard", arrays, stream_attrs("keyboard", ["twist"]))
    return path
