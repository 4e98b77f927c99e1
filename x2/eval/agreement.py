"""Sim-vs-real agreement of success rates: pure functions on arrays (one value per point, sim beside real).

Pearson's r says how linearly the twin's rates follow the real ones; its interval comes from a bootstrap that
resamples whole policies (all of a policy's points together, so a policy's tasks are not counted as independent
evidence). MMRV is SIMPLER's mean maximum rank violation (simpler_env/utils/metrics.py in the SimplerEnv
repository, as docs/evaluation.md cites it): for each point i, the largest real-rate gap |real_i - real_j| over
the points j whose order sim and real disagree on, where "agree" compares the strict orders
`sim_i > sim_j` and `real_i > real_j` exactly as SIMPLER does (so a tie on one side and an order on the other is
a violation, seen from the point ranked higher), averaged over i: 0 when the twin ranks every pair as the
real robot does, at most 1. Spearman's rho and Kendall's tau-b are the rank agreements (scipy's, ties averaged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from x2.base.arrays import Floats, Ints

MIN_POLICIES = 3  # a correlation of two points is +-1 whatever they are


def pearson(sim: Floats, real: Floats) -> float | None:
    """Pearson's r; None where either side does not vary (the correlation is undefined there)."""
    if not (_varies(sim) and _varies(real)):  # (a constant side's mean can differ from it in the last bit)
        return None
    x = np.asarray(sim, dtype=np.float64) - np.mean(sim)
    y = np.asarray(real, dtype=np.float64) - np.mean(real)
    sxx, syy = float(np.sum(x * x)), float(np.sum(y * y))
    return float(np.clip(np.sum(x * y) / math.sqrt(sxx * syy), -1.0, 1.0))


def mmrv(sim: Floats, real: Floats) -> float:
    """SIMPLER's mean maximum rank violation (see the module's docstring for its exact tie rule)."""
    s = np.asarray(sim, dtype=np.float64)
    r = np.asarray(real, dtype=np.float64)
    violated = (s[:, None] > s[None, :]) != (r[:, None] > r[None, :])  # [i, j]: i and j ordered differently
    gap = np.abs(r[:, None] - r[None, :])
    return float(np.mean(np.max(np.where(violated, gap, 0.0), axis=1))) if len(s) else 0.0


def spearman(sim: Floats, real: Floats) -> float | None:
    from scipy.stats import spearmanr

    return _finite(spearmanr(sim, real).statistic) if _varies(sim) and _varies(real) else None


def kendall(sim: Floats, real: Floats) -> float | None:
    from scipy.stats import kendalltau

    return _finite(kendalltau(sim, real).statistic) if _varies(sim) and _varies(real) else None


def fitted_line(sim: Floats, real: Floats) -> tuple[float, float] | None:
    """Least-squares real = slope * sim + intercept; None where sim does not vary."""
    if not _varies(sim):
        return None
    slope, intercept = np.polyfit(np.asarray(sim, dtype=np.float64), np.asarray(real, dtype=np.float64), 1)
    return float(slope), float(intercept)


@dataclass(frozen=True)
class Bootstrap:
    low: float | None  # the 2.5th and 97.5th percentiles of r over the resamples that defined it
    high: float | None
    resamples: int  # asked for
    defined: int  # resamples with MIN_POLICIES distinct groups in which both sides varied; the interval is over these


def bootstrap_pearson(sim: Floats, real: Floats, groups: Ints, resamples: int, seed: int,
                      level: float = 0.95) -> Bootstrap:
    """Percentile interval of Pearson's r, resampling the groups (policies) with replacement: each resample
    draws as many groups as there are, and keeps every point of each drawn group. A resample of fewer than
    MIN_POLICIES distinct groups is left out like one where r is undefined: two policies' r is +-1 whatever
    their rates, no evidence either way. Deterministic in `seed`."""
    s = np.asarray(sim, dtype=np.float64)
    r = np.asarray(real, dtype=np.float64)
    ids = np.unique(groups)
    members = [np.flatnonzero(groups == g) for g in ids]
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(resamples):
        drawn = rng.integers(0, len(ids), size=len(ids))
        if len(np.unique(drawn)) < MIN_POLICIES:
            continue
        rows = np.concatenate([members[k] for k in drawn])
        value = pearson(s[rows], r[rows])
        if value is not None:
            values.append(value)
    if not values:
        return Bootstrap(None, None, resamples, 0)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(np.asarray(values), [tail, 100 - tail])
    return Bootstrap(float(low), float(high), resamples, len(values))


def _varies(values: Floats) -> bool:
    return len(values) > 1 and bool(np.ptp(np.asarray(values, dtype=np.float64)) > 0)


def _finite(value: object) -> float | None:
    number = float(value)  # type: ignore[arg-type]  # scipy's result statistic is an untyped numpy scalar
    return number if math.isfinite(number) else None
