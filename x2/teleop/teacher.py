"""The teleop teacher: one device sample per tick -> mapper -> safety filter -> action.

It also keeps the episode's raw device stream (every sample the device produced, every event, and
which sample each tick used) and turns lifecycle events into the end of an episode: `next` keeps it,
`rerecord` and `discard` drop it, `quit` keeps it and stops the session. With auto-end on, an
episode ends `success_hold_s` after the task first succeeds ("success"); a played-back stream that has
ended ends it too, a second later ("stream_end": nobody is left to say), unless the task's success is being
held then.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from x2.base.arrays import Floats
from x2.datasets import TeleopEnd
from x2.devices import Device, DeviceEvent, StreamBuilder
from x2.rollout.clock import Clock
from x2.rollout.episodes import DeviceRecord
from x2.rollout.monitor import TaskMonitor
from x2.rollout.teacher import Observation
from x2.sim.backend import Backend, ResetInfo
from x2.teleop.mapping import Mapper
from x2.teleop.safety import SafetyFilter
from x2.teleop.status import TeleopStatus

KEYS = ("next", "rerecord", "discard", "quit")  # the lifecycle keys that end an episode
# Every ending a teleoperated episode is stored with (its `end_reason` and `teleop_end`, docs/format.md): a key,
# the task's success held, a failure predicate, --max-seconds, the end of a played-back stream.
ENDINGS = (*KEYS, "success", "failure", "max_seconds", "stream_end")
STREAM_SETTLE_S = 1.0  # a played-back stream's episode goes on this long after the stream ended


class DeviceTeacher:
    def __init__(self, device: Device, mapper: Mapper, backend: Backend, status: TeleopStatus, *,
                 keys: Sequence[Device] = (), monitor: TaskMonitor | None = None, clock: Clock | None = None,
                 success_hold_s: float | None = 1.0, record_stream: bool = True):
        self.device, self.mapper, self.backend, self.status = device, mapper, backend, status
        self.keys, self.monitor, self.clock = tuple(keys), monitor, clock
        self.safety = SafetyFilter(backend, backend.env.fps)
        fps = backend.env.fps
        self.hold_ticks = None if success_hold_s is None else max(1, round(success_hold_s * fps))
        self.settle_ticks = round(STREAM_SETTLE_S * fps)
        self._finished_at: int | None = None  # the tick a played-back stream was first seen ended
        self.ending: str | None = None
        self.record_stream = record_stream  # off only to measure the recorder's cost (bench/bench_teleop.py)
        self.stream = StreamBuilder(device.kind, 0.0)

    def reset(self, info: ResetInfo, home_action: Floats) -> None:
        self.mapper.reset(self.backend, home_action)
        self.safety.reset(home_action)
        self.ending = None
        self.stream = StreamBuilder(self.device.kind, 0.0)
        self._started = False
        self._dag_seen: tuple[int, object] | None = None
        self._finished_at = None
        self.device.drain()  # samples from before the episode belong to no episode
        # Keys pressed while the last episode was being saved: a second "next" must not end this one
        # at its first tick; a "quit" still counts.
        self._carry = [e for e in self._pending_events() if e.kind == "quit"]
        st = self.status
        st.instruction, st.tick, st.success_since, st.failure = info.instruction, 0, None, ""
        st.done_nodes = st.active_nodes = frozenset()
        st.lateness_ms.clear()
        st.tick_times.clear()
        st.phase = "recording"

    def _pending_events(self) -> list[DeviceEvent]:
        events = self.device.events()
        for k in self.keys:
            events.extend(k.events())
        return events

    def act(self, obs: Observation) -> Floats | None:
        now = time.monotonic()
        if not self._started:  # time zero of the stream is the episode's first tick
            self._started = True
            self.stream.t0 = now
        sample = self.device.latest()
        finished = self.device.health().finished  # (before the events: a stream's last ones come before its end)
        events = self._carry + self._pending_events()
        self._carry = []
        samples = self.device.drain()
        if self.record_stream:
            self.stream.add(samples, events)
            self.stream.tick_seq.append(-1 if sample is None else sample.seq)
        for ev in events:
            if ev.kind in KEYS and self.ending is None:
                self.ending = ev.kind
        self._update_status(obs.tick, obs.lateness_ms)
        if self.ending is not None:
            return None
        if self._auto_end(obs.tick):
            self.ending = "success"
            return None
        if finished and self._stream_over(obs.tick):
            self.ending = "stream_end"
            return None
        age = now - sample.t if sample is not None else float("inf")
        assert obs.robot is not None  # (a teleop session's loop observes every tick)
        action = self.safety(self.mapper.command(sample, age, events, obs.robot))
        self.status.mapper = self.mapper.status
        self.status.clamped = self.safety.clamped
        return action

    def _stream_over(self, tick: int) -> bool:
        """A played-back stream has ended: after STREAM_SETTLE_S more (the arm reaching the leader's last pose, the
        task's success perhaps with it), unless a success is being held then (that ends it, as "success")."""
        if self._finished_at is None:
            self._finished_at = tick
        return tick - self._finished_at >= self.settle_ticks and self.status.success_since is None

    def _auto_end(self, tick: int) -> bool:
        rt = self.monitor.runtime if self.monitor is not None else None
        if rt is None or self.hold_ticks is None or not rt.success:
            return False
        if self.status.success_since is None:
            self.status.success_since = tick
        return tick - self.status.success_since >= self.hold_ticks

    def _update_status(self, tick: int, lateness_ms: float) -> None:
        st = self.status
        st.tick = tick
        now = time.perf_counter()
        if tick == 0:
            st.first_tick_at = now
        st.last_tick_at = now
        st.tick_times.append(now)
        st.lateness_ms.append(lateness_ms)  # the loop's own measurement of this tick
        if self.clock is not None:
            st.overruns = self.clock.missed
        rt = self.monitor.runtime if self.monitor is not None else None
        # The DAG's node sets change only when an event or a failure happens: rebuild them only then.
        if rt is not None and (len(rt.events), rt.failure) != self._dag_seen:
            self._dag_seen = (len(rt.events), rt.failure)
            st.done_nodes = frozenset(n for n, f in rt.completion_frames.items() if f is not None)
            st.active_nodes = frozenset(rt.active_nodes)
            st.failure = "" if rt.failure is None else f"{rt.failure[0]}: {rt.failure[2]}"

    def device_record(self, frames: int, ending: str) -> DeviceRecord:
        """The episode's raw stream under /device/<kind>/ (`tick_seq` has one entry per recorded frame:
        the tick that ended the episode was not recorded) and how it ended."""
        name = self.device.kind
        arrays = self.stream.arrays()
        arrays["tick_seq"] = arrays["tick_seq"][:frames]
        return DeviceRecord(streams={name: arrays}, attrs={name: self.stream.attrs()},
                            teleop=TeleopEnd(ending=ending, device=self.status.device,
                                             safety_clamped_ticks=self.safety.clamped,
                                             safety_rejected_ticks=self.safety.rejected))
