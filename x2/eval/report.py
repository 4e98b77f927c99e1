"""The evaluation report, computed from the recorded episodes alone (so anyone holding the datasets recomputes it).

Per split (train = in-distribution, eval = out-of-distribution): the success rate with a 95 % Wilson interval,
the mean progress score (the DAG's node scores completed, over their sum), each subtask's completion rate, and
failure attribution: the node an unsuccessful episode failed at (its DAG failure, else the first node it was
ready for but did not complete) and why (the failure predicate, a stage timeout, the policy's fault or end, the
horizon). Per capability dimension: the tasks' rates. Where the time went: inference, rendering, physics.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np

from x2 import format as fmt
from x2.datasets import Dataset, Episode
from x2.recorded.world import recorded_env

Z95 = 1.959964


class GroupSummary(TypedDict):
    """One group's numbers (one task and split, or a dimension's): `summarize_group`."""

    episodes: int
    successes: int
    success_rate: float | None
    success_ci95: list[float]
    mean_progress: float | None
    mean_frames: float | None
    subtask_completion: dict[str, float]
    failures_at: dict[str, int]
    failure_reasons: dict[str, int]
    time_share: dict[str, float]


class DimensionSummary(TypedDict):
    episodes: int
    success_rate: float | None
    success_ci95: list[float]
    mean_progress: float | None


class RunSummary(TypedDict):
    """How one split's run went (x2.eval.runner.run_summary)."""

    split: str
    episodes: int
    run_now: int
    from_earlier_runs: int
    per_minute: float
    lost_with_their_worker: list[int]


class RunRecord(RunSummary):
    """A run as the report lists it (x2.eval.evaluate)."""

    variant: str
    master_seed: int
    dataset: str


class EvalReport(TypedDict):
    """eval_report.json (written with sorted keys)."""

    policies: list[dict[str, object]]
    datasets: list[str]
    splits: list[str]
    tasks: dict[str, dict[str, GroupSummary]]  # task -> split -> its numbers
    dimensions: dict[str, dict[str, DimensionSummary]]  # dimension -> split -> its numbers
    episodes: list[dict[str, object]]  # an EpisodeScore each, rounded
    runs: NotRequired[list[RunRecord]]  # the runs that made the datasets, when the report is a run's


@dataclass(frozen=True)
class EpisodeScore:
    dataset: str
    index: int
    task: str
    dimensions: tuple[str, ...]
    split: str
    seed: int
    slot: int | None
    success: bool
    progress: float
    nodes: tuple[str, ...]  # the task DAG's, in its order
    completed: tuple[str, ...]
    failure: tuple[str, int, str] | None  # (node, frame, reason) of an unsuccessful episode
    frames: int
    time_ms: dict[str, float]  # inference, render, physics, other
    policy: dict[str, object]  # kind, identity, digest, privileged (the episode's policy attr, as read)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _why(ep: Episode, frames: int) -> str:
    policy = ep.json_attr(fmt.POLICY_ATTR) or {}
    ended = policy.get("ended") if isinstance(policy, dict) else None
    if isinstance(ended, dict):
        return f"policy {ended.get('reason')}: {ended.get('detail')}"
    end = ep.text(fmt.END_REASON_ATTR)
    if end == "horizon":
        return f"horizon: not done after {frames} frames"
    if end == "unstable":
        return "unstable: the physics could not integrate the commanded motion"
    return end or "unknown"


def score_episode(ep: Episode, dataset: str) -> EpisodeScore:
    dag = ep.dag
    nodes = [str(n) for n in dag["nodes"]]
    scores = {str(k): float(v) for k, v in dict(dag["scores"]).items()}
    completed = tuple(n for n in nodes if n in {str(node) for node, _ in ep.events})
    total = sum(scores.values()) or 1.0
    progress = sum(scores.get(n, 0.0) for n in completed) / total
    failure: tuple[str, int, str] | None = None
    frames = ep.frames
    if not ep.success:
        failure = ep.failure
        if failure is None:
            preds = {n: {str(a) for a, b in dag["edges"] if str(b) == n} for n in nodes}
            ready = [n for n in nodes if n not in completed and preds[n] <= set(completed)]
            failure = (ready[0] if ready else "-", max(0, frames - 1), _why(ep, frames))
    env = recorded_env(ep)
    timing = {name: _timing(ep, name) for name in ("inference", "render", "step", "teacher", "label", "record")}
    time_ms = {"inference": timing["inference"], "render": timing["render"], "physics": timing["step"],
               "other": max(0.0, timing["teacher"] - timing["inference"] - timing["render"])
               + timing["label"] + timing["record"]}
    return EpisodeScore(dataset, ep.index, ep.task, tuple(env.task.dimensions) if env.task else (), ep.split,
                        int(ep.attrs.get(fmt.SEED_ATTR, -1)),
                        None if ep.attrs.get(fmt.SLOT_ATTR) is None else int(ep.attrs[fmt.SLOT_ATTR]),
                        ep.success, progress, tuple(nodes), completed, failure, frames, time_ms, _policy(ep))


