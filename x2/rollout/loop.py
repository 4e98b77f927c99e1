"""The one loop: teacher -> record -> step -> label, tick by tick, for every source of data.

Per tick t: hooks may edit the world, the teacher sees the state s_t and gives a_t, the DAG is
updated on s_t, (s_t, a_t, labels) are recorded, then the simulator advances one control tick.
So the stored state of frame t is exactly the state its labels were computed on, and `x2 label`
can recompute them from the file alone. Action t is applied between frame t and frame t + 1, as the
float32 the file stores (the teacher's float64 is rounded first), so stepping the stored actions from
the stored first state reproduces the stored states (`x2 replay --check`). The last frame's action is
recorded but never applied: the episode ended there.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from x2.format import Tick
from x2.rollout.clock import Clock, FreeClock
from x2.rollout.memory import MemoryRecorder
from x2.rollout.monitor import TaskMonitor
from x2.rollout.teacher import Observation, Teacher
from x2.sim.backend import Backend, Contact, ResetInfo, SimulationUnstable

TickHook = Callable[[int, Backend], None]
PENETRATION_LIMIT_M = 0.005  # deeper than this, a contact is bodies passing through each other, not contact
STAGES = ("teacher", "label", "record", "step")


class Recorder(Protocol):
    """What the loop needs from an episode writer (`x2.datasets.EpisodeWriter` is one): one tick, by keyword."""

    def append(self, tick: Tick) -> None: ...


@dataclass
class EpisodeResult:
    seed: int
    reset: ResetInfo
    ticks: int
    success: bool
    failure: tuple[str, int, str] | None
    events: list[tuple[str, int]]
    missed_slots: int
    end_reason: str  # success | failure | teacher | horizon (or max_ticks) | unstable
    labels: dict[str, npt.NDArray[np.generic]] = field(default_factory=dict)
    dag: dict[str, object] = field(default_factory=dict)
    lateness_ms: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, np.float32))
    stage_ms: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    penetration: Penetration | None = None  # the deepest contact over the recorded frames


@dataclass(frozen=True)
class Penetration:
    """The deepest contact of an episode: how deep (m), at which frame, between which geoms."""

    depth: float
    frame: int
    contact: Contact | None

    def then(self, backend: Backend, frame: int) -> Penetration:
        """This, or the deepest contact of the backend's current state (frame `frame`) if that goes deeper."""
        depth = backend.penetration()
        return Penetration(depth, frame, backend.deepest_contact()) if depth > self.depth else self

    def describe(self) -> str:
        c = self.contact
        pair = f" between {c.geom1 or c.body1} and {c.geom2 or c.body2}" if c is not None else ""
        return f"{self.depth * 1e3:.1f} mm at frame {self.frame}{pair}"


@dataclass
class RolloutOptions:
    stop_on_success: bool = True
    stop_on_failure: bool = True
    max_ticks: int | None = None  # default: the task horizon (none with horizon=False)
    # False: the task's horizon_s ends nothing, only max_ticks when given (a person's episode ends when the person
    # says: x2.teleop.session)
    horizon: bool = True
    # False: the nodes' timeout_s, limits of synthesis, fail nothing (a person takes the time a person takes); the
    # episode's /dag says so (`timeouts`: false), so `x2 label` recomputes its labels the same way
    node_timeouts: bool = True
    hooks: Sequence[TickHook] = ()
    # a policy under evaluation may command what the physics cannot integrate: its episode ends there (end reason
    # "unstable", the frames so far kept) instead of the run; collectors let SimulationUnstable reject the attempt
    unstable_ends: bool = False
    # False: the loop reads no robot state or object poses: the teacher's observation carries none and each
    # recorded tick only its state, from which `Backend.observations` gives them afterwards, to the same bits
    # (x2/rollout/memory.py). For a teacher that acts through its own view of the simulator (synthesis): the
    # two reads cost ~18 us a tick beside the physics, the batch afterwards a third of that.
    observe: bool = True


