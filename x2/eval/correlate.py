"""`x2 eval correlate`: the real table's rows matched to the x2 eval reports of the same policies, and the
agreement of their success rates (x2.eval.agreement), overall and per task.

Matching rule (docs/evaluation.md, "Sim-vs-real agreement"): a CSV `policy` names an x2 policy when it equals
its identity (what `x2 eval` printed and recorded: `hold`, a LeRobot checkpoint's folder, ...), its digest or a
prefix of it of at least 8 characters, or the name of the run folder its report is in (`eval-pick_place-act`),
which must hold that one policy. A policy is its (identity, digest): its episodes in every report given
are pooled (each episode counted once). A name that matches no policy, or more than one, is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from x2.base.errors import PolicyError, SpecError
from x2.eval.agreement import (
    MIN_POLICIES,
    bootstrap_pearson,
    fitted_line,
    kendall,
    mmrv,
    pearson,
    spearman,
)
from x2.eval.evaluate import REPORT_JSON
from x2.eval.real_table import RealRow
from x2.eval.report import build_report, wilson

DIGEST_PREFIX = 8


@dataclass(frozen=True)
class SimEpisode:
    key: tuple[str, int]  # (dataset, index): the same episode in two reports is one
    task: str
    split: str
    success: bool


@dataclass
class SimPolicy:
    identity: str
    digest: str
    kind: str
    folders: set[str]  # names of the run folders whose reports hold it (alone or not)
    reports: set[str]
    episodes: dict[tuple[str, int], SimEpisode]


@dataclass(frozen=True)
class SimSource:
    """One report as read: where it is, the run folder's name, and its episode rows (EvalReport["episodes"])."""

    path: str
    folder: str
    episodes: list[dict[str, object]]


def load_sources(paths: list[Path]) -> list[SimSource]:
    """Each path: an eval_report.json, a run folder holding one, or a dataset of x2 eval rollouts (scored here,
    nothing written)."""
    sources: list[SimSource] = []
    for path in paths:
        if path.is_dir() and not (path / REPORT_JSON).is_file():
            parts = [path / s for s in ("train", "eval") if (path / s).is_dir()] or [path]
            sources.append(SimSource(str(path), path.name, list(build_report(parts)["episodes"])))
            continue
        file = path / REPORT_JSON if path.is_dir() else path
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SpecError(str(file), None, "report", "no such file", f"an x2 eval {REPORT_JSON}, its run folder "
                            "or a dataset of x2 eval rollouts") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SpecError(str(file), None, "report", f"no JSON ({exc})", f"an x2 eval {REPORT_JSON}") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("episodes"), list):
            raise SpecError(str(file), None, "episodes", "none", f"an x2 eval {REPORT_JSON}")
        sources.append(SimSource(str(file), file.parent.name, list(raw["episodes"])))
    return sources


def gather_policies(sources: list[SimSource], splits: tuple[str, ...]) -> list[SimPolicy]:
    found: dict[tuple[str, str], SimPolicy] = {}
    for source in sources:
        for row in source.episodes:
            who = row.get("policy")
            if not isinstance(who, dict) or str(row.get("split")) not in splits:
                continue
            identity, digest = str(who.get("identity") or ""), str(who.get("digest") or "")
            policy = found.setdefault((identity, digest), SimPolicy(identity, digest, str(who.get("kind") or ""),
                                                                    set(), set(), {}))
            policy.folders.add(source.folder)
            policy.reports.add(source.path)
            key = (str(row.get("dataset")), int(str(row.get("index"))))
            policy.episodes[key] = SimEpisode(key, str(row.get("task")), str(row.get("split")),
                                              bool(row.get("success")))
    return list(found.values())


def match_policy(name: str, policies: list[SimPolicy], where: str) -> SimPolicy:
    """The one x2 policy a CSV name names (the module's rule), else one refusal line."""
    hits = [p for p in policies
            if name == p.identity or (p.digest and (name == p.digest or (len(name) >= DIGEST_PREFIX
                                                                          and p.digest.startswith(name))))
            or name in p.folders]  # a run folder holding two policies names both: refused below
    if len(hits) == 1:
        return hits[0]
    known = "; ".join(f"{p.identity or '?'} (run folder {', '.join(sorted(p.folders))})" for p in policies)
    if not hits:
        raise PolicyError(f"{where}: policy: found {name!r} in no x2 eval report given; allowed: a policy's "
                          f"identity, digest (or its first {DIGEST_PREFIX}+ characters) or run folder: "
                          f"{known or 'no report holds any episode'}")
    raise PolicyError(f"{where}: policy: found {name!r} naming {len(hits)} policies ("
                      + "; ".join(f"{p.identity} digest {p.digest[:12] or '-'}" for p in hits)
                      + "); allowed: a name that matches one (its full identity or digest)")


class PointRecord(TypedDict):
    policy: str  # the CSV's name
    task: str
    sim_successes: int
    sim_trials: int
    sim_rate: float
    sim_ci95: list[float]  # Wilson
    real_successes: int
    real_trials: int
    real_rate: float
    real_ci95: list[float]
    note: str
    x2_policy: dict[str, str]  # identity, digest, kind of the matched policy
    reports: list[str]


