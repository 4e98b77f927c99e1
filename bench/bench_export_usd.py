"""Cost of `x2 export usd` on one synthesised episode per robot (`x2 synth`, seed 0: pick_place's run about 300
frames): the whole export (world rebuilt, every frame drawn from its recorded state, the stage written, read back
and renamed into place), its size, and the time to the first 30 frames, which holds MuJoCo's exporter's first
frame, when it builds every geom's mesh (a capsule's or sphere's tessellation, 100 segments in pure Python).
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from x2.datasets import Dataset
from x2.export.request import ExportRequest
from x2.export.usd import UsdOptions, export_usd


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--task", default="pick_place")
    parser.add_argument("--robots", default="franka-panda,aloha,artixon-g")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_usd_"))
    try:
        print(f"machine: {platform.machine()} python {platform.python_version()}; {args.task}, one synthesised "
              f"episode per robot, median of {args.rounds} rounds")
        print(f"{'robot':16s} {'frames':>6s} {'export':>9s} {'per frame':>10s} {'first 30':>9s} {'stage MB':>9s}")
        for robot in args.robots.split(","):
            root = work / robot
            subprocess.run([sys.executable, "-m", "x2", "synth", "--task", args.task, "--robot", robot, "-n", "1",
                            "--workers", "1", "--dataset", str(root)], cwd=work, check=True, capture_output=True)
            ds = Dataset.open(root)
            records = tuple(ds.episodes())
            totals, firsts = [], []
            for r in range(args.rounds):
                target = work / f"{robot}-usd-{r}"
                seen: list[float] = []

                def heard(step: object, seen: list[float] = seen) -> None:
                    seen.append(time.perf_counter())

                t0 = time.perf_counter()
                summary = export_usd(ExportRequest(ds, records, target), UsdOptions(), heard)
                totals.append(time.perf_counter() - t0)
                firsts.append(seen[1] - seen[0])  # "writing" -> the first 30 frames drawn
                size = summary.bytes / 1e6
                shutil.rmtree(target)
            total, frames = statistics.median(totals), records[0].frames
            print(f"{robot:16s} {frames:6d} {total:8.2f}s {total / frames * 1e3:8.2f}ms "
                  f"{statistics.median(firsts):8.2f}s {size:9.1f}")
        print("first 30: from the start of writing to the first progress report (the world rebuilt, the first 30 "
              "frames drawn: every geom's mesh is built at the first)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
