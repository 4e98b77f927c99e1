"""Loop clocks driven by an injected fake time source: the absolute deadline grid, skipped slots after an
overrun, lateness, and a `Rollout` whose simulation is unaffected by wall-clock trouble.

No wall-clock time is measured anywhere here: `FakeTime` is the only clock, and sleeping advances it.
"""

from __future__ import annotations

import numpy as np
import pytest

from x2.envspec import load_env
from x2.format import Tick
from x2.rollout import FreeClock, JointWaypointTeacher, RealTimeClock, Rollout, RolloutOptions, Waypoint
from x2.rollout.teacher import Observation
from x2.sim.backend import ResetInfo
from x2.sim.mujoco.backend import MujocoBackend

FPS = 30
PERIOD = 1.0 / FPS
T0 = 1234.5  # a perf_counter-like origin, far from zero, so float rounding is realistic
EPS = 1e-9  # seconds; rounding of the fake time, far below any real slot


class FakeTime:
    """A clock the test owns: `now()` reads `t`, `sleep(d)` advances it by `d` and records the call."""

    def __init__(self, t: float = T0, oversleep: dict[int, float] | None = None):
        self.t = t
        self.sleeps: list[float] = []
        self.oversleep = oversleep or {}  # sleep call index -> extra seconds the "OS" adds to that sleep

    def now(self) -> float:
        return self.t

    def sleep(self, d: float) -> None:
        self.t += d + self.oversleep.get(len(self.sleeps), 0.0)
        self.sleeps.append(d)

    def work(self, d: float) -> None:
        """A tick's own work taking `d` seconds."""
        self.t += d


def _clock(fake: FakeTime) -> RealTimeClock:
    clock = RealTimeClock(FPS, now=fake.now, sleep=fake.sleep)
    clock.start()
    return clock


def test_early_ticks_sleep_to_the_absolute_grid_without_drift() -> None:
    fake = FakeTime()
    clock = _clock(fake)
    works = [(0.1 + 0.8 * ((k * 37) % 11) / 10) * PERIOD for k in range(1000)]  # 0.1 .. 0.9 of a period
    for k, w in enumerate(works):
        assert fake.t == pytest.approx(T0 + k * PERIOD, abs=EPS)  # tick k starts at its slot
        assert clock.lateness_ms() == pytest.approx(0.0, abs=1e-6)
        fake.work(w)
        clock.wait()
        # slept exactly the rest of the slot: the deadline is absolute, not "now + period"
        assert fake.sleeps[-1] == pytest.approx(PERIOD - w, abs=EPS)
    assert len(fake.sleeps) == 1000
    assert fake.t == pytest.approx(T0 + 1000 * PERIOD, abs=EPS)  # no drift after 1000 ticks
    assert clock.missed == 0


def test_overrun_skips_missed_slots_and_never_catches_up() -> None:
    fake = FakeTime()
    clock = _clock(fake)
    work = 0.25 * PERIOD
    for _ in range(3):  # slots 0, 1, 2 on time
        fake.work(work)
        clock.wait()
    assert fake.t == pytest.approx(T0 + 3 * PERIOD, abs=EPS)
    fake.work(2.5 * PERIOD)  # tick in slot 3 runs until slot 5.5: slots 4 and 5 are lost
    clock.wait()
    assert clock.missed == 2
    assert fake.t == pytest.approx(T0 + 6 * PERIOD, abs=EPS)  # next tick starts on the next grid slot
    assert fake.sleeps[-1] == pytest.approx(0.5 * PERIOD, abs=EPS)
    assert clock.lateness_ms() == pytest.approx(0.0, abs=1e-6)
    before = len(fake.sleeps)
    for k in range(6, 20):
        assert fake.t == pytest.approx(T0 + k * PERIOD, abs=EPS)
        fake.work(work)
        clock.wait()
    later = fake.sleeps[before:]
    # later ticks are not run faster to make up the lost slots: each sleeps the full rest of its slot
    assert len(later) == 14
    assert all(d == pytest.approx(PERIOD - work, abs=EPS) for d in later)
    assert min(fake.sleeps) > 0
    assert clock.missed == 2  # counted once, not again by the ticks that follow


@pytest.mark.parametrize(("overrun", "missed"), [(1.01, 1), (1.5, 1), (3.2, 3), (7.9, 7)])
def test_missed_slot_count(overrun: float, missed: int) -> None:
    fake = FakeTime()
    clock = _clock(fake)
    fake.work(overrun * PERIOD)
    clock.wait()
    assert clock.missed == missed
    assert fake.t == pytest.approx(T0 + (missed + 1) * PERIOD, abs=EPS)
    clock.start()  # a new episode starts from a fresh grid and count
    assert clock.missed == 0 and clock.lateness_ms() == 0.0