class AgreementRecord(TypedDict):
    scope: str  # "overall" or a task's name
    points: int
    policies: int
    pearson: float | None
    pearson_ci95: list[float | None]  # bootstrap percentile interval, resampling policies
    bootstrap_defined: int  # resamples where r was defined (both sides varied)
    mmrv: float | None
    spearman: float | None
    kendall_tau_b: float | None
    fit: list[float] | None  # [slope, intercept] of real ~ sim, least squares
    note: str  # why something is null


class CorrelateReport(TypedDict):
    real_table: str
    splits: list[str]
    seed: int
    bootstrap: int
    points: list[PointRecord]
    overall: AgreementRecord
    tasks: list[AgreementRecord]


def match_rows(rows: list[RealRow], policies: list[SimPolicy], table: str) -> list[PointRecord]:
    points: list[PointRecord] = []
    claimed: dict[tuple[int, str], int] = {}
    for row in rows:
        where = f"{table}:{row.line}"
        policy = match_policy(row.policy, policies, where)
        key = (id(policy), row.task)
        if key in claimed:
            raise SpecError(table, row.line, "policy", f"{row.policy!r} on {row.task!r}: the x2 policy of line "
                            f"{claimed[key]} again", "one row per x2 policy and task")
        claimed[key] = row.line
        episodes = [e for e in policy.episodes.values() if e.task == row.task]
        if not episodes:
            tasks = sorted({e.task for e in policy.episodes.values()})
            raise SpecError(table, row.line, "task", f"{row.task!r}, with no x2 eval episodes of {policy.identity}",
                            f"a task it was evaluated on: {', '.join(tasks)}")
        k = sum(e.success for e in episodes)
        sim_lo, sim_hi = wilson(k, len(episodes))
        real_lo, real_hi = wilson(row.successes, row.trials)
        points.append({
            "policy": row.policy, "task": row.task, "sim_successes": k, "sim_trials": len(episodes),
            "sim_rate": round(k / len(episodes), 6), "sim_ci95": [round(sim_lo, 6), round(sim_hi, 6)],
            "real_successes": row.successes, "real_trials": row.trials,
            "real_rate": round(row.successes / row.trials, 6), "real_ci95": [round(real_lo, 6), round(real_hi, 6)],
            "note": row.note, "x2_policy": {"identity": policy.identity, "digest": policy.digest, "kind": policy.kind},
            "reports": sorted(policy.reports)})
    return points


def agreement(scope: str, points: list[PointRecord], resamples: int, seed: int) -> AgreementRecord:
    names = sorted({_who(p) for p in points})  # by the x2 policy: two CSV names of one policy are one policy
    sim = np.array([p["sim_rate"] for p in points])
    real = np.array([p["real_rate"] for p in points])
    groups = np.array([names.index(_who(p)) for p in points])
    record: AgreementRecord = {"scope": scope, "points": len(points), "policies": len(names), "pearson": None,
                               "pearson_ci95": [None, None], "bootstrap_defined": 0, "mmrv": None,
                               "spearman": None, "kendall_tau_b": None, "fit": None, "note": ""}
    if len(names) < MIN_POLICIES:
        record["note"] = f"{len(names)} policies; a correlation needs at least {MIN_POLICIES}"
        return record
    r = pearson(sim, real)
    boot = bootstrap_pearson(sim, real, groups, resamples, seed)
    fit = fitted_line(sim, real)
    record.update({"pearson": _round(r), "pearson_ci95": [_round(boot.low), _round(boot.high)],
                   "bootstrap_defined": boot.defined, "mmrv": _round(mmrv(sim, real)),
                   "spearman": _round(spearman(sim, real)), "kendall_tau_b": _round(kendall(sim, real)),
                   "fit": None if fit is None else [round(fit[0], 6), round(fit[1], 6)]})
    if boot.defined < resamples / 2:
        record["note"] = f"too few policies to trust the interval ({boot.defined} of {resamples} resamples usable)"
    if r is None:
        flat = "sim" if np.ptp(sim) == 0 else "real"
        record["note"] = f"every {flat} rate is {float((sim if flat == 'sim' else real)[0]):.3f}: no correlation"
    return record


def correlate(rows: list[RealRow], sources: list[SimSource], table: str, splits: tuple[str, ...],
              resamples: int, seed: int) -> CorrelateReport:
    points = match_rows(rows, gather_policies(sources, splits), table)
    policies = {_who(p): p["x2_policy"]["identity"] for p in points}
    if len(policies) < MIN_POLICIES:
        raise SpecError(table, None, "policy", f"{len(policies)} policies ({', '.join(sorted(policies.values()))})",
                        f"at least {MIN_POLICIES} policies, each with an x2 eval report, for a correlation")
    tasks = sorted({p["task"] for p in points})
    return {"real_table": table, "splits": list(splits), "seed": seed, "bootstrap": resamples, "points": points,
            "overall": agreement("overall", points, resamples, seed),
            "tasks": [agreement(t, [p for p in points if p["task"] == t], resamples, seed) for t in tasks]}


def _who(point: PointRecord) -> tuple[str, str]:
    return point["x2_policy"]["identity"], point["x2_policy"]["digest"]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
