"""`x2 export lerobot` against LeRobot's own writer fed the same arrays, side by side in one run.

x2: the code path of the command (`plan_export` + `export_lerobot`: read the episode files, build the
frames, LeRobot's create/add_frame/save_episode/finalize, the language columns, meta/x2.json, the read
back with LeRobot and its checks, the staged rename). The camera streams are stored in the episodes
beforehand, so rendering is not measured.
LeRobot direct: the same features, frames and encoder settings handed to create/add_frame/save_episode/
finalize from arrays already in memory, with no x2 at all.

Rounds alternate (x2, direct, x2, ...); medians; ratio = x2 / direct (target <= 1.10).

Usage: python bench/bench_export_lerobot.py [--episodes 4] [--ticks 150] [--size 240x320] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MUJOCO_GL", "egl")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.real_dataset import record_short_dataset  # noqa: E402
from helpers.stored_images import store_images  # noqa: E402

from x2.datasets import Dataset  # noqa: E402
from x2.export.lerobot import export_lerobot, quiet_lerobot  # noqa: E402
from x2.export.lerobot_plan import ExportPlan, LeRobotOptions, plan_episode, plan_export  # noqa: E402
from x2.export.request import ExportProgress, ExportRequest  # noqa: E402
from x2.export.sources import ExportSources, open_sources  # noqa: E402
from x2.sim.camera import ImageSize  # noqa: E402


def in_memory(plan: ExportPlan, sources: ExportSources) -> list[list[dict]]:
    """Every add_frame dict of the export, read into memory (outside the timed part of the direct side)."""
    return [[{k: (v.copy() if hasattr(v, "copy") else v) for k, v in f.items()}
             for f in plan.frames_of(source.episode, plan_episode(source.episode, source.record, plan))]
            for source in sources.written()]


def lerobot_direct(plan: ExportPlan, frames: list[list[dict]], root: Path) -> float:
    import datasets
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    datasets.disable_progress_bars()  # as x2 does: no HF bar on either side
    start = time.perf_counter()
    ds = LeRobotDataset.create("bench/direct", fps=plan.fps, features=plan.features(), root=root,
                               robot_type=plan.dataset.manifest.robot, use_videos=bool(plan.images.cameras),
                               video_backend="pyav")
    try:
        for episode in frames:
            for frame in episode:
                ds.add_frame(dict(frame))  # add_frame pops "task": hand it a fresh dict
            ds.save_episode(parallel_encoding=False)  # as x2 does (see x2/export/lerobot.py)
    finally:
        ds.finalize()
    return time.perf_counter() - start


def ask(ds: Dataset, target: Path, cameras: list[str]) -> ExportRequest:
    return ExportRequest(ds, tuple(ds.episodes()), target, cameras=tuple(cameras))


def x2_export(ds: Dataset, target: Path, cameras: list[str], size: ImageSize) -> tuple[float, dict[str, float]]:
    phases: dict[str, float] = {}
    mark = [time.perf_counter(), "plan"]

    def phase(name: str) -> None:
        now = time.perf_counter()
        phases[mark[1]] = phases.get(mark[1], 0.0) + now - mark[0]
        mark[:] = [now, name]

    def progress(step: ExportProgress) -> None:
        if step.phase != mark[1]:
            phase(step.phase)

    start = time.perf_counter()
    export_lerobot(ask(ds, target, cameras), LeRobotOptions(size=size, repo_id="bench/x2"), progress)
    phase("end")
    return time.perf_counter() - start, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--ticks", type=int, default=150)
    parser.add_argument("--size", default="240x320")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = ImageSize.parse(args.size)
    cameras = ["head"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "booth"
        record_short_dataset(root, episodes=args.episodes, ticks=args.ticks)
        store_images(root, cameras, size)
        ds = Dataset.open(root)
        with open_sources(ask(ds, Path(tmp) / "unused", cameras), "lerobot") as sources:
            plan = plan_export(sources, LeRobotOptions(size=size))
            frames = in_memory(plan, sources)
        import lerobot.datasets.lerobot_dataset  # noqa: F401  (both sides start with LeRobot imported)

        x2_times: list[float] = []
        direct_times: list[float] = []
        breakdown: list[dict[str, float]] = []
        with quiet_lerobot():
            lerobot_direct(plan, frames[:1], Path(tmp) / "warm-up")  # first-call costs (codec probe, ...)
            for r in range(args.rounds):
                seconds, phases = x2_export(ds, Path(tmp) / f"x2-{r}", cameras, size)
                x2_times.append(seconds)
                breakdown.append(phases)
                direct_times.append(lerobot_direct(plan, frames, Path(tmp) / f"direct-{r}"))
                shutil.rmtree(Path(tmp) / f"x2-{r}")
                shutil.rmtree(Path(tmp) / f"direct-{r}")
    x2_med, direct_med = statistics.median(x2_times), statistics.median(direct_times)
    n = sum(len(episode) for episode in frames)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    lengths = "+".join(str(len(episode)) for episode in frames)
    print(f"{args.episodes} episodes ({lengths}) = {n} frames, camera head stored at {size}; "
          f"{args.rounds} alternating rounds, medians")
    print(f"{'side':34s} {'seconds':>9s} {'frames/s':>9s}   rounds")
    print(f"{'x2 export lerobot (code path)':34s} {x2_med:9.2f} {n / x2_med:9.1f}   "
          + ", ".join(f"{t:.2f}" for t in x2_times))
    print(f"{'LeRobot writer, arrays in memory':34s} {direct_med:9.2f} {n / direct_med:9.1f}   "
          + ", ".join(f"{t:.2f}" for t in direct_times))
    print(f"ratio x2 / direct: {x2_med / direct_med:.3f} (target <= 1.10)")
    phases = {k: statistics.median(b.get(k, 0.0) for b in breakdown) for k in breakdown[0]}
    print("x2 phases (median s): " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))


if __name__ == "__main__":
    main()
