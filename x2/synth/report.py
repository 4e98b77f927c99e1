"""What a synthesis run writes about itself: the note in every episode saying how its motions were made, and
synth_report.json (the run's counts and settings, and one entry per attempt). Their JSON keys are their fields,
in the order declared here."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from x2.synth.attempt import AttemptOutcome


@dataclass(frozen=True)
class HowMade:
    """How a run makes its motions: in every episode (EpisodeEnd.synthesis: a later run may resume the dataset
    with other settings) and at the head of the run's report. Schedule first: what `x2 datasets show` lists
    before it cuts."""

    schedule: str  # SessionOptions.schedule
    motion: dict[str, float | bool]  # MotionSettings.describe()

    def to_json(self) -> str:
        return json.dumps(asdict(self))


@dataclass(frozen=True)
class AttemptSummary:
    """What synth_report.json keeps of one attempt."""

    index: int
    seed: int
    accepted: bool
    reason: str
    detail: str
    ticks: int
    timing_s: dict[str, float]  # AttemptOutcome.timing, rounded
    plans: int
    collision_checks: int
    space_time_checks: int
    waited_ticks: int
    lane_replans: int

    @classmethod
    def of(cls, outcome: AttemptOutcome) -> AttemptSummary:
        stats = outcome.stats
        return cls(outcome.index, outcome.seed, outcome.accepted, outcome.reason, outcome.detail, outcome.ticks,
                   {k: round(v, 4) for k, v in outcome.timing.items()}, stats.plans, stats.collision_checks,
                   stats.space_time_checks, stats.waited_ticks, stats.lane_replans)


@dataclass(frozen=True)
class RayReport:
    """A run on Ray: the cluster, the units given to another worker after theirs was lost, the workers alive."""

    address: str
    units_retried: int
    workers_alive: int | None


@dataclass(frozen=True)
class SynthReport:
    """synth_report.json."""

    task: str
    robot: str
    variant: str
    master_seed: int
    schedule: str
    motion: dict[str, float | bool]
    requested: int
    accepted: int
    attempted: int
    first_attempt: int
    acceptance_rate: float | None  # None before any attempt
    accepted_per_minute: float
    wall_s: float
    workers: int
    ray: RayReport | None  # (no key at all for a local run)
    stop_reason: str
    rejections: dict[str, int]  # attempts by reason ("accepted" too), most common first
    attempt_time_s: dict[str, float]  # the attempts' timing summed: total, teacher, step
    episodes: list[int]  # the indices of the episodes this run committed
    attempts: list[AttemptSummary]
    versions: dict[str, str]
    finished: str  # UTC, ISO 8601 to the second

    def to_json(self) -> str:
        fields = asdict(self)
        if self.ray is None:
            del fields["ray"]
        return json.dumps(fields, indent=1) + "\n"
