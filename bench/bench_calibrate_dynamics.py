"""`x2 calibrate dynamics` against ground truth (issue 42, "Must show"), and what it costs.

  python bench/bench_calibrate_dynamics.py truth --out /tmp/cal   # a., c.
  python bench/bench_calibrate_dynamics.py truth --out /tmp/cal --episodes 4 --seconds 3   # a quick look
  python bench/bench_calibrate_dynamics.py gym --out /tmp/gym   # b.

`truth`: a twin with known perturbed parameters (ALOHA's servo gains +-30 % per joint with kv scaled alike, joint
damping x2, friction loss x3, a 2-tick command latency) written as the calibration file `aloha-truth`, records
N joint-command trajectories (reaching, pick-like motions, fast and slow: minimum-jerk moves between random
poses of a free-space box in front of the robot) through x2's own loop and backend, as ordinary x2 episodes. The
twin `aloha` (uncalibrated) is then calibrated to that dataset with `x2 calibrate dynamics`'s library call, and
the bench prints every parameter against the truth, the held-out TCP error before and after, and the fit's cost
(wall time, simulated steps) against one replay of the same trajectories (c.: run with `taskset -c 0,1`).
With `--via-lerobot`, the episodes go out with `x2 export lerobot --state-only` and come back through
`x2 import lerobot` first (x2's own export layout is read with no table), the chain the issue names.

`gym`: gym-aloha's own ALOHA model stepped by plain MuJoCo with the same kind of trajectories, recorded with
LeRobot's writer in LeRobot's ALOHA layout, imported with `x2 import lerobot`, and x2's `aloha` calibrated to it.
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

    def __init__(self, seed: int, seconds: float, fps: int, layout_names: tuple[str, ...],
                 paces: tuple[tuple[float, float], ...] = ((0.4, 0.8), (1.0, 2.5))):
        self.seed, self.ticks, self.fps, self.names = seed, round(seconds * fps), fps, layout_names
        self.paces = paces  # each move's duration is drawn from one of these ranges (s), chosen at random
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
            n = max(2, round(rng.choice([rng.uniform(*pace) for pace in self.paces]) * self.fps))
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
                          f"{j}.frictionloss": values["frictionloss"], f"{j}.armature": float(m.joint(j).armature[0]),
                          f"{j}.kv_share": 1.0})
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


def record(work: Path, episodes: int, seconds: float, paces: tuple[tuple[float, float], ...]) -> Path:
    # (a task's scene: a dataset records object poses, and a bare booth has no object to record)
    env = load_env("pick_place", robot="aloha@aloha-truth")
    backend = make_backend(env)
    path = work / "data" / "truth"
    ds = open_dataset(path, env, backend)
    rollout = Rollout(backend)
    try:
        for k in range(episodes):
            teacher = TrajectoryTeacher(1000 + k, seconds, env.fps, env.robot.action_names, paces)
            record_episode(ds, rollout, teacher, seed=k, source="scripted")
    finally:
        ds.close()
        backend.close()
    return path


# ----- b. gym-aloha's own ALOHA model, stepped by plain MuJoCo, recorded with LeRobot's writer -----------------
GYM_FILE = "gym_aloha/assets/bimanual_viperx_transfer_cube.xml"
GYM_FPS = 50  # gym-aloha's control rate (its DT = 0.02 s), LeRobot's ALOHA datasets' fps
GYM_FINGER = (0.021, 0.057)  # gym-aloha's finger ctrl range: gripper 0..1 maps onto it


def gym_recordings(work: Path, episodes: int, seconds: float) -> Path:
    """Trajectories stepped in gym-aloha's model (its actuators, gains, force limits, friction; the cube taken
    out: it is no part of the robot), written as a LeRobot dataset in LeRobot's ALOHA layout (14-value action and
    observation.state: per arm 6 joints then the gripper 0..1)."""
    import mujoco
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from x2.envspec import vendor

    spec = mujoco.MjSpec.from_file(str(vendor.vendor_file("gym-aloha", GYM_FILE)))
    spec.delete(spec.body("box"))
    model = spec.compile()
    data = mujoco.MjData(model)
    sub = round(1.0 / GYM_FPS / model.opt.timestep)
    arms = ("left", "right")
    joints = [f"vx300s_{a}/{j}" for a in arms for j in FACTORS]
    qadr = [model.joint(j).qposadr[0] for j in joints]
    act = [model.actuator(i).id for i in range(model.nu)]
    names = [f"{a}_{j}" for a in arms for j in (*FACTORS, "gripper")]
    features = {"action": {"dtype": "float32", "shape": (14,), "names": names},
                "observation.state": {"dtype": "float32", "shape": (14,), "names": names}}
    root = work / "lerobot-gym"
    ds = LeRobotDataset.create("x2/bench-gym-aloha", fps=GYM_FPS, features=features, root=root, robot_type="aloha",
                               use_videos=False)
    home = np.array([0.0, -0.96, 1.16, 0.0, -0.3, 0.0, 1.0] * 2)
    for k in range(episodes):
        teacher = TrajectoryTeacher(2000 + k, seconds, GYM_FPS, tuple(names))
        teacher.reset(None, home)  # type: ignore[arg-type]
        assert teacher._track is not None
        mujoco.mj_resetData(model, data)
        for i, a in enumerate(qadr):
            data.qpos[a] = home[[0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12][i]]
        for side, adr in (("left", 0), ("right", 1)):
            data.qpos[model.joint(f"vx300s_{side}/left_finger").qposadr[0]] = GYM_FINGER[1]
            data.qpos[model.joint(f"vx300s_{side}/right_finger").qposadr[0]] = -GYM_FINGER[1]
            del adr
        mujoco.mj_forward(model, data)
        for action in teacher._track:
            state = np.empty(14)
            for a, arm in enumerate(arms):
                state[7 * a: 7 * a + 6] = data.qpos[qadr[6 * a: 6 * a + 6]]
                finger = data.qpos[model.joint(f"vx300s_{arm}/left_finger").qposadr[0]]
                state[7 * a + 6] = (finger - GYM_FINGER[0]) / (GYM_FINGER[1] - GYM_FINGER[0])
            ds.add_frame({"action": action.astype(np.float32), "observation.state": state.astype(np.float32),
                          "task": "move"})
            ctrl = np.empty(model.nu)
            for a in range(2):
                ctrl[8 * a: 8 * a + 6] = action[7 * a: 7 * a + 6]
                g = GYM_FINGER[0] + action[7 * a + 6] * (GYM_FINGER[1] - GYM_FINGER[0])
                ctrl[8 * a + 6], ctrl[8 * a + 7] = g, -g
            data.ctrl[act] = ctrl
            mujoco.mj_step(model, data, nstep=sub)
        ds.save_episode()
    ds.finalize()
    return root


def gym(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    root = gym_recordings(args.out, args.episodes, args.seconds)
    print(f"recorded {args.episodes} x {args.seconds:g} s in gym-aloha's model in {time.perf_counter() - t0:.1f} s: "
          f"{root}")
    dataset = args.out / "data" / "gym"
    subprocess.run([sys.executable, "-m", "x2", "import", "lerobot", str(root), "--robot", "aloha", "--dataset",
                    str(dataset)], check=True)
    t0 = time.perf_counter()
    run = calibrate_dynamics(dataset, "aloha", 0.2, "aloha-gym", 0, lambda m: print(f"  {m}", flush=True),
                             args.iterations)
    result = run.result
    print(f"fit: {time.perf_counter() - t0:.1f} s, {result.steps} steps; latency {result.latency_ticks} ticks")
    for p in result.params:
        print(f"  {p.name:34s} nominal {p.nominal:9.4g} fitted {p.value:9.4g} +- {p.interval:.2g}")
    for when, parts in (("before", result.before), ("after", result.after)):
        e = parts["held_out"]
        allv = np.concatenate(e.tcp) * 1000
        print(f"held-out TCP {when} (both arms): median {np.median(allv):.3f} mm, p95 {np.percentile(allv, 95):.3f} "
              f"mm, max {allv.max():.3f} mm")
        n = len(e.tcp) // 2
        for a, arm in enumerate(("left", "right")):
            v = np.concatenate(e.tcp[a * n:(a + 1) * n]) * 1000
            print(f"  {arm}: median {np.median(v):.3f} mm, p95 {np.percentile(v, 95):.3f} mm")
        print("  joint RMS (mrad): " + ", ".join(f"{j} {np.sqrt(np.mean(np.square(v))) * 1000:.2f}"
                                                 for j, v in e.rms.items()))
    print(f"report: {run.report}, {run.picture}")


TRUTH_PACES = "0.25-0.5,0.5-1.0"  # the ground truth's moves: fast enough that its 2-tick latency shows


def parse_paces(text: str) -> tuple[tuple[float, float], ...]:
    """"0.4-0.8,1.0-2.5" -> ((0.4, 0.8), (1.0, 2.5)): the ranges a move's duration is drawn from (s)."""
    return tuple((float(a), float(b)) for a, b in (part.split("-") for part in text.split(",")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["truth", "gym"])
    parser.add_argument("--out", type=Path, default=Path("/tmp/x2-bench-calibrate"))
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--via-lerobot", action="store_true")
    parser.add_argument("--paces", help=f"move durations, s: ranges drawn among (truth: {TRUTH_PACES}; gym: "
                        "0.4-0.8,1.0-2.5)")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    os.chdir(args.out)
    if args.what == "gym":
        gym(args)
        return
    truth = write_truth(args.out)
    t0 = time.perf_counter()
    dataset = record(args.out, args.episodes, args.seconds, parse_paces(args.paces or TRUTH_PACES))
    print(f"recorded {args.episodes} x {args.seconds:g} s in {time.perf_counter() - t0:.1f} s: {dataset}")
    recorded = dataset  # (the replay below runs the x2 episodes: an imported recording has no world to replay)
    if args.via_lerobot:
        # the must-show's chain as a user types it: x2's own LeRobot export, read back by x2 import lerobot (the
        # export's layout, the robot's 16 recorded joints, is read with no table: docs/robots.md)
        root = args.out / "lerobot-truth"
        subprocess.run([sys.executable, "-m", "x2", "export", "lerobot", str(dataset), "--state-only", "--out",
                        str(root)], check=True)
        subprocess.run([sys.executable, "-m", "x2", "import", "lerobot", str(root), "--robot", "aloha", "--dataset",
                        str(args.out / "data" / "imported")], check=True)
        dataset = args.out / "data" / "imported"
    # c.: one replay of every trajectory (x2's own backend, the whole world) against the fit
    from x2.datasets import Dataset

    ds = Dataset.open(recorded)
    t0 = time.perf_counter()
    ticks = 0
    for rec in ds.episodes():
        with ds.load(rec.index) as ep:
            rep = replay_actions(ep)
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
