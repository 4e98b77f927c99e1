"""A teleop session: episodes one after another through the one loop, paced at the control rate.

Each episode: reset the booth (episode i's seed derives from the master seed; a re-record keeps the
seed, so the operator gets the same scene again), run the loop with a `DeviceTeacher` until the
operator ends it, the task has succeeded for `success_hold_s`, a node's failure predicate holds, a
played-back stream ends or `max_seconds` (when given) is up, then commit it (with its outcome) or drop it
(re-record, discard). The nodes' `timeout_s` and the task's `horizon_s` are limits of synthesis: they end no
person's episode (RolloutOptions `node_timeouts`, `horizon`). A kill loses only the episode in progress;
Ctrl-C (KeyboardInterrupt) aborts it through the writer and propagates.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from x2.base.seeding import slot_seed
from x2.datasets import Dataset
from x2.devices import Device
from x2.rollout import RealTimeClock, Rollout, RolloutOptions, record_episode
from x2.rollout.clock import Clock
from x2.rollout.episodes import DeviceRecord
from x2.rollout.loop import EpisodeResult, TickHook
from x2.sim.backend import Backend
from x2.teleop.mapping import Mapper, mapper_for
from x2.teleop.status import TeleopStatus
from x2.teleop.teacher import DeviceTeacher

GIL_SWITCH_S = 0.0005


@dataclass(frozen=True)
class TeleopConfig:
    episodes: int | None = None  # None: until the operator quits
    seed: int = 0
    first_seed: int | None = None  # the first episode's seed itself (playing back a recorded episode's scene)
    # per episode; None: no limit. The frames go to disk as they come; what an episode keeps in memory until it ends
    # (its raw device stream, a few numbers a tick) grows by ~8 MB a minute with a 200 Hz leader arm (measured
    # with tracemalloc), less with a keyboard: an hour left running is half a gigabyte
    max_seconds: float | None = None
    success_hold_s: float | None = 1.0  # None: only the operator ends an episode
    stop_on_failure: bool = True


@dataclass(frozen=True)
class EpisodeSummary:
    index: int | None  # None when it was not committed
    seed: int
    frames: int
    ending: str  # success | next | quit | rerecord | discard | failure | max_seconds | stream_end (teacher.ENDINGS)
    success: bool
    events: tuple[tuple[str, int], ...]
    missed_slots: int
    lateness_p99_ms: float


class TeleopSession:
    def __init__(self, backend: Backend, dataset: Dataset, device: Device, status: TeleopStatus,
                 config: TeleopConfig | None = None, *, keys: Sequence[Device] = (), clock: Clock | None = None,
                 mapper: Mapper | None = None, hooks: Sequence[TickHook] = ()):
        self.backend, self.dataset, self.device = backend, dataset, device
        self.hooks = tuple(hooks)  # e.g. the camera preview's state publisher
        self.config, self.status = config or TeleopConfig(), status
        env = backend.env
        self.clock = clock or RealTimeClock(env.fps)
        self.rollout = Rollout(backend, self.clock)
        self.mapper = mapper or mapper_for(device.kind, env.fps)
        self.teacher = DeviceTeacher(device, self.mapper, backend, status, keys=keys, monitor=self.rollout.monitor,
                                     clock=self.clock, success_hold_s=self.config.success_hold_s)
        seconds = self.config.max_seconds
        self.max_ticks = None if seconds is None else max(1, round(seconds * env.fps))
        task = env.task
        status.task, status.robot, status.fps = (task.name if task else env.scene_name), env.robot.name, env.fps
        status.nodes = tuple(task.node_ids) if task else ()
        status.episodes_target = self.config.episodes

    def _keep(self, result: EpisodeResult) -> bool:
        return self.teacher.ending not in ("rerecord", "discard")

    def _device_record(self, result: EpisodeResult) -> DeviceRecord:
        self.status.phase = "saving"
        return self.teacher.device_record(result.ticks, self._ending(result))

    def _ending(self, result: EpisodeResult) -> str:
        """The operator's key, "success" (auto-end), "stream_end", or how the loop stopped by itself (what the
        episode's `end_reason` and `teleop_end` store)."""
        return self.teacher.ending or {"failure": "failure", "horizon": "max_seconds"}.get(result.end_reason, "next")

    def run(self, on_episode: Callable[[EpisodeSummary], None] | None = None) -> list[EpisodeSummary]:
        # Other threads (the panel's renderer, the recorder, device readers) hold the GIL for up to the
        # switch interval before the control thread gets it back: 5 ms by default, seen as p99 lateness.
        # And the full collections of the garbage collector walk every long-lived object (MuJoCo, numpy
        # and rich bring ~10^5): freezing what exists before the loop keeps those pauses short.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)
        gc.collect()
        gc.freeze()
        try:
            return self._run(on_episode)
        finally:
            gc.unfreeze()
            sys.setswitchinterval(switch)

    def _run(self, on_episode: Callable[[EpisodeSummary], None] | None) -> list[EpisodeSummary]:
        cfg, st = self.config, self.status
        done: list[EpisodeSummary] = []
        # Seeds continue the master seed's sequence after every slot used in this dataset, discarded ones included.
        slot = self.dataset.next_slot(cfg.seed)
        played_seed = cfg.first_seed  # a played-back episode's own scene first (its seed is not a slot of ours)
        committed = 0
        # A person's episode ends when the person says (or at --max-seconds): no horizon, no node timeouts.
        options = RolloutOptions(stop_on_success=False, stop_on_failure=cfg.stop_on_failure,
                                 max_ticks=self.max_ticks, horizon=False, node_timeouts=False, hooks=self.hooks)
        while cfg.episodes is None or committed < cfg.episodes:
            if done and self.device.health().finished:
                break  # a played-back stream that has ended drives no further episode
            playing_back = played_seed is not None
            seed = played_seed if played_seed is not None else slot_seed(cfg.seed, slot)
            st.episode, st.seed, st.phase = self.dataset.next_index(), seed, "resetting"
            teacher = self.teacher
            result, record = record_episode(
                self.dataset, self.rollout, teacher, seed, source="teleop", options=options,
                keep=self._keep, device=self._device_record, background=True,
                master_seed=None if playing_back else cfg.seed, slot=None if playing_back else slot)
            ending = self._ending(result)
            lat = result.lateness_ms
            summary = EpisodeSummary(
                index=record.index if record else None, seed=seed, frames=result.ticks, ending=ending,
                success=result.success, events=tuple(result.events), missed_slots=result.missed_slots,
                lateness_p99_ms=float(np.percentile(lat, 99)) if len(lat) else 0.0)
            done.append(summary)
            if record is not None:
                committed += 1
                st.committed += 1
                st.successes += int(result.success)
                st.say(f"episode {record.index} saved: {'success' if result.success else ending}, "
                       f"{result.ticks} frames")
            else:
                st.discarded += int(result.ticks > 0)
                st.say(f"episode dropped ({ending})" if result.ticks else "nothing recorded")
            if on_episode is not None:
                on_episode(summary)
            if ending != "rerecord":  # a re-record keeps the scene
                if playing_back:
                    played_seed = None
                else:
                    self.dataset.use_slots(cfg.seed, slot)  # used, saved or not: the next session starts after it
                    slot += 1
            if ending == "quit":
                break
        st.phase = "done"
        return done
