"""`x2 calibrate dynamics` against ground truth (issue 42, "Must show"), and what it costs.

  python bench/bench_calibrate_dynamics.py truth --out /tmp/cal   # a., c.
  python bench/bench_calibrate_dynamics.py truth --out /tmp/cal --episodes 4 --seconds 3   # a quick look

`truth`: a twin with known perturbed parameters (ALOHA's servo gains +-30 % per joint with kv scaled alike, joint
damping x2, friction loss x3, a 2-tick command latency) written as the calibration file `aloha-truth`, records
N joint-command trajectories (reaching, pick-like motions, fast and slow: minimum-jerk moves between random
poses of a free-space box in front of the robot) through x2's own loop and backend, as ordinary x2 episodes. The
twin `aloha` (uncalibrated) is then calibrated to that dataset with `x2 calibrate dynamics`'s library call, and
the bench prints every parameter against the truth, the held-out TCP error before and after, and the fit's cost
(wall time, simulated steps) against one replay of the same trajectories (c.: run with `taskset -c 0,1`).
With `--via-lerobot`, the dataset goes out through `x2 export lerobot` and back through `x2 import lerobot`
first (when this x2 has it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from x2.envspec import load_env
from x2.recorded.dynamics import calibrate_dynamics
from x2.recorded.replay import replay_actions
from x2.rollout import Rollout, open_dataset
from x2.rollout.episodes import record_episode
from x2.rollout.teacher import Observation
from x2.sim import make_backend
from x2.sim.backend import ResetInfo

FACTORS = {"waist": 1.3, "shoulder": 0.75, "elbow": 1.2, "forearm_roll": 0.7, "wrist_angle": 1.25, "wrist_rotate": 0.8}
DAMPING_X, FRICTION_X, LATENCY = 2.0, 3.0, 2
# free-space box around home: (lo, hi) offsets per joint, rad
BOX = {"waist": (-0.5, 0.5), "shoulder": (-0.25, 0.25), "elbow": (-0.35, 0.25), "forearm_roll": (-0.6, 0.6),
       "wrist_angle": (-0.5, 0.5), "wrist_rotate": (-0.9, 0.9)}


class TrajectoryTeacher:
    """Minimum-jerk moves between random poses in BOX, of random durations (0.4 s fast .. 2.5 s slow), the
    grippers opening and closing; half a second at home first."""

    def __init__(self, seed: int, seconds: float, fps: int, layout_names: tuple[str, ...]):
        self.seed, self.ticks, self.fps, self.names = seed, round(seconds * fps), fps, layout_names
        self._track: np.ndarray | None = None

    def reset(self, info: ResetInfo, home_action: np.ndarray) -> None:
        rng = np.random.default_rng(self.seed)
        home = np.asarray(home_action, dtype=np.float64)
        track = [np.repeat(home[None], self.fps // 2, axis=0)]
        here = home.copy()
        total = len(track[0])
        while total < self.ticks:
            goal = home.copy()
            for i, name in enumerate(self.names):
                joint = name.split("_", 1)[1]
                if joint in BOX:
                    goal[i] += rng.uniform(*BOX[joint])
                elif joint == "gripper":
                    goal[i] = float(rng.choice([0.1, 1.0]))
            n = max(2, round(rng.choice([rng.uniform(0.4, 0.8), rng.uniform(1.0, 2.5)]) * self.fps))
            s = np.arange(1, n + 1) / n
            blend = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
            track.append(here + (goal - here) * blend[:, None])
            here = goal
            total += n
        self._track = np.concatenate(track)[: self.ticks]

    def act(self, obs: Observation) -> np.ndarray | None:
        assert self._track is not None
        return self._track[obs.tick] if obs.tick < len(self._track) else None


def write_truth(work: Path) -> dict[str, float]:
    """The perturbed twin as a calibration file; returns the true value per parameter name."""
    env = load_env(None, robot="aloha")
    base = make_backend(env)
    m = base.model
    truth: dict[str, float] = {}
    arms: dict[str, object] = {}
    for arm in env.robot.arms:
        joints = {}
        for j, act in zip(arm.joints, arm.actuators, strict=True):
            f = FACTORS[j.split("_", 1)[1]]
            kp, kv = float(m.actuator(act).gainprm[0]), float(-m.actuator(act).biasprm[2])
            damping, friction = float(m.joint(j).damping[0]), float(m.joint(j).frictionloss[0])
            values = {"kp": kp * f, "kv": kv * f, "damping": damping * DAMPING_X, "frictionloss": friction * FRICTION_X}
            joints[j] = values
            truth.update({f"{j}.scale": f, f"{j}.damping": values["damping"],
                          f"{j}.frictionloss": values["frictionloss"], f"{j}.armature": float(m.joint(j).armature[0])})
        arms[arm.name] = {"gravcomp": 1.0, "joints": joints}
        truth[f"{arm.name}.gravcomp"] = 1.0
    base.close()
    folder = work / "specs" / "calibrations"
    folder.mkdir(parents=True, exist_ok=True)
    data = {"name": "aloha-truth", "robot": "aloha",
            "dynamics": {"latency_ticks": LATENCY, "arms": arms, "made_by": "bench/bench_calibrate_dynamics.py"},
            "made_by": "bench/bench_calibrate_dynamics.py: the ground truth"}
    (folder / "aloha-truth.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return truth


def record(work: Path, episodes: int, seconds: float) -> Path:
    # (a task's scene: a dataset records object poses, and a bare booth has no object to record)
    env = load_env("pick_place", robot="aloha@aloha-truth")
    backend = make_backend(env)
    path = work / "data" / "truth"
    ds = open_dataset(path, env, backend)
    rollout = Rollout(backend)
    try:
        for k in range(episodes):
            teacher = TrajectoryTeacher(1000 + k, seconds, env.fps, env.robot.action_names)
            record_episode(ds, rollout, teacher, seed=k, source="scripted")
    finally:
        ds.close()
        backend.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["truth"])
    parser.add_argument("--out", type=Path, default=Path("/tmp/x2-bench-calibrate"))
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--via-lerobot", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    os.chdir(args.out)
    truth = write_truth(args.out)
    t0 = time.perf_counter()
    dataset = record(args.out, args.episodes, args.seconds)
    print(f"recorded {args.episodes} x {args.seconds:g} s in {time.perf_counter() - t0:.1f} s: {dataset}")
    if args.via_lerobot:
        x2 = [sys.executable, "-m", "x2"]
        subprocess.run([*x2, "export", "lerobot", str(dataset), "--out", str(args.out / "lerobot")], check=True)
        subprocess.run([*x2, "import", "lerobot", str(args.out / "lerobot"), "--robot", "aloha", "--dataset",
                        str(args.out / "data" / "imported")], check=True)
        dataset = args.out / "data" / "imported"
    # c.: one replay of every trajectory (x2's own backend, the whole world) against the fit
    from x2.datasets import Dataset

    ds = Dataset.open(dataset)
    t0 = time.perf_counter()
    ticks = 0
    for rec in ds.episodes():
        with ds.load(rec.index) as ep:
            rep = replay_actions(ep) if ep.attrs.get("source") != "real" else None
            ticks += ep.frames
    replay_s = time.perf_counter() - t0
    ds.close()
    t0 = time.perf_counter()
    run = calibrate_dynamics(dataset, "aloha", 0.2, "aloha-fit", 0, lambda m: print(f"  {m}", flush=True),
                             args.iterations)
    fit_s = time.perf_counter() - t0
    result = run.result
    print(f"\nlatency: true {LATENCY}, fitted {result.latency_ticks}")
    print(f"{'parameter':34s} {'true':>10s} {'fitted':>10s} {'error %':>8s} {'+- (95%)':>10s}")
    worst: dict[str, float] = {}
    for p in result.params:
        t = truth[p.name]
        err = abs(p.value - t) / abs(t) * 100 if t else float("nan")
        kind = p.name.split(".")[-1]
        worst[kind] = max(worst.get(kind, 0.0), err if np.isfinite(err) else 0.0)
        print(f"{p.name:34s} {t:10.4g} {p.value:10.4g} {err:8.2f} {p.interval:10.2g}")
    print("worst error per kind (%):", {k: round(v, 2) for k, v in worst.items()})
    for when in ("before", "after"):
        f = run.summary[when]
        print(f"held-out TCP {when}: median {f['held_out_tcp_median_mm']:.3f} mm, p95 {f['held_out_tcp_p95_mm']:.3f} "
              f"mm, max {f['held_out_tcp_max_mm']:.3f} mm; joint RMS {f['held_out_joint_rms_rad']:.2e} rad")
    print(f"\nc. cost on {os.cpu_count()} visible cores (taskset -c 0,1 for 2): fit {fit_s:.1f} s, "
          f"{result.steps} physics steps (one arm each); one replay of all {ticks} ticks "
          f"({ticks * 16} steps, both arms, the whole world): {replay_s:.2f} s; ratio {fit_s / replay_s:.0f}x")
    print(f"report: {run.report}, {run.picture}")
    del rep


if __name__ == "__main__":
    main()
