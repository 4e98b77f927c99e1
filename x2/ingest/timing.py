"""A recording's timestamps as they are: gaps and irregular steps found and reported, never filled or resampled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import DatasetError

GAP_PERIODS = 1.5  # a step longer than this many periods skipped at least one frame: a gap
LISTED_GAPS = 20  # a recording's `recording` attr lists its first gaps; the counts cover all of them


@dataclass(frozen=True)
class TimingReport:
    """What one episode's timestamps say against its fps."""

    frames: int
    period_s: float  # 1 / fps
    tolerance_s: float  # a step within this of the period is regular (LeRobot's own tolerance)
    duration_s: float  # last timestamp - first
    gaps: tuple[tuple[int, float], ...]  # (the frame after the gap, its step in s): steps over GAP_PERIODS periods
    missing_frames: int  # frames the gaps skipped, by their length in periods
    irregular: int  # other steps off the period by more than the tolerance
    largest_step_s: float

    def to_json(self) -> dict[str, Any]:
        return {"frames": self.frames, "period_s": self.period_s, "tolerance_s": self.tolerance_s,
                "duration_s": self.duration_s, "gap_count": len(self.gaps), "missing_frames": self.missing_frames,
                "gaps": [[frame, step] for frame, step in self.gaps[:LISTED_GAPS]], "irregular_steps": self.irregular,
                "largest_step_s": self.largest_step_s}

    def summary(self) -> str:
        if not self.gaps and not self.irregular:
            return "regular"
        parts = []
        if self.gaps:
            first = ", ".join(f"before frame {f} ({s * 1000:.0f} ms)" for f, s in self.gaps[:3])
            more = f" and {len(self.gaps) - 3} more" if len(self.gaps) > 3 else ""
            parts.append(f"{len(self.gaps)} gap{'s' * (len(self.gaps) != 1)} ({self.missing_frames} frames missing: "
                         f"{first}{more})")
        if self.irregular:
            parts.append(f"{self.irregular} irregular step{'s' * (self.irregular != 1)}")
        return "; ".join(parts)


def examine(timestamps: Floats, fps: float, tolerance_s: float, where: str) -> TimingReport:
    """Gaps and irregular steps of `timestamps` (s) at `fps`; timestamps that do not increase are refused."""
    stamps = np.asarray(timestamps, dtype=np.float64)
    if stamps.ndim != 1 or len(stamps) == 0:
        raise DatasetError(f"{where}: timestamp: found {stamps.shape} values; allowed: at least one frame")
    if not np.all(np.isfinite(stamps)):
        bad = int(np.flatnonzero(~np.isfinite(stamps))[0])
        raise DatasetError(f"{where}: timestamp: found {stamps[bad]} at frame {bad}; allowed: finite seconds")
    steps = np.diff(stamps)
    if np.any(steps <= 0):
        bad = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise DatasetError(f"{where}: timestamp: found {stamps[bad]:.6f} after {stamps[bad - 1]:.6f} at frame {bad}; "
                           "allowed: strictly increasing time (x2 keeps a recording's own times, it does not reorder)")
    period = 1.0 / fps
    gap = steps > GAP_PERIODS * period
    frames = np.flatnonzero(gap) + 1
    gaps = tuple((int(f), float(steps[f - 1])) for f in frames)
    missing = int(sum(round(s / period) - 1 for _, s in gaps))
    irregular = int(np.count_nonzero(~gap & (np.abs(steps - period) > tolerance_s)))
    return TimingReport(len(stamps), period, tolerance_s, float(stamps[-1] - stamps[0]), gaps, missing, irregular,
                        float(steps.max()) if len(steps) else 0.0)