def test_lateness_is_measured_against_the_slot_start() -> None:
    fake = FakeTime()
    clock = _clock(fake)
    assert clock.lateness_ms() == 0.0
    fake.work(0.4 * PERIOD)  # lateness is about the tick's start, not its end...
    assert clock.lateness_ms() == pytest.approx(0.4 * PERIOD * 1e3, rel=1e-9)
    clock.wait()
    assert clock.lateness_ms() == pytest.approx(0.0, abs=1e-6)
    fake.t += 0.3 * PERIOD  # the OS woke us 0.3 periods after slot 1 started
    assert clock.lateness_ms() == pytest.approx(0.3 * PERIOD * 1e3, rel=1e-6)
    fake.work(0.2 * PERIOD)
    clock.wait()  # still inside slot 1 at 0.5: wait for slot 2 as usual
    assert clock.missed == 0
    assert fake.t == pytest.approx(T0 + 2 * PERIOD, abs=EPS)
    fake.t -= 1.0  # a clock that reads before its slot is not "negatively late"
    assert clock.lateness_ms() == 0.0


def test_free_clock_never_sleeps_or_misses() -> None:
    clock = FreeClock()
    clock.start()
    for _ in range(100):
        assert clock.lateness_ms() == 0.0
        clock.wait()
    assert clock.missed == 0


# ----------------------------------------------------------------------------- in the rollout loop


class SlowTeacher:
    """Home-holding waypoint teacher whose act() takes `cost` seconds of fake time on chosen ticks."""

    def __init__(self, inner: JointWaypointTeacher, fake: FakeTime, cost: dict[int, float]):
        self.inner, self.fake, self.cost = inner, fake, cost

    def reset(self, info: ResetInfo, home_action: np.ndarray) -> None:
        self.inner.reset(info, home_action)

    def act(self, obs: Observation) -> np.ndarray | None:
        self.fake.work(self.cost.get(obs.tick, 0.0))
        return self.inner.act(obs)


class ListRecorder:
    def __init__(self) -> None:
        self.ticks: list[Tick] = []

    def append(self, tick: Tick) -> None:
        self.ticks.append(tick)


@pytest.fixture(scope="module")
def backend() -> MujocoBackend:
    return MujocoBackend(load_env("fruit_in_microwave"))


def _run(backend: MujocoBackend, clock, teacher_cost: dict[int, float], fake: FakeTime | None):
    fake = fake or FakeTime()
    home = JointWaypointTeacher([Waypoint(tuple(backend.home_action()), 1.0)], backend.env.fps, hold_s=0.0)
    recorder = ListRecorder()
    result = Rollout(backend, clock).run(SlowTeacher(home, fake, teacher_cost), seed=3, recorder=recorder,
                                          options=RolloutOptions(max_ticks=20))
    return result, recorder


def test_rollout_overrun_counts_a_missed_slot_and_drops_no_frame(backend: MujocoBackend) -> None:
    assert backend.env.fps == FPS
    reference, ref_rec = _run(backend, FreeClock(), {}, None)
    assert reference.ticks == 20 and reference.missed_slots == 0 and reference.end_reason == "horizon"

    fake = FakeTime()
    late_tick = 7
    clock = RealTimeClock(FPS, now=fake.now, sleep=fake.sleep)
    result, rec = _run(backend, clock, {late_tick: 1.5 * PERIOD}, fake)

    assert result.missed_slots == 1
    assert result.ticks == reference.ticks == 20  # simulation is the clock of record: no frame dropped
    assert len(rec.ticks) == 20
    assert result.lateness_ms.shape == (20,)  # one entry per tick, the overrunning tick included
    # the overrun skipped slot 8, so tick 8 started on slot 9 exactly: no tick started late
    np.testing.assert_allclose(result.lateness_ms, 0.0, atol=1e-6)
    # wall time spent: 20 ticks + 1 skipped slot; only the late tick slept less than a period
    assert fake.t == pytest.approx(T0 + 21 * PERIOD, abs=EPS)
    assert len(fake.sleeps) == 20
    assert fake.sleeps[late_tick] == pytest.approx(0.5 * PERIOD, abs=EPS)
    others = [d for i, d in enumerate(fake.sleeps) if i != late_tick]
    assert all(d == pytest.approx(PERIOD, abs=EPS) for d in others)
    # the recorded world is the same, frame for frame, as without any wall-clock trouble
    for a, b in zip(ref_rec.ticks, rec.ticks, strict=True):
        assert a.timestamp == b.timestamp
        assert np.asarray(a.state).tobytes() == np.asarray(b.state).tobytes()
        assert np.array_equal(a.action, b.action)
    dt = backend.env.substeps * backend.model.opt.timestep
    np.testing.assert_allclose([t.timestamp for t in rec.ticks], np.arange(20) * dt, atol=1e-9)


def test_rollout_records_the_tick_that_started_late(backend: MujocoBackend) -> None:
    # The sleep ending tick 4 (its 5th sleep) overshoots by 0.3 periods: tick 5 starts late.
    fake = FakeTime(oversleep={4: 0.3 * PERIOD})
    clock = RealTimeClock(FPS, now=fake.now, sleep=fake.sleep)
    result, rec = _run(backend, clock, {}, fake)
    assert result.ticks == 20 and result.missed_slots == 0
    expected = np.zeros(20)
    expected[5] = 0.3 * PERIOD * 1e3
    np.testing.assert_allclose(result.lateness_ms, expected, atol=1e-3)  # float32 in the result
    assert [t.lateness_ms for t in rec.ticks] == pytest.approx(list(expected), abs=1e-6)
    assert fake.sleeps[5] == pytest.approx(0.7 * PERIOD, abs=EPS)  # tick 5 keeps slot 6: no slot lost
