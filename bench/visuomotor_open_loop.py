"""Why an image policy of bench/bench_visuomotor.py fails in closed loop, answered open loop on recorded frames.

For each checkpoint of a run (`--run OUT`, the bench's folder), on every 15th frame of some demonstrations:

- **the pictures' shift**: what the policy trained on (LeRobot's decoded AV1 frames of the export) against what
  `x2 eval` sends it (the raw renders, here the episode's stored ones): their pixel difference, and how far the
  policy's action chunks on the two differ;
- **memorising against generalising**: the chunk's L1 error against the recorded actions on demonstrations it
  trained on, and on new ones synthesised from another master seed (`--new`, made here when missing: `x2 synth
  --seed 99`, then `x2 render` of the run's cameras at its size).

    .venv/bin/python bench/visuomotor_open_loop.py --run runs/visuomotor --steps 1250 2500 4000

The errors are in the action's units (rad for the joints, 0..1 for the gripper), averaged over the chunk's actions
and dimensions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

PY = sys.executable
Array = npt.NDArray[np.float64]
CAMERAS = ("head", "right_wrist")
EVERY = 15  # frames between the samples of an episode


def new_demos(folder: Path, size: str) -> Path:
    """Four pick_place demonstrations the policies never saw (master seed 99), rendered as the run's were."""
    if not (folder / "episodes").is_dir():
        env = dict(os.environ, MUJOCO_GL="egl", OMP_NUM_THREADS="1")
        for cmd in (["synth", "--task", "pick_place", "-n", "4", "--workers", "1", "--grasp-variety", "1", "--seed",
                     "99", "--dataset", str(folder)],
                    ["render", str(folder), "--cameras", ",".join(CAMERAS), "--size", size, "--workers", "1"]):
            subprocess.run([PY, "-m", "x2", *cmd], check=True, env=env, capture_output=True)
    return folder


class Checkpoint:
    """A pretrained_model folder loaded as LeRobot's evaluation loads it; `chunk` is its action chunk."""

    def __init__(self, folder: Path) -> None:
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies import get_policy_class, make_pre_post_processors

        config = PreTrainedConfig.from_pretrained(str(folder))
        config.device = "cpu"
        self.policy = get_policy_class(config.type).from_pretrained(str(folder), config=config).eval()
        self.pre, self.post = make_pre_post_processors(
            config, pretrained_path=str(folder), preprocessor_overrides={"device_processor": {"device": "cpu"}})

    def chunk(self, state: Array, images: dict[str, Array]) -> Array:
        """`images`: camera -> (3, H, W) float in [0, 1], as LeRobot's loader gives them."""
        import torch

        batch: dict[str, Any] = {"observation.state": torch.as_tensor(state, dtype=torch.float32)[None], "task": [""]}
        for cam, img in images.items():
            batch[f"observation.images.{cam}"] = torch.as_tensor(img, dtype=torch.float32)[None]
        with torch.inference_mode():
            out: Array = self.post(self.policy.predict_action_chunk(self.pre(batch)))[0].numpy()
        return out


def samples(root: Path, episodes: list[int]) -> list[tuple[int, int, Array, dict[str, Array], Array]]:
    """(episode, frame, joints, raw pictures as (3, H, W) floats, the recorded actions from that frame on)."""
    from x2 import format as fmt
    from x2.datasets import Dataset

    ds, out = Dataset.open(root), []
    for ep in episodes:
        with ds.load(ep) as e:
            pictures = {c: np.asarray(e[fmt.image_path(c)][:]) for c in CAMERAS}
            actions, qpos = np.asarray(e[fmt.ACTION][:]), np.asarray(e[fmt.QPOS][:])
        for t in range(0, len(actions) - 20, EVERY):
            out.append((ep, t, qpos[t], {c: pictures[c][t].transpose(2, 0, 1) / 255.0 for c in CAMERAS},
                        actions[t:]))
    return out


def l1(chunk: Array, actions: Array) -> float:
    n = min(len(chunk), len(actions))
    return float(np.abs(chunk[:n] - actions[:n]).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="bench_visuomotor.py's --out")
    ap.add_argument("--policy", default="images", help="which training of the run (its train/<name>)")
    ap.add_argument("--steps", type=int, nargs="+", required=True)
    ap.add_argument("--episodes", type=int, nargs="+", default=[0, 7, 42, 100], help="training demonstrations used")
    ap.add_argument("--size", default="72x96")
    ap.add_argument("--new", type=Path, default=None, help="new demonstrations (default: RUN/data/new-seed99)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    torch.set_num_threads(1)
    run = args.run.resolve()
    export = LeRobotDataset("x2/demos", root=run / "exports" / "demos", video_backend="pyav")
    trained = samples(run / "data" / "demos", args.episodes)
    fresh = samples(new_demos(args.new or run / "data" / "new-seed99", args.size), [0, 1, 2, 3])
    decoded = []
    for ep, t, *_ in trained:
        item = export[int(export.meta.episodes[ep]["dataset_from_index"]) + t]
        decoded.append({c: item[f"observation.images.{c}"].numpy() for c in CAMERAS})
    shift = {c: float(np.mean([np.abs(d[c] - s[3][c]).mean() * 255 for d, s in zip(decoded, trained, strict=True)]))
             for c in CAMERAS}
    print(f"{args.policy}, {len(trained)} frames of training demonstrations {args.episodes}, {len(fresh)} of 4 new "
          f"ones; pictures' mean |decoded - raw| (0-255): " + ", ".join(f"{c} {v:.2f}" for c, v in shift.items()))
    print("| step | chunk L1, training demos (raw frames) | chunk L1, their decoded frames | |raw - decoded| "
          "chunks | chunk L1, new demos |")
    print("|---|---|---|---|---|")
    for step in args.steps:
        ckpt = Checkpoint(run / "train" / args.policy / "checkpoints" / f"{step:06d}" / "pretrained_model")
        raw_chunks = [ckpt.chunk(q, pics) for _, _, q, pics, _ in trained]
        dec_chunks = [ckpt.chunk(s[2], d) for s, d in zip(trained, decoded, strict=True)]
        row = [np.mean([l1(c, s[4]) for c, s in zip(raw_chunks, trained, strict=True)]),
               np.mean([l1(c, s[4]) for c, s in zip(dec_chunks, trained, strict=True)]),
               np.mean([np.abs(a - b).mean() for a, b in zip(raw_chunks, dec_chunks, strict=True)]),
               np.mean([l1(ckpt.chunk(q, pics), acts) for _, _, q, pics, acts in fresh])]
        print(f"| {step} | " + " | ".join(f"{v:.4f}" for v in row) + " |", flush=True)


if __name__ == "__main__":
    main()