def _policy(ep: Episode) -> dict[str, object]:
    raw = ep.json_attr(fmt.POLICY_ATTR) or {}
    if not isinstance(raw, dict):
        return {"kind": ep.source, "identity": ep.source}
    return {k: raw.get(k) for k in ("kind", "identity", "digest", "privileged", "observes")}


def _timing(ep: Episode, stage: str) -> float:
    path = fmt.timing_path(stage)
    return float(np.asarray(ep[path], dtype=np.float64).sum()) if path in ep else 0.0


def score_datasets(paths: Iterable[Path]) -> list[EpisodeScore]:
    out: list[EpisodeScore] = []
    for path in paths:
        ds = Dataset.open(path)
        for record in ds.episodes():
            with ds.load(record.index) as ep:
                out.append(score_episode(ep, str(ds.root)))
    return out


def summarize_group(scores: Sequence[EpisodeScore]) -> GroupSummary:
    """One group's numbers (one task and split, or a dimension's)."""
    n = len(scores)
    k = sum(s.success for s in scores)
    lo, hi = wilson(k, n)
    nodes = list(dict.fromkeys(node for s in scores for node in s.nodes))
    subtasks = {node: round(sum(node in s.completed for s in scores) / n, 4) for node in nodes} if n else {}
    at = Counter(s.failure[0] for s in scores if s.failure is not None)
    why = Counter(f"{s.failure[0]}: {s.failure[2].split(':')[0]}" for s in scores if s.failure is not None)
    time_ms = {key: sum(s.time_ms[key] for s in scores) for key in ("inference", "render", "physics", "other")}
    total = sum(time_ms.values()) or 1.0
    return {"episodes": n, "successes": k, "success_rate": round(k / n, 4) if n else None,
            "success_ci95": [round(lo, 4), round(hi, 4)],
            "mean_progress": round(sum(s.progress for s in scores) / n, 4) if n else None,
            "mean_frames": round(sum(s.frames for s in scores) / n, 1) if n else None,
            "subtask_completion": subtasks, "failures_at": dict(at.most_common()),
            "failure_reasons": dict(why.most_common()),
            "time_share": {key: round(v / total, 4) for key, v in time_ms.items()}}


def build_report(paths: Sequence[Path]) -> EvalReport:
    scores = score_datasets(paths)
    policies = list({json.dumps(s.policy, sort_keys=True): s.policy for s in scores}.values())
    tasks = sorted({s.task for s in scores})
    splits = [sp for sp in ("train", "eval") if any(s.split == sp for s in scores)]
    per_task = {task: {sp: summarize_group([s for s in scores if s.task == task and s.split == sp]) for sp in splits
                       if any(s.task == task and s.split == sp for s in scores)} for task in tasks}
    dims = sorted({d for s in scores for d in s.dimensions})
    per_dimension = {d: {sp: summarize_group([s for s in scores if d in s.dimensions and s.split == sp])
                         for sp in splits if any(d in s.dimensions and s.split == sp for s in scores)}
                     for d in dims}
    return {"policies": policies, "datasets": [str(p) for p in paths], "splits": splits, "tasks": per_task,
            "dimensions": {d: {sp: _dimension(v) for sp, v in by.items()} for d, by in per_dimension.items()},
            "episodes": [_episode_row(s) for s in scores]}


def _dimension(v: GroupSummary) -> DimensionSummary:
    return {"episodes": v["episodes"], "success_rate": v["success_rate"], "success_ci95": v["success_ci95"],
            "mean_progress": v["mean_progress"]}


def _episode_row(s: EpisodeScore) -> dict[str, object]:
    row = asdict(s)
    row["time_ms"] = {k: round(v, 1) for k, v in s.time_ms.items()}
    row["progress"] = round(s.progress, 4)
    return row
