"""Dataset management figures, measured side by side in one run (interleaved rounds, medians):

1. `merge` of two datasets relative to a plain `shutil.copytree` of the same folders, and to a copytree
   that then fsyncs every file: what the checks (compatibility, seeds, repeated demonstrations), the
   per-file attr edit, reading each copy back and the atomic build cost over copying bytes durably.
2. `filter --success-only` relative to the same plain copy of the source.
3. `stats` throughput (frames per second) over both datasets.

Usage: python bench/bench_manage.py [--episodes 40] [--frames 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from x2.datasets import Dataset, EpisodeStart, Tick
from x2.datasets.manage import Filter, filter_dataset, merge
from x2.datasets.select import Selection
from x2.datasets.stats import dataset_stats
from x2.files.staging import fsync_dir, fsync_file

MANIFEST = {"robot": "artixon-g", "task": "fruit_in_microwave", "fps": 30,
            "joint_names": [f"j{i}" for i in range(16)], "action_names": [f"a{i}" for i in range(14)],
            "dag": {"nodes": ["open_door", "pick_fruit", "place_fruit"]}}


def make_dataset(root: Path, episodes: int, frames: int, seed_base: int) -> Path:
    """State-only episodes of the size a synthesised demo has (no images)."""
    rng = np.random.default_rng(seed_base)
    with Dataset.create(root, MANIFEST) as ds:
        for i in range(episodes):
            with ds.begin_episode(EpisodeStart(source="synth", seed=seed_base + i),
                                  object_names=["apple", "microwave"]) as w:
                for t in range(frames):
                    w.append(Tick(timestamp=t / 30, action=rng.normal(size=14).astype(np.float32),
                             state=rng.normal(size=120), qpos=rng.normal(size=16).astype(np.float32),
                             qvel=rng.normal(size=16).astype(np.float32),
                             ee_pose=rng.normal(size=(2, 7)).astype(np.float32),
                             object_poses=rng.normal(size=(2, 7))))
                cut = sorted(rng.choice(np.arange(1, frames - 1), 2, replace=False).tolist())
                labels = np.repeat(np.arange(3, dtype=np.int16), np.diff([0, *cut, frames]))
                w.finish({"subtask_index": labels}, {"nodes": MANIFEST["dag"]["nodes"]}, success=i % 4 != 0,
                         extra_attrs={"model_xml": f"<mujoco n='{i}'/>"})
    return root


def one_round(a: Path, b: Path, out: Path) -> dict[str, float]:
    out.mkdir()
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    shutil.copytree(a, out / "ca")
    shutil.copytree(b, out / "cb")
    times["copy2"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    shutil.copytree(a, out / "da")
    shutil.copytree(b, out / "db")
    for folder in (out / "da", out / "db"):  # the floor for a copy that survives a power cut
        for path in sorted(folder.rglob("*")):
            fsync_file(path) if path.is_file() else fsync_dir(path)
        fsync_dir(folder)
    times["durable2"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    merge([a, b], out / "merged")
    times["merge"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    shutil.copytree(a, out / "c1")
    times["copy1"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    filter_dataset(a, out / "ok", Filter(Selection(success_only=True)))
    times["filter"] = time.perf_counter() - t0
    ds = Dataset.open(out / "merged")
    t0 = time.perf_counter()
    dataset_stats(ds, ds.episodes())
    times["stats"] = time.perf_counter() - t0
    shutil.rmtree(out)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        a = make_dataset(base / "a", args.episodes, args.frames, 1000)
        b = make_dataset(base / "b", args.episodes, args.frames, 100_000)
        frames = 2 * args.episodes * args.frames
        rounds = [one_round(a, b, base / f"r{r}") for r in range(args.rounds)]
        med = {k: statistics.median(t[k] for t in rounds) for k in rounds[0]}
    print(f"{2 * args.episodes} episodes of {args.frames} frames, {args.rounds} rounds (medians)")
    print(f"merge:  {med['merge'] * 1e3:7.1f} ms vs copytree {med['copy2'] * 1e3:7.1f} ms  "
          f"ratio {med['merge'] / med['copy2']:.2f}x  ({med['merge'] / (2 * args.episodes) * 1e3:.2f} ms/episode)")
    print(f"        vs copytree + fsync of every file {med['durable2'] * 1e3:7.1f} ms  "
          f"ratio {med['merge'] / med['durable2']:.2f}x")
    print(f"filter: {med['filter'] * 1e3:7.1f} ms vs copytree {med['copy1'] * 1e3:7.1f} ms  "
          f"ratio {med['filter'] / med['copy1']:.2f}x  (keeps 3 of 4 episodes)")
    print(f"stats:  {med['stats'] * 1e3:7.1f} ms for {frames} frames  ({frames / med['stats']:,.0f} frames/s)")


if __name__ == "__main__":
    main()
