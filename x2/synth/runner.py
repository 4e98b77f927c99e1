"""`x2 synth`: numbered attempts on a pool of long-lived workers, committed in attempt order.

Attempt i's seed is the i-th child of `SeedSequence(master_seed)`; each attempt is a pure function
of its seed; the parent commits accepted attempts strictly in index order and stops at the n-th.
So the same master seed gives the same dataset bytes with 1 worker or 8. A run into an existing
dataset starts after the last attempt any earlier run took (rejected ones included: the dataset's slot
ledger), so `-n 2` twice is `-n 4` once and no demonstration is ever made twice. The workers are local
processes or Ray actors (x2.processes.pool); where an attempt ran changes no byte.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from x2.base.errors import X2Error
from x2.base.seeding import slot_seed
from x2.datasets import Dataset, EpisodeWriter, Rejection, dataset_path
from x2.envspec.held_out import refuse_eval_run
from x2.files.atomic import write_bytes
from x2.format import SYNTH_REPORT_FILE
from x2.processes.pool import RayTarget, WorkerLost, WorkerPool, in_order, open_pool
from x2.rollout.episodes import EpisodeOutcome, commit_episode, episode_start, open_dataset, versions
from x2.rollout.loop import EpisodeResult
from x2.sim.camera import StreamRequest
from x2.synth.attempt import (
    AttemptOutcome,
    AttemptUnit,
    BackendNames,
    SynthSession,
    init_worker,
    run_attempt,
    world_names,
)
from x2.synth.options import SessionOptions
from x2.synth.report import AttemptSummary, HowMade, RayReport, SynthReport


@dataclass(frozen=True)
class SynthConfig:
    """A run of `x2 synth`: the session's options and the run's own (--num-demos, --workers, --seed,
    --max-attempts, --keep-failed, --allow-eval, --ray, --streams: their help in x2/cli/synth.py says what each means;
    None: the command's default, which the help names)."""

    session: SessionOptions
    n: int = 10
    workers: int | None = None  # (None: one per core here, or with `ray` as many as the cluster's CPUs hold)
    seed: int = 0
    max_attempts: int | None = None
    keep_failed: bool = False
    allow_eval: bool = False
    ray: RayTarget | None = None
    # the camera streams the command renders into the committed episodes once the run ends (x2/cli/synth.py
    # --streams); checked here against the world's cameras before the dataset is opened
    streams: StreamRequest | None = None
    hopeless_after: int = 30  # attempts before judging the acceptance rate (no option)
    hopeless_rate: float = 0.05

    @property
    def attempt_cap(self) -> int:
        return self.max_attempts or 3 * self.n + 10


@dataclass
class SynthProgress:
    accepted: int = 0
    attempted: int = 0
    stored_failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.perf_counter)
    stop_reason: str = ""
    workers_alive: int | None = None  # Ray workers ready or busy (a local pool's are not watched)

    @property
    def per_minute(self) -> float:
        elapsed = time.perf_counter() - self.started
        return 60.0 * self.accepted / elapsed if elapsed > 0 else 0.0


