"""`x2 eval`: episodes of one split on a pool of workers, each connected to the policy service, committed in slot
order into the split's dataset.

A run into a dataset that already holds some of its slots (a run that was killed) runs only the missing ones:
every episode is committed whole or not at all (x2/rollout/episodes.py), so a kill loses at most the episodes in
flight. A dataset holds one policy's rollouts: a run of another policy into it is refused.

The pool (x2.processes.pool: local processes, or Ray actors with --ray) serves every split of a run: a unit carries its
split's EvalSetup and a worker keeps the session of the setup it saw last. An episode whose worker was lost on
every try is left out and counted; running the command again runs it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import PolicyError
from x2.datasets import Dataset, EpisodeWriter
from x2.eval.report import RunSummary
from x2.eval.seeds import SplitPlan
from x2.eval.session import EvalOutcome, EvalSession, EvalSetup, policy_text
from x2.policy.protocol import PolicyClient
from x2.processes.pool import RayTarget, WorkerLost, WorkerPool, in_order, open_pool
from x2.render.video import dataset_videos, video_name
from x2.rollout.episodes import EpisodeOutcome, commit_episode, episode_start, open_dataset
from x2.rollout.loop import EpisodeResult
from x2.sim.camera import ImageSize


def connect(setup: EvalSetup) -> PolicyClient:
    from x2.policy.client import RemotePolicy  # (the websocket client: imported by the processes that talk)

    return RemotePolicy(setup.url, setup.timeout_s)


@dataclass
class EvalProgress:
    split: str
    total: int
    done: int = 0
    succeeded: int = 0
    skipped: int = 0  # committed by an earlier run
    lost: list[int] = field(default_factory=list)  # slots whose worker was lost on every try (not committed)
    workers_alive: int | None = None  # (a Ray pool's; None where the pool does not watch its workers)
    videos: int = 0  # MP4s written by this run (--videos)
    started: float = field(default_factory=time.perf_counter)

    @property
    def per_minute(self) -> float:
        elapsed = time.perf_counter() - self.started
        return 60.0 * (self.done - self.skipped) / elapsed if elapsed > 0 else 0.0


# ----- a pool worker's side --------------------------------------------------------------------------------------
_SESSION: tuple[EvalSetup, EvalSession] | None = None


@dataclass(frozen=True)
class EpisodeUnit:
    """What a worker is given to run: the episode of `slot` from `seed`, on the session `setup` describes."""

    setup: EvalSetup
    slot: int
    seed: int


def run_episode(unit: EpisodeUnit) -> EvalOutcome:
    """One episode in a pool worker, on the session of its setup (built at the worker's first unit of a split)."""
    global _SESSION
    if _SESSION is None or _SESSION[0] != unit.setup:
        if _SESSION is not None:
            _SESSION[1].close()
        _SESSION = (unit.setup, EvalSession(unit.setup, connect))
    return _SESSION[1].episode(unit.slot, unit.seed)


def open_eval_pool(workers: int | None, ray: RayTarget | None) -> WorkerPool | None:
    """The run's workers, or None to run each episode in this process (one local worker)."""
    if ray is None and (workers or 1) <= 1:
        return None
    return open_pool(workers, ray=ray)


@dataclass(frozen=True)
class EvalVideos:
    """--videos: one MP4 per rollout (x2/render/video.py) into `folder`, the robot's cameras at `size`."""

    folder: Path
    size: ImageSize


class EvalRun:
    """One split of an evaluation into one dataset."""

    def __init__(self, setup: EvalSetup, plan: SplitPlan, dataset: Path, pool: WorkerPool | None = None,
                 connector: Callable[[EvalSetup], PolicyClient] = connect, videos: EvalVideos | None = None):
        self.setup, self.plan, self.path, self.pool, self.videos = setup, plan, dataset, pool, videos
        self.session = EvalSession(setup, connector)  # the parent's own: it checks the policy fits before any worker
        self.env = self.session.env
        self.progress = EvalProgress(plan.split, len(plan.slots))

    def run(self, on_update: Callable[[EvalProgress], None] | None = None) -> EvalProgress:
        ds = open_dataset(self.path, self.env, self.session.backend)
        try:
            self._refuse_other_policy(ds)
            done = {r.slot for r in ds.episodes()
                    if r.master_seed == self.plan.master_seed and r.source == fmt.POLICY_SOURCE}
            todo = [(slot, seed) for slot, seed in zip(self.plan.slots, self.plan.seeds(), strict=True)
                    if slot not in done]
            self.progress.done = self.progress.skipped = len(self.plan.slots) - len(todo)
            # (a killed run's committed rollouts whose video it did not write: written now, before the new ones)
            self._video(ds, [r.index for r in ds.episodes() if r.master_seed == self.plan.master_seed
                             and r.source == fmt.POLICY_SOURCE])
            if on_update is not None:
                on_update(self.progress)
            if self.pool is None:
                for slot, seed in todo:
                    self._commit(ds, self.session.episode(slot, seed), on_update)
            else:
                self.session.close()  # (the workers hold their own connections)
                self._run_pool(ds, self.pool, todo, on_update)
        finally:
            self.session.close()
            ds.close()
        return self.progress

    def _refuse_other_policy(self, ds: Dataset) -> None:
        mine = self.session.identity()
        for record in ds.episodes()[:1]:
            with ds.load(record.index) as ep:
                theirs = ep.json_attr(fmt.POLICY_ATTR) or {}
            if (theirs.get("identity"), theirs.get("digest")) != (mine["identity"], mine["digest"]):
                raise PolicyError(f"{ds.root}: policy: found episodes of {theirs.get('identity') or 'another source'} "
                                  f"({theirs.get('digest') or 'no digest'}); allowed: rollouts of "
                                  f"{mine['identity']} only (evaluate into a new --dataset)")

    def _run_pool(self, ds: Dataset, pool: WorkerPool, todo: list[tuple[int, int]],
                  on_update: Callable[[EvalProgress], None] | None) -> None:
        units = (EpisodeUnit(self.setup, slot, seed) for slot, seed in todo)
        for unit, future in in_order(pool, run_episode, units):
            self.progress.workers_alive = pool.alive()
            try:
                outcome = future.result()
            except WorkerLost:  # (left out, listed as lost: the next run makes it)
                self.progress.lost.append(unit.slot)
                if on_update is not None:
                    on_update(self.progress)
                continue
            self._commit(ds, outcome, on_update)

    def _commit(self, ds: Dataset, outcome: EvalOutcome, on_update: Callable[[EvalProgress], None] | None) -> None:
        result = outcome.result
        start = episode_start(self.env, outcome.seed, fmt.POLICY_SOURCE, self.plan.master_seed, outcome.slot)
        stored = EpisodeOutcome(success=result.success, model_xml=outcome.model_xml, textures=outcome.textures,
                                object_names=outcome.object_names, policy=policy_text(outcome.policy),
                                ee_arrays=outcome.ee_arrays, ee_attrs=outcome.ee_attrs)

        def replay(writer: EpisodeWriter) -> EpisodeResult:
            writer.extend(outcome.arrays)
            result.stage_ms.update(outcome.timing)
            return result

        _, record = commit_episode(ds, self.env, start, replay, lambda _: stored, outcome.object_names)
        if record is not None:
            self._video(ds, [record.index])
        p = self.progress
        p.done += 1
        p.succeeded += int(result.success)
        if on_update is not None:
            on_update(p)


    def _video(self, ds: Dataset, episodes: list[int]) -> None:
        """The MP4 of each of `episodes` that has none yet (a video is renamed into place whole: one there is done)."""
        if self.videos is None:
            return
        todo = [i for i in episodes if not (self.videos.folder / video_name(i)).exists()]
        if todo:
            self.progress.videos += len(dataset_videos(ds, todo, None, self.videos.size, self.videos.folder))


def run_summary(progress: EvalProgress) -> RunSummary:
    return {"split": progress.split, "episodes": progress.total, "run_now": progress.done - progress.skipped,
            "from_earlier_runs": progress.skipped, "per_minute": round(progress.per_minute, 2),
            "lost_with_their_worker": list(progress.lost)}


def dumps(data: Mapping[str, object]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"
