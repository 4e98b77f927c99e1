"""Arms x2 does not ship, from files a user would have: `x2 robots new` + `x2 robots check`, then pick_place.

The URDFs are pybullet_data's (KUKA iiwa, xArm6 with their meshes), in the pybullet wheel that
`x2 robots fetch pybullet` unpacks (103 MB, so on demand: `make` does not fetch it), used in place. In a fresh
temporary folder, as a lab would on a Monday morning, per robot: `x2 robots new` (the robot file x2 writes,
nothing edited), `x2 robots check`, `x2 synth --task pick_place -n N --robot R`, then per stored episode the
deepest contact (as `x2 datasets validate --physics` recomputes it) and whether replaying its actions gives the
same states (max deviation 0).

    .venv/bin/python bench/bench_own_robots.py --n 20
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from x2.datasets import Dataset
from x2.envspec import vendor
from x2.recorded.replay import deepest_penetration, replay_actions

# (robot name, file inside the pybullet wheel, x2 robots new options)
ROBOTS = (
    ("iiwa", "pybullet_data/kuka_iiwa/model.urdf", ()),
    ("xarm6", "pybullet_data/xarm/xarm6_robot.urdf", ()),
    ("xarm6-pair", "pybullet_data/xarm/xarm6_robot.urdf", ("--bimanual", "--gripper", "G")),
)


def x2(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "x2", *args], cwd=cwd, env=env, capture_output=True, text=True)


def show(title: str, run: subprocess.CompletedProcess[str]) -> None:
    print(f"$ {title}  (exit {run.returncode})")
    print(run.stdout.rstrip())
    if run.stderr.strip():
        print(run.stderr.rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--robots", nargs="*", default=None, help="default: " + ", ".join(r[0] for r in ROBOTS))
    args = parser.parse_args()
    folder = vendor.fetch("pybullet")
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; pick_place, "
          f"n {args.n}, {args.workers} workers, master seed 0; URDFs from {folder}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="x2-own-robots-") as tmp:
        work = Path(tmp)
        for name, file, options in ROBOTS:
            if args.robots and name not in args.robots:
                continue
            show(f"x2 robots new {name} --urdf .../{file} {' '.join(options)}",
                 x2(["robots", "new", name, "--urdf", str(folder / file), *options], work))
            check = x2(["robots", "check", name], work)
            show(f"x2 robots check {name}", check)
            t0 = time.perf_counter()
            synth = x2(["synth", "--task", "pick_place", "--robot", name, "-n", str(args.n), "-w",
                        str(args.workers), "-d", str(work / "data" / name)], work)
            wall = time.perf_counter() - t0
            print(f"$ x2 synth --task pick_place --robot {name} -n {args.n}  (exit {synth.returncode}, {wall:.0f} s)")
            print("\n".join(synth.stdout.rstrip().splitlines()[-3:]))
            if synth.returncode != 0:
                print(synth.stderr.rstrip())
                rows.append((name, check.returncode, 0, 0, float("nan"), float("nan"), wall))
                continue
            report = json.loads((work / "data" / name / "synth_report.json").read_text())
            ds = Dataset.open(work / "data" / name)
            deepest, deviation = 0.0, 0.0
            for record in ds.episodes():
                with ds.load(record.index) as ep:
                    deepest = max(deepest, deepest_penetration(ep).depth)
                    deviation = max(deviation, replay_actions(ep).max_deviation)
            rows.append((name, check.returncode, int(report["accepted"]), int(report["attempted"]), deepest,
                         deviation, wall))
    print()
    print(f"{'robot':<12} {'check':>5} {'accepted':>12} {'rate':>6} {'deepest contact':>16} {'replay dev':>10} "
          f"{'wall':>7}")
    for name, rc, accepted, attempted, deepest, deviation, wall in rows:
        rate = accepted / attempted if attempted else 0.0
        print(f"{name:<12} {'ok' if rc == 0 else f'rc {rc}':>5} {f'{accepted}/{attempted}':>12} {rate:>6.0%} "
              f"{deepest * 1e3:>13.2f} mm {deviation:>10.3g} {wall:>5.0f} s")


if __name__ == "__main__":
    main()
