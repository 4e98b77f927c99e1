"""Device streams for teleop tests and benchmarks, made with x2's own pieces (not fakes of them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from x2.base.seeding import slot_seed
from x2.devices.stream import joint_stream, write_stream
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
