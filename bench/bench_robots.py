"""Every robot on pick_place: acceptance, accepted demos/min, deepest contact, compile time, model size.

Per robot, in one run: `x2 synth --task pick_place --robot R -n N` (2 workers, master seed 0, state only), the
deepest contact over every stored frame (what `x2 datasets validate --physics` recomputes), the time to build
and compile its pick_place world (median of 5 fresh builds) and the recorded world's size. `--task` runs
another task (the mobile robot's, whose block is out of reach until its base drives there).

    .venv/bin/python bench/bench_robots.py --n 20
    .venv/bin/python bench/bench_robots.py --n 20 --task mobile_pick_place --robots mobile-aloha
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

from x2.datasets import Dataset
from x2.envspec import load_env, names
from x2.recorded.replay import deepest_penetration
from x2.sim import make_backend
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun


def world_figures(robot: str, task: str) -> dict[str, float]:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        backend = make_backend(load_env(task, robot=robot))
        backend.reset(0)
        times.append(time.perf_counter() - t0)
    m = backend.model
    arm_dof = sum(len(a.joints) for a in backend.env.robot.arms)
    return {"compile_s": statistics.median(times), "xml_kb": len(backend.model_xml().encode()) / 1024,
            "nq": m.nq, "nbody": m.nbody, "ngeom": m.ngeom, "dof": arm_dof, "arms": len(backend.env.robot.arms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--robots", nargs="*", default=None, help="default: every robot")
    parser.add_argument("--task", default="pick_place")
    args = parser.parse_args()
    robots = args.robots or names("robots")
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; {args.task}, "
          f"n {args.n}, {args.workers} workers, master seed 0")
    rows = []
    for robot in robots:
        figures = world_figures(robot, args.task)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / robot
            t0 = time.perf_counter()
            config = SynthConfig(SessionOptions(args.task, robot=robot), n=args.n, workers=args.workers)
            progress = SynthRun(config, out).run()
            wall = time.perf_counter() - t0
            ds = Dataset.open(out)
            depth, frames = 0.0, []
            for record in ds.episodes():
                frames.append(record.frames)
                with ds.load(record.index) as ep:
                    depth = max(depth, deepest_penetration(ep).depth)
        row = {"robot": robot, **figures, "accepted": progress.accepted, "attempts": progress.attempted,
               "per_min": 60 * progress.accepted / wall, "depth_mm": depth * 1e3,
               "mean_frames": statistics.mean(frames) if frames else 0.0}
        rows.append(row)
        print(f"{robot}: {row}", flush=True)
    print("\n| robot | arms x DoF | accepted / attempts | accepted / min | mean episode | deepest contact | "
          "world compile | recorded world | nq / bodies / geoms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['robot']} | {r['arms']} x {r['dof'] // r['arms']} | {r['accepted']} / {r['attempts']} "
              f"({100 * r['accepted'] / r['attempts']:.0f} %) | {r['per_min']:.1f} | {r['mean_frames']:.0f} frames | "
              f"{r['depth_mm']:.2f} mm | {1e3 * r['compile_s']:.0f} ms | {r['xml_kb']:.0f} KB | "
              f"{r['nq']} / {r['nbody']} / {r['ngeom']} |")


if __name__ == "__main__":
    main()
