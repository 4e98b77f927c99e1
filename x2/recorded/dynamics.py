"""`x2 calibrate dynamics`: a dataset's recordings read, split by episode, the twin fitted to them
(x2/sim/mujoco/dynamics_fit.py), the calibration file written and the report made (JSON, PNG).

A recording is an episode's commands (`/action`) and its measured joints (`/observations/qpos`, columns picked
by name: a real episode's carry the action's names, x2's own the robot's joint names). Bad input (a recording
too short to fit, joints the robot lacks, another robot's dataset) is refused in one line before anything is
written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from x2 import format as fmt
from x2.base.errors import DatasetError, SpecError
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.envspec.calibration import FitSummary, base_robot_name, calibration_file, dynamics_section, write_dynamics
from x2.envspec.env import EnvSpec
from x2.files import atomic
from x2.sim.mujoco.calibrated import check_stable
from x2.sim.mujoco.dynamics_fit import Errors, FitResult, Recording, fit_dynamics

MIN_TICKS = 10  # a recording shorter than this (a third of a second at 30 fps) says nothing about a servo


@dataclass(frozen=True)
class DynamicsRun:
    path: Path  # the calibration file written
    report: Path  # its JSON report
    picture: Path  # its PNG of trajectories overlaid
    result: FitResult
    fitted: list[int]
    held_out: list[int]
    summary: dict[str, dict[str, float]]  # "before"/"after" -> figure -> value


def split_episodes(indices: Sequence[int], holdout: float, seed: int) -> tuple[list[int], list[int]]:
    """(fitted, held out) episodes: a deterministic draw from `seed`, at least one of each when there are two."""
    order = list(np.random.default_rng(seed).permutation(sorted(indices)))
    n_held = 0 if holdout <= 0 or len(order) < 2 else min(len(order) - 1, max(1, round(holdout * len(order))))
    return sorted(int(i) for i in order[n_held:]), sorted(int(i) for i in order[:n_held])


def read_recordings(ds: Dataset, env: EnvSpec, indices: Sequence[int]) -> list[Recording]:
    """The recordings of `indices`, checked against the robot (one line naming what does not fit)."""
    robot = env.robot
    wanted = [j for a in robot.arms for j in a.joints]
    out = []
    for i in indices:
        with ds.load(i) as ep:
            where = str(ep.path)
            recorded = str(ep.attrs.get(fmt.ROBOT_ATTR, ""))
            if base_robot_name(recorded) != base_robot_name(robot.name):
                raise DatasetError(f"{where}: robot: found {recorded!r}; allowed: {base_robot_name(robot.name)!r} "
                                   "(a dataset recorded on the robot being calibrated)")
            action = np.asarray(ep.numeric(fmt.ACTION, 2), dtype=np.float64)
            qpos = np.asarray(ep.numeric(fmt.QPOS, 2), dtype=np.float64)
            stamps = np.asarray(ep.numeric(fmt.TIMESTAMPS, 1), dtype=np.float64)
            names = tuple(str(n) for n in ep.dataset_attrs(fmt.QPOS).get("names", ()))
        if action.shape[1] != robot.action_dim:
            raise DatasetError(f"{where}: action: found {action.shape[1]} values per tick; allowed: "
                               f"{robot.action_dim} ({', '.join(robot.action_names)})")
        missing = [j for j in wanted if j not in names]
        if missing:
            raise DatasetError(f"{where}: observations/qpos: found joints {', '.join(names) or 'none'}; allowed: "
                               f"the joints of {robot.name} ({', '.join(missing)} missing)")
        if len(action) < MIN_TICKS or len(qpos) != len(action):
            raise DatasetError(f"{where}: action: found {len(action)} ticks ({len(qpos)} measured); allowed: at "
                               f"least {MIN_TICKS} ticks with one measurement each, to fit a servo's response")
        if not (np.isfinite(action).all() and np.isfinite(qpos).all()):
            raise DatasetError(f"{where}: action/qpos: found non-finite values; allowed: finite numbers")
        steps = np.diff(stamps)
        if len(stamps) != len(action) or not len(steps) or not np.all(steps > 0):
            raise DatasetError(f"{where}: timestamps: found {len(stamps)} values (not increasing, or not one per "
                               "tick); allowed: one increasing timestamp per tick")
        out.append(Recording(i, action, names, qpos, float(np.median(steps))))
    return out


def calibrate_dynamics(dataset: Path, robot: str, holdout: float, name: str | None, seed: int,
                       progress: Callable[[str], None], max_iter: int = 30, arms: Sequence[str] = ()) -> DynamicsRun:
    """Fit the twin of `robot` to the dataset's recordings; write specs/calibrations/<name>.yaml (its dynamics
    section only), its JSON report and its PNG."""
    ds = Dataset.open(dataset)
    try:
        env = load_env(None, robot=robot)
        indices = [r.index for r in ds.episodes()]
        if not indices:
            raise DatasetError(f"{dataset}: episodes: found none; allowed: a dataset with recordings to fit")
        known = [a.name for a in env.robot.arms]
        for arm in arms:
            if arm not in known:
                raise SpecError(None, None, "--arm", repr(arm), f"an arm of {env.robot.name}: {', '.join(known)}")
        fitted, held = split_episodes(indices, holdout, seed)
        progress(f"reading {len(indices)} episodes ({len(fitted)} fitted, {len(held)} held out)")
        recs = {r.episode: r for r in read_recordings(ds, env, indices)}
    finally:
        ds.close()
    base = base_robot_name(env.robot.name)
    # (the default is made a calibration name: a dataset folder may hold spaces or a `+`; a given --name is checked)
    name = name or re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{base}-{dataset.resolve().name}").strip("-")
    path = calibration_file(name)
    result = fit_dynamics(env.robot, env.robot.action_names, env.booth.timestep, env.substeps,
                          [recs[i] for i in fitted], [recs[i] for i in held], progress, max_iter, arms)
    check_stable(replace(env.robot, calibration=replace(result.calibration, name=path.stem)), env.booth.timestep)
    summary = {k: _figures(v) for k, v in (("before", result.before), ("after", result.after))}
    fit = FitSummary(dataset=str(dataset), episodes_fitted=fitted, episodes_held_out=held,
                     tcp_error_mm={f"{part}_{k}": v for part, f in summary.items() for k, v in f.items()
                                   if k.endswith("_mm") and math.isfinite(v)},
                     rms_rad={f"{part}_{k}": v for part, f in summary.items() for k, v in f.items()
                              if k.endswith("_rad") and math.isfinite(v)})
    section = dynamics_section(result.calibration, fit, f"x2 calibrate dynamics --robot {robot} {dataset} "
                               f"--holdout {holdout:g} --seed {seed}")
    report = path.with_suffix(".dynamics.json")
    picture = path.with_suffix(".dynamics.png")
    write_dynamics(path, base, section)
    atomic.write_text(report, json.dumps(_report(result, summary, fitted, held), indent=1))
    _plot(result, picture)
    return DynamicsRun(path, report, picture, result, fitted, held, summary)


def _figures(parts: dict[str, Errors]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part, e in parts.items():
        tcp = np.concatenate(e.tcp) * 1000.0 if e.tcp else np.zeros(0)
        for stat, fn in (("median", np.median), ("p95", lambda a: np.percentile(a, 95)), ("max", np.max)):
            out[f"{part}_tcp_{stat}_mm"] = round(float(fn(tcp)), 4) if len(tcp) else float("nan")
        rms = [v for vals in e.rms.values() for v in vals]
        out[f"{part}_joint_rms_rad"] = round(float(np.sqrt(np.mean(np.square(rms)))), 6) if rms else float("nan")
    return out


def _report(result: FitResult, summary: dict[str, dict[str, float]], fitted: list[int],
            held: list[int]) -> dict[str, object]:
    def joints(parts: dict[str, Errors]) -> dict[str, dict[str, float]]:
        return {part: {j: float(np.sqrt(np.mean(np.square(v)))) for j, v in e.rms.items()} for part, e in parts.items()}

    return {
        "latency_ticks": result.latency_ticks, "episodes_fitted": fitted, "episodes_held_out": held,
        "steps_simulated": result.steps, "summary": summary,
        "joint_rms_rad": {"before": joints(result.before), "after": joints(result.after)},
        "parameters": [{"name": p.name, "nominal": p.nominal, "value": p.value,
                        "interval95": p.interval if math.isfinite(p.interval) else None,
                        "held": math.isnan(p.interval)} for p in result.params],
    }


def _plot(result: FitResult, path: Path) -> None:
    """Measured, uncalibrated and calibrated joint trajectories overlaid, one panel per joint of the first traces."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = result.traces[:2]
    if not traces:
        return
    cols = max(len(t[1]) for t in traces)
    fig, axes = plt.subplots(len(traces), cols, figsize=(3 * cols, 2.4 * len(traces)), squeeze=False)
    for r, (episode, joints, meas, before, after) in enumerate(traces):
        for c, joint in enumerate(joints):
            ax = axes[r][c]
            ax.plot(meas[:, c], "k-", lw=1.5, label="measured")
            ax.plot(before[:, c], "r--", lw=1, label="twin, uncalibrated")
            ax.plot(after[:, c], "g-", lw=1, label="twin, calibrated")
            ax.set_title(f"ep {episode} {joint}", fontsize=8)
            ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    with atomic.replacing(path) as tmp:
        fig.savefig(tmp, format="png", dpi=80)
    plt.close(fig)


__all__ = ["DynamicsRun", "calibrate_dynamics", "read_recordings", "split_episodes"]
