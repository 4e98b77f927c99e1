"""`x2 label`: recompute an episode's labels offline from its stored states.

The world is rebuilt from the specs named in the episode (task, robot, variant), reset with the
episode's seed (same assets, same layout), then every stored state is set and the same
`TaskMonitor` that ran online is stepped on it. Online and offline labels must agree exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from x2.datasets import Episode
from x2.errors import DatasetError
from x2.rollout.monitor import TaskMonitor
from x2.sim.layout import Placement
from x2.sim.mujoco.backend import MujocoBackend
from x2.spec import load_env


@dataclass
class RelabelReport:
    episode: int
    frames: int
    differences: list[str] = field(default_factory=list)
    events: list[tuple[str, int]] = field(default_factory=list)
    failure: tuple[str, int, str] | None = None
    success: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


def relabel(ep: Episode, task: str | None = None, robot: str | None = None) -> RelabelReport:
    attrs = ep.attrs
    env = load_env(task or str(attrs["task"]), robot=robot or str(attrs["robot"]),
                   variant=str(attrs.get("scene_variant") or "default"))
    if env.task is None:
        raise DatasetError(f"{ep.path}: task: found none; allowed: an episode recorded with a task")
    backend = MujocoBackend(env)
    info = backend.reset(int(attrs["seed"]))
    report = RelabelReport(ep.index, ep.frames)
    stored_layout = json.loads(attrs.get("layout") or "{}")
    if stored_layout:
        layout = {k: Placement(*v) for k, v in stored_layout.items()}
        if {k: v.as_list() for k, v in info.layout.items()} != stored_layout:
            report.notes.append("layout from the seed differs from the stored one; used the stored layout")
        backend.apply_layout(layout)
    if attrs.get("model_xml") and attrs["model_xml"] != backend.model_xml():
        report.notes.append("the specs changed since recording (model XML differs); labels may differ")
    states = ep["states"]
    if states.shape[1] != backend.state_size:
        raise DatasetError(f"{ep.path}: states: found {states.shape[1]} columns; allowed: {backend.state_size} "
                           f"for {env.robot.name} in {env.scene_name}")
    monitor = TaskMonitor(env.task, backend, env.fps)
    for t in range(len(states)):
        backend.set_state(states[t])
        monitor.step(t)
    rt = monitor.runtime
    report.events, report.failure, report.success = list(rt.events), rt.failure, rt.success
    fresh = monitor.labels()
    for key, arr in fresh.items():
        if f"labels/{key}" not in ep:
            report.differences.append(f"labels/{key}: missing in the episode")
            continue
        stored = ep[f"labels/{key}"]
        if stored.shape != arr.shape or not np.array_equal(stored, arr):
            bad = np.flatnonzero((stored != arr).reshape(len(arr), -1).any(axis=1)) if stored.shape == arr.shape \
                else []
            where = (f"first at frame {bad[0]}, {len(bad)} frames" if len(bad)
                     else f"shape {stored.shape} vs {arr.shape}")
            report.differences.append(f"labels/{key}: differs ({where})")
    if [tuple(e) for e in ep.events] != [tuple(e) for e in rt.events]:
        report.differences.append(f"events: stored {ep.events} vs recomputed {rt.events}")
    stored_failure = ep.failure
    if (tuple(stored_failure) if stored_failure else None) != (tuple(rt.failure) if rt.failure else None):
        report.differences.append(f"failure: stored {stored_failure} vs recomputed {rt.failure}")
    if bool(attrs.get("success")) != rt.success:
        report.differences.append(f"success: stored {bool(attrs.get('success'))} vs recomputed {rt.success}")
    backend.close()
    return report
