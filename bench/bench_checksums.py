"""What episode checksums cost, measured side by side in one run (interleaved rounds, medians):

1. committing an episode with a camera stream: the sha256 the writer takes of the finished file, relative
   to everything else its commit does (append, flush, compress, finish, fsync, rename);
2. `validate` (every file hashed and compared with its index line) relative to `validate --quick`;
3. sha256 throughput over the dataset's files (page cache warm, as right after a commit).

Usage: python bench/bench_checksums.py [--episodes 8] [--frames 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import x2.datasets.writer as writer_module
from x2.datasets import Dataset, EpisodeStart, Tick, validate
from x2.files.digest import file_digest

MANIFEST = {"robot": "artixon-g", "task": "fruit_in_microwave", "fps": 30,
            "joint_names": [f"j{i}" for i in range(16)], "action_names": [f"a{i}" for i in range(14)],
            "dag": {"nodes": ["open_door", "pick_fruit", "place_fruit"]}}
SIZE = (120, 160, 3)


def make_dataset(root: Path, episodes: int, frames: int) -> float:
    """Episodes with one noisy 120x160 camera (Zstd cannot shrink noise: ~17 MB each); commit seconds."""
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    with Dataset.create(root, MANIFEST) as ds:
        for i in range(episodes):
            with ds.begin_episode(EpisodeStart(source="synth", seed=i),
                                  object_names=["apple"]) as w:
                for t in range(frames):
                    w.append(Tick(timestamp=(t + 1) / 30, action=rng.normal(size=14).astype(np.float32),
                             state=rng.normal(size=120), qpos=rng.normal(size=16).astype(np.float32),
                             object_poses=rng.normal(size=(1, 7)),
                             images={"head": rng.integers(0, 256, SIZE, dtype=np.uint8)}))
                w.finish({"subtask_index": np.zeros(frames, np.int16)}, {"nodes": MANIFEST["dag"]["nodes"]},
                         success=True, extra_attrs={"model_xml": f"<mujoco n='{i}'/>"})
    total = time.perf_counter() - started
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    hashing: list[float] = []
    real_digest = writer_module.file_digest

    def timed_digest(path):  # the writer's own call, timed where it happens
        t0 = time.perf_counter()
        out = real_digest(path)
        hashing.append(time.perf_counter() - t0)
        return out

    writer_module.file_digest = timed_digest
    rows: dict[str, list[float]] = {"commit_s": [], "hash_share": [], "full_s": [], "quick_s": [], "mb_s": []}
    with tempfile.TemporaryDirectory(prefix="x2-bench-checksums-") as tmp:
        for r in range(args.rounds):
            hashing.clear()
            root = Path(tmp) / f"d{r}"
            commit = make_dataset(root, args.episodes, args.frames)
            rows["commit_s"].append(commit / args.episodes)
            rows["hash_share"].append(sum(hashing) / commit)
            for kind in ("full", "quick") if r % 2 == 0 else ("quick", "full"):
                t0 = time.perf_counter()
                report = validate(root, quick=kind == "quick")
                rows[f"{kind}_s"].append(time.perf_counter() - t0)
                assert report.valid and report.episodes == args.episodes
            files = sorted((root / "episodes").glob("*.h5"))
            size = sum(p.stat().st_size for p in files)
            t0 = time.perf_counter()
            for p in files:
                file_digest(p)
            rows["mb_s"].append(size / 1e6 / (time.perf_counter() - t0))
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{args.episodes} episodes x {args.frames} frames, one 120x160 camera, {size / 1e6 / len(files):.1f} MB "
          f"each; medians of {args.rounds} rounds")
    print(f"commit per episode: {med['commit_s']:.3f} s, of which the sha256: {med['hash_share']:.1%}")
    print(f"validate: {med['full_s']:.3f} s with checksums, {med['quick_s']:.3f} s --quick "
          f"({med['full_s'] / med['quick_s']:.1f}x)")
    print(f"sha256: {med['mb_s']:.0f} MB/s over the episode files")


if __name__ == "__main__":
    main()
