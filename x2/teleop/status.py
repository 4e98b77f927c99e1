"""What the operator panel shows, written by the control thread, read by the panel's thread.

The control thread only assigns attributes and appends to bounded deques (atomic under the GIL);
everything costly (percentiles, formatting) happens in the reader, at <= 4 Hz."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class TeleopStatus:
    task: str = ""
    robot: str = ""
    device: str = ""
    fps: int = 30
    episode: int = 0  # index the episode in progress will get
    episodes_target: int | None = None
    committed: int = 0
    discarded: int = 0
    successes: int = 0
    seed: int = 0
    instruction: str = ""
    tick: int = 0
    mapper: str = ""  # the mapper's one-line state (engaged, clutch, gate)
    phase: str = "starting"  # recording | saving | resetting | done
    nodes: tuple[str, ...] = ()
    done_nodes: frozenset[str] = frozenset()
    active_nodes: frozenset[str] = frozenset()
    failure: str = ""
    success_since: int | None = None  # tick the task first succeeded (auto-end counts from here)
    clamped: int = 0
    overruns: int = 0  # control slots missed this episode
    first_tick_at: float = 0.0  # perf_counter of this episode's first tick
    last_tick_at: float = 0.0
    tick_times: deque[float] = field(default_factory=lambda: deque(maxlen=300))  # perf_counter per tick
    lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=900))  # last 30 s at 30 Hz
    messages: deque[str] = field(default_factory=lambda: deque(maxlen=4))

    def say(self, message: str) -> None:
        self.messages.append(f"{time.strftime('%H:%M:%S')} {message}")

    def achieved_hz(self) -> float:
        times = list(self.tick_times)
        if len(times) < 2 or times[-1] <= times[0]:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])
