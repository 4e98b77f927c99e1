"""Loop clocks. The simulator is the clock of record; these only pace the wall clock.

`RealTimeClock` keeps an absolute deadline grid: a tick that overruns skips the slots it missed
(counted, never caught up by running later ticks faster). `FreeClock` runs as fast as it can.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    missed: int

    def start(self) -> None: ...
    def lateness_ms(self) -> float: ...  # how late the current tick started against its slot
    def wait(self) -> None: ...  # end of tick: sleep until the next free slot


class FreeClock:
    """No pacing: synthesis, replay and tests."""

    missed = 0

    def start(self) -> None:
        pass

    def lateness_ms(self) -> float:
        return 0.0

    def wait(self) -> None:
        pass


class RealTimeClock:
    def __init__(self, fps: float, now: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep):
        self.period = 1.0 / fps
        self._now, self._sleep = now, sleep
        self.missed = 0
        self._t0 = 0.0
        self._slot = 0

    def start(self) -> None:
        self._t0 = self._now()
        self._slot = 0
        self.missed = 0

    def lateness_ms(self) -> float:
        return max(0.0, self._now() - (self._t0 + self._slot * self.period)) * 1e3

    def wait(self) -> None:
        nxt = self._slot + 1
        now = self._now()
        due = self._t0 + nxt * self.period
        if now > due:
            # Overran past one or more slots: start on the next slot still ahead, count the rest.
            first_free = math.floor((now - self._t0) / self.period) + 1
            self.missed += first_free - nxt
            nxt = first_free
            due = self._t0 + nxt * self.period
        self._slot = nxt
        delay = due - self._now()
        if delay > 0:
            self._sleep(delay)
