"""The render pass against a bare MuJoCo render loop, side by side on the same states, and its scaling.

1. One real synthesised episode (x2 synth --task fruit_in_microwave -n 1, master seed 0), copied per
   round. The render pass is `render_dataset(..., workers=1)`: plan, a spawned worker that rebuilds the
   world from the file, renders, compresses and writes every frame into a staged copy, then the commit
   (log + rename). The bare loop renders the same states in this process with `mujoco.Renderer`: set
   state, mj_kinematics + mj_camlight, update_scene, render, nothing else (no file, no compression).
   Ratio: render pass wall / bare loop wall (target <= 1.10).
2. Scaling: the same render pass on two copies of the episode with workers=1 and workers=2; ratio of
   frames/s.

Rounds interleave the variants; medians are printed. Usage:
  python bench/bench_render.py [--rounds 3] [--size 240x320] [--cameras head,left_wrist,right_wrist]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco

from x2.datasets import Dataset
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.render import render_dataset
from x2.sim.camera import ImageSize
from x2.sim.mujoco.state import STATE_SPEC


def synthesise(root: Path, n: int) -> Path:
    path = root / "source"
    subprocess.run([sys.executable, "-m", "x2", "synth", "--task", "fruit_in_microwave", "-n", str(n),
                    "--workers", "1", "--dataset", str(path)], check=True, stdout=subprocess.DEVNULL, cwd=root)
    return path


def bare_loop(episode: Path, cameras: tuple[str, ...], size: ImageSize) -> tuple[float, int]:
    """Wall time of rendering every state of the episode with nothing else done."""
    from x2.datasets import Episode

    with Episode(episode) as ep:
        xml, states = str(ep.attrs["model_xml"]), ep["states"]
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    renderer = mujoco.Renderer(model, size.height, size.width)
    ids = [model.camera(c).id for c in cameras]
    started = time.perf_counter()
    for state in states:
        mujoco.mj_setState(model, data, state, STATE_SPEC)
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)
        for cid in ids:
            renderer.update_scene(data, camera=cid)
            renderer.render()
    wall = time.perf_counter() - started
    renderer.close()
    return wall, len(states)


def render_pass(source: Path, work: Path, cameras: tuple[str, ...], size: ImageSize, workers: int,
                episodes: list[int]) -> tuple[float, int]:
    target = work / f"pass-{workers}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    started = time.perf_counter()
    summary = render_dataset(target, cameras, size, workers=workers, episodes=episodes)
    wall = time.perf_counter() - started
    shutil.rmtree(target)
    return wall, summary.frames_rendered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default=str(DEFAULT_SIZE))
    parser.add_argument("--cameras", default=",".join(DEFAULT_CAMERAS))
    args = parser.parse_args()
    size, cameras = ImageSize.parse(args.size), tuple(args.cameras.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = synthesise(work, 2)
        ds = Dataset.open(source)
        first = ds.episodes()[0]
        episode = ds.episode_path(first.index)
        samples: dict[str, list[float]] = {"bare": [], "pass1": [], "scale1": [], "scale2": []}
        for _ in range(args.rounds):
            wall, frames = bare_loop(episode, cameras, size)
            samples["bare"].append(wall)
            wall, _ = render_pass(source, work, cameras, size, 1, [first.index])
            samples["pass1"].append(wall)
            both = [r.index for r in ds.episodes()]
            wall, done = render_pass(source, work, cameras, size, 1, both)
            samples["scale1"].append(done / wall)
            wall, done = render_pass(source, work, cameras, size, 2, both)
            samples["scale2"].append(done / wall)
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()} "
          f"mujoco {mujoco.__version__}; {os.cpu_count()} cpus; {args.rounds} rounds, medians")
    print(f"episode: {frames} frames x {len(cameras)} cameras ({', '.join(cameras)}) at {size}")
    print(f"{'what':58s} {'wall':>9s} {'ms/frame':>9s} {'ratio':>7s}")
    print(f"{'bare mujoco.Renderer loop (set state, kinematics, render)':58s} {med['bare']:8.2f}s "
          f"{1e3 * med['bare'] / frames:9.1f} {'1.000':>7s}")
    print(f"{'render pass, 1 worker (spawn, world, zstd, file, commit)':58s} {med['pass1']:8.2f}s "
          f"{1e3 * med['pass1'] / frames:9.1f} {med['pass1'] / med['bare']:7.3f}")
    print(f"scaling on 2 episodes: 1 worker {med['scale1']:.1f} frames/s, 2 workers {med['scale2']:.1f} frames/s, "
          f"ratio {med['scale2'] / med['scale1']:.2f}")


if __name__ == "__main__":
    main()
