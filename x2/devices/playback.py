"""`playback:FILE` (alias `replay:FILE`): play a recorded device stream with its original timing.

The playback clock starts at the first `latest()` call, i.e. the first control tick of the episode,
which is where the recorded stream's time zero was. Samples and events are re-published at their
recorded offsets by a reader thread, so the loop sees them exactly as it would see the device.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from x2.devices.base import DeviceBase, Sample
from x2.devices.stream import Stream, read_stream


class PlaybackDevice(DeviceBase):
    def __init__(self, path: str | Path, stream_name: str | None = None):
        super().__init__()
        self.path = Path(path)
        self.stream: Stream = read_stream(self.path, stream_name)
        self.kind = self.stream.kind
        self.name = "playback"
        self._go = threading.Event()

    def _open(self) -> None:
        self._set_detail(f"{self.path.name}: {len(self.stream)} samples, {self.stream.duration:.1f} s")
        self._run_reader(self._play_all, "x2-playback")

    def latest(self) -> Sample | None:
        self._go.set()
        return super().latest()

    def _close(self) -> None:
        self._go.set()

    def _play_all(self) -> None:
        self._go.wait()
        start = time.monotonic()
        s = self.stream
        items = [(float(t), 0, i) for i, t in enumerate(s.t)] + [(e[0], 1, i) for i, e in enumerate(s.events)]
        items.sort()
        for t, is_event, i in items:
            delay = start + t - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            if is_event:
                _, kind, arm = s.events[i]
                self._emit(kind, arm)
            else:
                self._publish({k: v[i] for k, v in s.values.items()})
        self._set_detail(f"{self.path.name}: finished after {s.duration:.1f} s", finished=True)
        self._stop.wait()
