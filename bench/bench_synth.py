"""Synthesis figures, measured in one run:

1. Throughput: `x2 synth`'s runner with --workers 2 on fruit_in_microwave (state only): accepted demos
   per minute and acceptance rate (targets: >= 10 / min, >= 80 %).
2. Overhead: wall time of a 1-worker synthesis / wall time of stepping the same accepted action
   streams in the simulator without planning (target <= 1.5), with where the rest goes.

Usage: python bench/bench_synth.py [--task fruit_in_microwave] [--n 20] [--overhead-n 6]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from x2.datasets import Dataset
from x2.format import SYNTH_REPORT_FILE
from x2.sim.mujoco.backend import MujocoBackend
from x2.spec import load_env
from x2.synth.runner import SynthConfig, SynthRun


def synthesise(task: str, n: int, workers: int, out: Path, seed: int) -> tuple[float, dict]:
    t0 = time.perf_counter()
    SynthRun(SynthConfig(task, n=n, workers=workers, seed=seed), out).run()
    wall = time.perf_counter() - t0
    return wall, json.loads((out / SYNTH_REPORT_FILE).read_text())


def step_accepted(task: str, path: Path) -> float:
    """Replay every accepted episode's actions through the simulator: reset + step, nothing else."""
    backend = MujocoBackend(load_env(task))
    ds = Dataset.open(path)
    total = 0.0
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            actions, seed = ep["action"], int(ep.attrs["seed"])
        t0 = time.perf_counter()
        backend.reset(seed)
        for a in actions:
            backend.step(a)
        total += time.perf_counter() - t0
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="fruit_in_microwave")
    parser.add_argument("--n", type=int, default=20, help="demos for the throughput run (2 workers)")
    parser.add_argument("--overhead-n", type=int, default=6, help="demos for the overhead run (1 worker)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; task {args.task}")
    with tempfile.TemporaryDirectory() as tmp:
        wall, report = synthesise(args.task, args.n, 2, Path(tmp) / "throughput", args.seed)
        rate = 60.0 * report["accepted"] / wall
        print(f"throughput (2 workers): {report['accepted']} accepted / {report['attempted']} attempted "
              f"({100 * report['acceptance_rate']:.0f} %) in {wall:.1f} s -> {rate:.1f} accepted/min")
        print(f"  rejections: {report['rejections']}")

        wall1, report1 = synthesise(args.task, args.overhead_n, 1, Path(tmp) / "overhead", args.seed + 1)
        stepping = step_accepted(args.task, Path(tmp) / "overhead")
        t = report1["attempt_time_s"]
        accepted_total = sum(a["timing_s"].get("total", 0.0) for a in report1["attempts"] if a["accepted"])
        rejected_total = sum(a["timing_s"].get("total", 0.0) for a in report1["attempts"] if not a["accepted"])
        print(f"overhead (1 worker, {report1['accepted']} accepted / {report1['attempted']} attempted): "
              f"synthesis wall {wall1:.2f} s / stepping the accepted actions {stepping:.2f} s = "
              f"{wall1 / stepping:.2f}")
        print(f"  where it goes: loop time in accepted attempts {accepted_total:.2f} s, in rejected attempts "
              f"{rejected_total:.2f} s; teacher (skills: IK, planning, segment play) {t['teacher']:.2f} s, "
              f"physics step {t['step']:.2f} s; the rest (commit to disk, reset, labels, startup) "
              f"{wall1 - t['total']:.2f} s")


if __name__ == "__main__":
    main()
