"""`x2 label`: recompute an episode's labels offline from its stored states.

The world comes from the file (`open_world`: its model XML and its compiled task), every stored state is
set and the same `TaskMonitor` that ran online is stepped on it, so online and offline labels agree
exactly whatever today's specs say; the arms each node ran on come from the file's /dag `arms` too, and whether
the nodes' timeouts applied from its `timeouts` (a teleoperated episode ran without them). With
`specs="current"` the task is compiled from today's specs instead (same world, today's DAG and predicates):
relabelling on purpose after a spec change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Ints
from x2.base.errors import DatasetError, X2Error
from x2.datasets import Episode
from x2.datasets.difference import describe, first_difference
from x2.envspec import load_env
from x2.envspec.env import EnvSpec, TaskSpec
from x2.envspec.record import env_record
from x2.envspec.roles import bind_task
from x2.recorded.world import open_world
from x2.rollout.monitor import TaskMonitor

Specs = Literal["file", "current"]


@dataclass
class RelabelReport:
    episode: int
    frames: int
    specs: Specs = "file"
    differences: list[str] = field(default_factory=list)
    events: list[tuple[str, int]] = field(default_factory=list)
    failure: tuple[str, int, str] | None = None
    success: bool = False
    notes: list[str] = field(default_factory=list)
    labels: dict[str, npt.NDArray[np.generic]] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        return not self.differences


def _today(env: EnvSpec) -> EnvSpec:
    """The same task, robot and variant compiled from today's specs."""
    assert env.task is not None
    return load_env(env.task.name, robot=env.robot.name, variant=env.variant)


def spec_drift(stored: Mapping[str, object], env: EnvSpec) -> str | None:
    """How today's specs differ from the world record stored in an episode (first difference), if they do."""
    try:
        today = env_record(_today(env))
    except X2Error as exc:
        return f"today's specs cannot compile this task ({exc})"
    found = first_difference(stored, today)
    if found is None:
        return None
    where, was, now = found
    return f"{where} is {describe(now)} today, {describe(was)} in the file"


def _stored_arms(ep: Episode, monitor: TaskMonitor) -> None:
    """Attribute each node to the arms the episode says it ran on (what synthesis decided when it ran, which
    today's spec cannot say for `arm: auto`); a node the file does not name, or a file from before the map was
    kept, is on every arm."""
    stored = ep.node_arms or {}
    for node in monitor.task.node_ids:
        arms = stored.get(node, monitor.arm_names)
        unknown = [a for a in arms if a not in monitor.arm_names]
        if unknown:
            raise DatasetError(f"{ep.path}: dag/arms/{node}: found arm {unknown[0]!r}; "
                               f"allowed: arms of the robot {list(monitor.arm_names)}")
        monitor.assign_arms(node, arms)


def relabel(ep: Episode, specs: Specs = "file") -> RelabelReport:
    with open_world(ep) as world:
        env = world.env
        if env.task is None:
            raise DatasetError(f"{ep.path}: task: found none; allowed: an episode recorded with a task")
        report = RelabelReport(ep.index, ep.frames, specs)
        drift = spec_drift(world.record, env)
        task: TaskSpec = bind_task(env.task, world.roles)
        if specs == "current":
            task = bind_task(_today(env).task or env.task, world.roles)
            if drift:
                report.notes.append(f"relabelled with today's specs, which differ from the file's: {drift}")
        elif drift:
            report.notes.append(f"today's specs differ from the file's ({drift}); relabelled from the file "
                                "(--specs current uses today's)")
        backend = world.backend
        monitor = TaskMonitor(task, backend, env.fps, [arm.name for arm in env.robot.arms])
        monitor.reset(timeouts=ep.node_timeouts)  # (a teleoperated episode ran without the nodes' timeouts)
        _stored_arms(ep, monitor)
        states = ep[fmt.STATES]
        for t in range(len(states)):
            backend.set_state(states[t])
            monitor.step(t)
    rt = monitor.runtime
    report.events, report.failure, report.success = list(rt.events), rt.failure, rt.success
    fresh = monitor.labels()
    report.labels = fresh
    for key, arr in fresh.items():
        path = fmt.label_path(key)
        if path == fmt.ARM_SUBTASK_INDEX and path not in ep:
            report.notes.append(f"{path}: not in this episode (recorded before per-arm labels); computed with "
                                "every node on every arm")
            continue
        if path not in ep:
            report.differences.append(f"{path}: missing in the episode")
            continue
        stored = ep[path]
        if stored.shape != arr.shape or not np.array_equal(stored, arr):
            bad: Ints | list[int] = []
            if stored.shape == arr.shape:
                bad = np.flatnonzero((stored != arr).reshape(len(arr), -1).any(axis=1))
            where = (f"first at frame {bad[0]}, {len(bad)} frames" if len(bad)
                     else f"shape {stored.shape} vs {arr.shape}")
            report.differences.append(f"{path}: differs ({where})")
    if fmt.ARM_SUBTASK_INDEX in ep and ep.arm_names != list(monitor.arm_names):
        report.differences.append(f"{fmt.ARM_SUBTASK_INDEX}: arms stored {ep.arm_names} vs the robot's "
                                  f"{list(monitor.arm_names)}")
    if [tuple(e) for e in ep.events] != [tuple(e) for e in rt.events]:
        report.differences.append(f"events: stored {ep.events} vs recomputed {rt.events}")
    stored_failure = ep.failure
    if (tuple(stored_failure) if stored_failure else None) != (tuple(rt.failure) if rt.failure else None):
        report.differences.append(f"failure: stored {stored_failure} vs recomputed {rt.failure}")
    if ep.success != rt.success:
        report.differences.append(f"success: stored {ep.success} vs recomputed {rt.success}")
    return report