class SynthRun:
    def __init__(self, config: SynthConfig, dataset: Path | None = None):
        """`dataset` None: ./data/<the task's EnvSpec.dataset_name> (its name, and the robot's when that is not the
        task's reference robot)."""
        self.config = config
        # The task compiled and every binding checked here, in the parent: a bad task fails before a worker starts.
        # Only a run without a pool makes its attempts here, on a simulator of its own; a pool's workers build
        # theirs, and one of them names the world's rows for the dataset's manifest (world_names).
        self._pool: WorkerPool | None = None  # the workers (start_workers)
        self._names: Future[BackendNames] | None = None  # a worker's answer for the manifest (start_workers)
        opts = config.session
        self.session = SynthSession(opts) if config.ray is None and self.workers <= 1 else None
        self.env = self.session.env if self.session is not None else opts.load()
        refuse_eval_run(self.env, config.seed, config.allow_eval)
        self.path: Path = dataset if dataset is not None else dataset_path(self.env.dataset_name)
        self.progress = SynthProgress()
        self.attempts: list[AttemptSummary] = []
        self.committed: list[int] = []
        self.first_attempt = 0  # set when the dataset is opened: after every attempt an earlier run took
        self._retried = 0  # attempts given to another worker after theirs was lost
        self.how = HowMade(opts.schedule, opts.motion.describe())
        self._how_text = self.how.to_json()

    @property
    def workers(self) -> int:
        """The run's workers: the pool's once started (a Ray cluster's count is known only then)."""
        if self._pool is not None:
            return self._pool.workers
        return self.config.workers or (0 if self.config.ray else os.cpu_count() or 1)

    def start_workers(self) -> None:
        """Start the workers now, before the dataset is opened. `x2 synth` calls this before its progress
        display starts a thread: while this process has no other thread the local workers are forked copies
        of it, which start in milliseconds instead of importing x2 anew (x2.processes.life.process_pool). On Ray
        even one worker is an actor (the point of --ray is to run elsewhere)."""
        cfg = self.config
        if self._pool is None and self.session is None:
            self._pool = open_pool(cfg.workers, init_worker, (cfg.session,), ray=cfg.ray, copies=True)
            # (a first task, which the dataset waits for: the local pool starts its workers at once)
            self._names = self._pool.submit(world_names)

    def run(self, on_update: Callable[[SynthProgress], None] | None = None) -> SynthProgress:
        cfg = self.config
        try:
            self.start_workers()
            names = self.refuse_undrawn_streams()
            ds = open_dataset(self.path, self.env, names)
        except BaseException:
            self._stop_workers()
            raise
        self.first_attempt = ds.next_slot(cfg.seed)
        try:
            if self._pool is None:
                self._run_inline(ds, on_update)
            else:
                self._run_pool(ds, on_update)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                self.progress.stop_reason = "interrupted (every committed episode is kept)"
            # The report is written on the way out too, but the error that stopped the run is the one to show
            # (a full disk refuses the report as well).
            with contextlib.suppress(OSError):
                self._write_report(ds)
            raise
        else:
            with ds.refusals(ds.root / SYNTH_REPORT_FILE, f"every accepted episode is committed ({ds.safe_note()}); "
                                                    "only the run's report is missing"):
                self._write_report(ds)
        finally:
            self._stop_workers()
            ds.close()
        return self.progress

    def refuse_undrawn_streams(self) -> BackendNames:
        """A one-line CameraError unless the world draws the config's --streams request (cameras, size); the world's
        names. Before the dataset is opened: a bad request writes nothing, and stops the workers."""
        try:
            names = self._world_names()
            if self.config.streams is not None:
                request, robot = self.config.streams, self.env.robot.name
                names.cameras.refuse_unless_drawn(request.cameras, request.size, f"robot {robot}")
        except BaseException:
            self._stop_workers()
            raise
        return names

    def _world_names(self) -> BackendNames:
        if self.session is not None:
            backend = self.session.backend
            return BackendNames(backend.robot_joint_names, backend.object_names, backend.cameras)
        assert self._names is not None  # (start_workers asked for them)
        try:
            return self._names.result()  # (a world that does not compile: the worker's one-line error, raised here)
        except (WorkerLost, BrokenProcessPool) as lost:
            raise X2Error(f"workers: found the worker asked for the world's joint names gone before it answered "
                          f"({lost or type(lost).__name__}); allowed: workers that stay up (nothing was written: "
                          "run it again)") from None

    def _stop_workers(self) -> None:
        # what is still running would be discarded: the workers end now instead of finishing it
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _run_inline(self, ds: Dataset, on_update: Callable[[SynthProgress], None] | None) -> None:
        session, first = self.session, self.first_attempt
        assert session is not None  # (a run without a pool)
        for index in range(first, first + self.config.attempt_cap):
            outcome = session.attempt(index, slot_seed(self.config.seed, index), self.config.keep_failed)
            if not self._take(ds, outcome, on_update):
                return
        self.progress.stop_reason = self.progress.stop_reason or f"reached --max-attempts {self.config.attempt_cap}"

    def _run_pool(self, ds: Dataset, on_update: Callable[[SynthProgress], None] | None) -> None:
        cfg, pool = self.config, self._pool
        assert pool is not None  # (run started the workers; they die with this process, even SIGKILLed)
        first = self.first_attempt
        units = (AttemptUnit(i, slot_seed(cfg.seed, i), cfg.keep_failed) for i in range(first, first + cfg.attempt_cap))
        for unit, future in in_order(pool, run_attempt, units):
            self.progress.workers_alive, self._retried = pool.alive(), pool.retried()
            if not self._take(ds, _outcome(unit, future), on_update):
                return  # (no unit is submitted after this; those in flight are dropped with the pool)
        self.progress.stop_reason = f"reached --max-attempts {cfg.attempt_cap}"

    def _take(self, ds: Dataset, outcome: AttemptOutcome, on_update: Callable[[SynthProgress], None] | None) -> bool:
        """Commit one attempt (in order); False when the run should stop."""
        cfg, p = self.config, self.progress
        p.attempted += 1
        p.reasons[outcome.reason] += 1
        self.attempts.append(AttemptSummary.of(outcome))
        if outcome.accepted or (cfg.keep_failed and outcome.arrays is not None):
            self._commit(ds, outcome)
            if outcome.accepted:
                p.accepted += 1
            else:
                p.stored_failed += 1
        ds.use_slots(cfg.seed, outcome.index)  # taken, accepted or not: a later run starts after it
        if on_update is not None:
            on_update(p)
        if p.accepted >= cfg.n:
            p.stop_reason = f"{cfg.n} demos accepted"
            return False
        if p.attempted >= cfg.hopeless_after and p.accepted / p.attempted < cfg.hopeless_rate:
            top = ", ".join(f"{r} ({c})" for r, c in p.reasons.most_common(3))
            p.stop_reason = (f"stopped early: {p.accepted} of {p.attempted} attempts accepted; most common "
                             f"rejections: {top}")
            return False
        return True

    def _commit(self, ds: Dataset, outcome: AttemptOutcome) -> None:
        result, arrays = outcome.result, outcome.arrays
        assert result is not None and arrays is not None
        start = episode_start(self.env, outcome.seed, "synth", self.config.seed, outcome.index)
        stored = EpisodeOutcome(success=outcome.accepted, model_xml=outcome.model_xml, textures=outcome.textures,
                                object_names=outcome.object_names,
                                rejection=None if outcome.accepted else Rejection(outcome.reason, outcome.detail),
                                synthesis=self._how_text)

        def replay(writer: EpisodeWriter) -> EpisodeResult:
            writer.extend(arrays)  # the ticks the worker recorded, in one write per stream
            return result

        _, record = commit_episode(ds, self.env, start, replay, lambda _: stored, outcome.object_names)
        if record is not None:  # None only for an attempt without a tick, which nothing stores
            self.committed.append(record.index)

    def _write_report(self, ds: Dataset) -> None:
        cfg, p = self.config, self.progress
        elapsed = time.perf_counter() - p.started
        timing = {k: round(sum(a.timing_s.get(k, 0.0) for a in self.attempts), 3) for k in ("total", "teacher", "step")}
        report = SynthReport(
            task=cfg.session.task, robot=self.env.robot.name, variant=cfg.session.variant, master_seed=cfg.seed,
            schedule=self.how.schedule, motion=self.how.motion,
            requested=cfg.n, accepted=p.accepted, attempted=p.attempted, first_attempt=self.first_attempt,
            acceptance_rate=round(p.accepted / p.attempted, 4) if p.attempted else None,
            accepted_per_minute=round(p.per_minute, 2), wall_s=round(elapsed, 2), workers=self.workers,
            ray=RayReport(cfg.ray.address, self._retried, p.workers_alive) if cfg.ray else None,
            stop_reason=p.stop_reason, rejections=dict(p.reasons.most_common()), attempt_time_s=timing,
            episodes=self.committed, attempts=self.attempts, versions=versions(),
            finished=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        write_bytes(ds.root / SYNTH_REPORT_FILE, report.to_json().encode())


def _outcome(unit: AttemptUnit, future: Future[AttemptOutcome]) -> AttemptOutcome:
    """The attempt's outcome; one whose worker was lost on every try is a rejected attempt saying so (never a
    silent gap: its slot is used like any other's)."""
    try:
        return future.result()
    except WorkerLost as lost:
        return AttemptOutcome(unit.index, unit.seed, False, "worker lost", str(lost), 0)
