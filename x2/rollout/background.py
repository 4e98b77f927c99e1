"""Recording off the control thread: the loop hands each tick to a deque, a writer thread appends.

Teleop paces the loop against the wall clock, so a recorder stall (an HDF5 block flush takes a few
milliseconds every 30 ticks) would show up as lateness. Here the control thread only appends the
tick's arrays to a deque (the loop makes them fresh every tick, so nothing is copied, and a deque
append needs no lock or wake-up); the writer thread wakes every `period_s`, takes what is there and
does the HDF5 work while the control thread steps physics (MuJoCo releases the GIL) or sleeps. A
writer error is re-raised in the control thread at its next tick; `close()` writes everything queued.
"""

from __future__ import annotations

import threading
from collections import deque

from x2.format import Tick
from x2.rollout.loop import Recorder


class BackgroundRecorder:
    def __init__(self, recorder: Recorder, period_s: float = 0.1):
        self.recorder, self.period_s = recorder, period_s
        self._ticks: deque[Tick] = deque()
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="x2-recorder", daemon=True)
        self._thread.start()

    def _write_queued(self) -> None:
        while self._ticks and self._error is None:
            try:
                self.recorder.append(self._ticks.popleft())
            except BaseException as exc:  # re-raised in the control thread
                self._error = exc

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._write_queued()
        self._write_queued()

    def append(self, tick: Tick) -> None:
        if self._error is not None:
            self._raise()
        self._ticks.append(tick)

    def close(self) -> None:
        """Write every queued tick and stop the thread; re-raise a writer error."""
        self._stop.set()
        self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc
