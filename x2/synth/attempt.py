"""One synthesis attempt: a pure function of the session's options and the attempt's seed, run in a worker.

The attempt records into memory; the process that owns the dataset commits accepted attempts in
attempt order, so the dataset is the same bytes whatever the number of workers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from x2.base.errors import MotionError
from x2.base.seeding import streams
from x2.rollout import Rollout, RolloutOptions
from x2.rollout.loop import PENETRATION_LIMIT_M, EpisodeResult
from x2.rollout.memory import MemoryRecorder
from x2.sim import SimulationUnstable
from x2.sim.camera import WorldCameras
from x2.synth.binding import task_program
from x2.synth.context import SynthContext, SynthStats
from x2.synth.executor import SkillExecutor
from x2.synth.options import SessionOptions
from x2.synth.scheduler import ArmScheduler
from x2.synth.segments import SkillFailure
from x2.synth.spacetime import SpaceTimeAdmission


@dataclass
class AttemptOutcome:
    index: int
    seed: int
    accepted: bool
    reason: str  # "accepted" or a rejection category for the histogram
    detail: str
    ticks: int
    result: EpisodeResult | None = None
    arrays: dict[str, npt.NDArray[np.generic]] | None = None  # recorded ticks, when the episode is to be stored
    model_xml: str = ""
    textures: dict[str, bytes] = field(default_factory=dict)  # the images its world carries beside model_xml
    object_names: tuple[str, ...] = ()
    stats: SynthStats = field(default_factory=SynthStats)
    timing: dict[str, float] = field(default_factory=dict)  # seconds: total, teacher (planning), step


class SynthSession:
    """A worker's long-lived simulator for one task; `attempt` may be called any number of times."""

    def __init__(self, options: SessionOptions):
        self.options = options
        self.motion = options.motion
        self.env, self.backend = options.compile()
        self.rollout = Rollout(self.backend)

    def teacher(self, seed: int) -> tuple[SkillExecutor, SynthContext, SpaceTimeAdmission | None]:
        """The teacher of the attempt from `seed` (its executor, the context its skills use, and the space-time
        admission of concurrent lanes), ready for a rollout on this session's backend. x2's expert policy
        service (x2/policy/services/expert.py) drives an evaluated episode with the same teacher."""
        executor = SkillExecutor(self.backend.action_layout)
        assert self.rollout.monitor is not None  # check_bindings requires a task
        ctx = SynthContext(self.backend, self.rollout.monitor, executor, streams(seed), motion=self.motion)
        admission = None
        if self.options.sequential:
            executor.program = lambda: task_program(ctx)
        else:
            executor.scheduler = ArmScheduler(ctx)
            executor.admission = admission = SpaceTimeAdmission(ctx.world)
        return executor, ctx, admission

    def attempt(self, index: int, seed: int, keep_rejected: bool = False) -> AttemptOutcome:
        """Run attempt `index` from `seed`. What can go wrong with a motion (no IK, no plan, a lost grasp, the
        physics diverging) rejects the attempt; any other error (a spec or programming error) propagates:
        it would reject every attempt the same way and must stop the run."""
        executor, ctx, admission = self.teacher(seed)
        recorder = MemoryRecorder()
        t0 = time.perf_counter()
        try:
            # (the executor acts through its context's view of the simulator: the loop need not observe for it)
            result = self.rollout.run(executor, seed, recorder, RolloutOptions(observe=False))
        except SkillFailure as failure:  # raised outside the executor, e.g. while resetting
            return AttemptOutcome(index, seed, False, failure.reason, failure.detail, len(recorder), stats=ctx.stats)
        except MotionError as exc:
            return AttemptOutcome(index, seed, False, "no plan", str(exc), len(recorder), stats=ctx.stats)
        except SimulationUnstable as exc:
            return AttemptOutcome(index, seed, False, "simulator unstable", str(exc), len(recorder), stats=ctx.stats)
        ctx.stats.lane_replans = len(executor.replans)
        if admission is not None:
            ctx.stats.space_time_checks, ctx.stats.waited_ticks = admission.checks, admission.waited
        reason, detail = _verdict(result, executor)
        accepted = reason == "accepted"
        keep = accepted or keep_rejected
        arrays = recorder.arrays(self.backend.observations) if keep else None
        total = time.perf_counter() - t0  # (the arrays too: the robot's and objects' streams are made there)
        return AttemptOutcome(
            index, seed, accepted, reason, detail, result.ticks, result=result, arrays=arrays,
            model_xml=self.backend.model_xml() if keep else "",
            textures=self.backend.model_textures() if keep else {}, object_names=self.backend.object_names,
            stats=ctx.stats,
            timing={"total": total, "teacher": float(result.stage_ms["teacher"].sum()) / 1e3,
                    "step": float(result.stage_ms["step"].sum()) / 1e3},
        )


# ----- a pool worker's side of x2 synth (here, not beside the run, so a worker never imports the dataset side) ---
# The worker's session, or the error that building it raised: a world that does not compile is said by the first
# unit that needs the session (one line in the parent, as any unit's error), not by a pool broken at its start.
# A bug (any other exception) travels the same way, so the parent reports it as the bug it is, not as a lost worker.
_SESSION: SynthSession | Exception | None = None


def init_worker(options: SessionOptions) -> None:
    global _SESSION
    try:
        _SESSION = SynthSession(options)
    except Exception as exc:
        _SESSION = exc


def _session() -> SynthSession:
    if isinstance(_SESSION, Exception):
        raise _SESSION
    assert _SESSION is not None, "worker not initialised"
    return _SESSION


@dataclass(frozen=True)
class BackendNames:
    """The names a dataset's manifest gives the world's recorded rows (x2.rollout.episodes.WorldNames), as a
    worker's simulator has them: a pool's parent builds none."""

    robot_joint_names: tuple[str, ...]
    object_names: tuple[str, ...]
    cameras: WorldCameras  # what `x2 synth --streams` is checked against before anything is recorded


def world_names() -> BackendNames:
    backend = _session().backend
    return BackendNames(backend.robot_joint_names, backend.object_names, backend.cameras)


@dataclass(frozen=True)
class AttemptUnit:
    """What a worker is given to run: attempt `index` from `seed` (`keep_rejected`: return a rejected attempt's
    ticks too, for --keep-failed)."""

    index: int
    seed: int
    keep_rejected: bool


def run_attempt(unit: AttemptUnit) -> AttemptOutcome:
    return _session().attempt(unit.index, unit.seed, unit.keep_rejected)


def _verdict(result: EpisodeResult, executor: SkillExecutor) -> tuple[str, str]:
    pen = result.penetration
    if pen is not None and pen.depth > PENETRATION_LIMIT_M:
        # a demonstration in which bodies pass through each other teaches contacts the world never has
        return "penetration", pen.describe()
    if result.success:
        return "accepted", ""
    if executor.failure is not None:
        return executor.failure.reason, executor.failure.detail
    if result.failure is not None:
        node, frame, why = result.failure
        kind = "stage timeout" if why.startswith("timeout") else "failure predicate"
        return kind, f"{node} at frame {frame}: {why}"
    if result.end_reason == "horizon":
        return "horizon", f"task not done after {result.ticks} ticks"
    events = result.dag.get("events", [])  # [[node id, frame], ...] as the DAG monitor records them
    completed = [node for node, _ in events] if isinstance(events, list) else []
    return "predicate false", f"program ended; completed: {completed}"