class Rollout:
    def __init__(self, backend: Backend, clock: Clock | None = None):
        self.backend = backend
        self.env = backend.env
        self.clock = clock or FreeClock()
        task = self.env.task
        arms = [arm.name for arm in self.env.robot.arms]
        self.monitor = TaskMonitor(task, backend, self.env.fps, arms) if task is not None else None

    def run(self, teacher: Teacher, seed: int, recorder: Recorder | None = None,
            options: RolloutOptions | None = None) -> EpisodeResult:
        opts = options or RolloutOptions()
        if not opts.observe and recorder is not None and not isinstance(recorder, MemoryRecorder):
            raise ValueError("RolloutOptions(observe=False) records states alone: only a MemoryRecorder derives the "
                             "rest afterwards")
        backend, monitor, clock = self.backend, self.monitor, self.clock
        info = backend.reset(seed)
        teacher.reset(info, backend.home_action())
        if monitor is not None:
            monitor.reset(info.roles, timeouts=opts.node_timeouts)
        horizon: float = opts.max_ticks or (math.inf if not opts.horizon else
                                            round(self.env.task.horizon_s * self.env.fps) if self.env.task else 300)
        lateness: list[float] = []
        marks: list[tuple[float, float, float, float, float]] = []  # per tick, the five instants between stages
        end_reason = "horizon"
        perf = time.perf_counter
        observe = opts.observe
        states_only = recorder if isinstance(recorder, MemoryRecorder) and not observe else None
        deepest = Penetration(0.0, 0, None)
        clock.start()
        t = 0
        while t < horizon:
            late = clock.lateness_ms()
            for hook in opts.hooks:
                hook(t, backend)
            t0 = perf()
            robot = backend.robot_state() if observe else None
            objects = backend.object_poses() if observe else None
            action = teacher.act(Observation(t, backend.time, robot, objects, info.instruction, late))
            t1 = perf()
            if action is None:
                end_reason = "teacher"
                break
            action = np.asarray(action, dtype=np.float32)  # what the file keeps is what gets applied
            deepest = deepest.then(backend, t)  # the contacts of s_t, as a reader of the file recomputes them
            if monitor is not None:
                monitor.step(t)
            t2 = perf()
            lateness.append(late)
            if states_only is not None:
                states_only.append_state(backend.time, action, backend.get_state(), late)
            elif recorder is not None:
                assert robot is not None  # (a loop that does not observe records into a MemoryRecorder alone)
                recorder.append(Tick(timestamp=backend.time, action=action, qpos=robot.qpos, qvel=robot.qvel,
                                     ee_pose=robot.ee_pose, object_poses=objects, state=backend.get_state(),
                                     lateness_ms=late))
            t3 = perf()
            finished = monitor is not None and (
                (opts.stop_on_success and monitor.runtime.success)
                or (opts.stop_on_failure and monitor.runtime.failure is not None))
            unstable = False
            if not finished:
                try:
                    backend.step(action.astype(np.float64))
                except SimulationUnstable:
                    if not opts.unstable_ends:
                        raise
                    unstable = True
            marks.append((t0, t1, t2, t3, perf()))  # (the stages' times are taken apart once, after the loop)
            t += 1
            if unstable:
                end_reason = "unstable"
                break
            if finished:
                assert monitor is not None  # (only a monitor finishes an episode)
                end_reason = "success" if monitor.runtime.success else "failure"
                break
            clock.wait()
        rt = monitor.runtime if monitor is not None else None
        return EpisodeResult(
            seed=seed, reset=info, ticks=len(lateness), success=bool(rt and rt.success),
            failure=rt.failure if rt else None, events=list(rt.events) if rt else [],
            missed_slots=clock.missed, end_reason=end_reason,
            labels=monitor.labels() if monitor is not None and lateness else {},
            dag=monitor.dag_record() if monitor is not None else {},
            lateness_ms=np.asarray(lateness, np.float32),
            stage_ms=_stage_ms(marks),
            penetration=deepest,
        )


def _stage_ms(marks: list[tuple[float, float, float, float, float]]) -> dict[str, npt.NDArray[np.float32]]:
    """Each stage's milliseconds per tick, from the instants between stages."""
    spans = np.diff(np.asarray(marks, dtype=np.float64).reshape(-1, len(STAGES) + 1), axis=1) * 1e3
    return {stage: spans[:, i].astype(np.float32) for i, stage in enumerate(STAGES)}
