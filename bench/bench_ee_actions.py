"""End-effector actions, the issue-44 figures: expert episodes' joint actions converted to `ee_pose` and `ee_delta`
actions (x2/recorded/ee_actions.py) and stepped through the Gymnasium env's action adapter from the same slot; prints,
per kind, success against the expert's, how far the IK's joint targets put the tool centre point from the commanded
pose (median / p95 / max), how far the measured tool centre point is from the pose commanded the tick before (the
servos' lag, with the expert's own joint replay beside it for scale), unreachable ticks, and the adapter's cost.

    python bench/bench_ee_actions.py --task pick_place -n 3        # synthesises into a temporary folder first
    python bench/bench_ee_actions.py --dataset DATASET             # an existing synthesised dataset
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import x2.envs  # noqa: F401 - registers x2/TASK-v0
from x2 import format as fmt
from x2.datasets import Dataset
from x2.envspec.ee_action import EE_DELTA, EE_POSE, EELayout, angle_between, quat_to_matrix
from x2.recorded.ee_actions import episode_ee_actions
from x2.sim.mujoco.ee_adapter import EEAdapter


def replay(task: str, master_seed: int, slot: int, kind: str, actions: np.ndarray,
           commanded: np.ndarray | None) -> dict[str, object]:
    env = gym.make(f"x2/{task}-v0", master_seed=master_seed, action=kind)
    x2env = env.unwrapped
    try:
        env.reset(seed=slot)
        # (the joint replay measures its tool centre points through an adapter of its own, never commanded)
        probe = x2env.adapter or EEAdapter(x2env.backend, EELayout(EE_POSE, ("right",), False))
        if x2env.adapter is None:
            info0 = x2env.reset_info
            probe.reset(float((info0.embodiment or {}).get("table_height", 0.0)))
        ik_pos, ik_rot, lag, unreachable, cost = [], [], [], 0, 0.0
        info: dict[str, object] = {}
        prev = None
        for action in actions[:-1]:
            t0 = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            cost += time.perf_counter() - t0
            if kind != "joint":
                ee = info["ee"]
                unreachable += int(np.sum(ee["unreachable"]))
                for c, r in zip(ee["commanded"], ee["reached"], strict=True):
                    ik_pos.append(np.linalg.norm(c[:3] - r[:3]))
                    ik_rot.append(angle_between(quat_to_matrix(c[3:]), quat_to_matrix(r[3:])))
                prev = ee["commanded"]
            if prev is not None or commanded is not None:
                target = prev if prev is not None else commanded[x2env.tick - 1]
                measured, _ = probe.measured()
                lag.extend(np.linalg.norm(measured - target[:, :3], axis=1))
            if terminated or truncated:
                break
        return {"success": bool(info.get("is_success")), "ik_pos": np.array(ik_pos), "ik_rot": np.array(ik_rot),
                "lag": np.array(lag), "unreachable": unreachable, "ticks": x2env.tick, "s": cost}
    finally:
        env.close()


def stats(values: np.ndarray, scale: float) -> str:
    if len(values) == 0:
        return "-"
    v = values * scale
    return f"{np.median(v):.4f} / {np.percentile(v, 95):.4f} / {np.max(v):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="pick_place")
    parser.add_argument("-n", type=int, default=3)
    parser.add_argument("--dataset", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.dataset
        if root is None:
            root = Path(tmp) / "expert"
            subprocess.run([sys.executable, "-m", "x2", "synth", "--task", args.task, "-n", str(args.n), "--workers",
                            "1", "--dataset", str(root)], check=True, capture_output=True)
        ds = Dataset.open(root)
        pooled: dict[str, dict[str, list[np.ndarray]]] = {}
        wins: dict[str, int] = {}
        for record in ds.episodes():
            with ds.load(record.index) as ep:
                task = ep.attrs[fmt.TASK_ATTR]
                joint = np.asarray(ep[fmt.ACTION])
                t0 = time.perf_counter()
                converted = {k: episode_ee_actions(ep, k) for k in (EE_POSE, EE_DELTA)}
                convert_s = (time.perf_counter() - t0) / 2
            assert record.master_seed is not None and record.slot is not None
            print(f"episode {record.index} ({task}, slot {record.slot}, {len(joint)} frames, expert success "
                  f"{record.success}; converting its actions: {convert_s:.2f} s a kind)")
            pose = converted[EE_POSE]
            commanded = np.concatenate([pose.pos, np.zeros((*pose.pos.shape[:2], 4))], axis=2)
            for kind, acts in (("joint", joint), (EE_POSE, pose.values), (EE_DELTA, converted[EE_DELTA].values)):
                r = replay(str(task), record.master_seed, record.slot, kind, acts, commanded)
                for key in ("ik_pos", "ik_rot", "lag"):
                    pooled.setdefault(kind, {}).setdefault(key, []).append(np.asarray(r[key]))
                pooled[kind].setdefault("ms", []).append(np.array([float(r["s"]) / max(int(r["ticks"]), 1) * 1e3]))
                wins[kind] = wins.get(kind, 0) + int(r["success"] == record.success)
                print(f"  {kind:8s} success {r['success']!s:5s} ticks {r['ticks']:4d}  IK |tcp(targets) - commanded| "
                      f"mm {stats(r['ik_pos'], 1e3)}  deg {stats(r['ik_rot'], np.rad2deg(1.0))}  "
                      f"|measured - commanded(t-1)| mm {stats(r['lag'], 1e3)}  unreachable {r['unreachable']}  "
                      f"step {r['s'] / max(r['ticks'], 1) * 1e3:.2f} ms")

        print(f"all {len(ds.episodes())} episodes (pooled ticks; median / p95 / max):")
        for kind, got in pooled.items():
            cat = {k: np.concatenate(v) for k, v in got.items()}
            print(f"  {kind:8s} same success as the expert: {wins[kind]}/{len(ds.episodes())}  IK mm "
                  f"{stats(cat['ik_pos'], 1e3)}  deg {stats(cat['ik_rot'], np.rad2deg(1.0))}  measured lag mm "
                  f"{stats(cat['lag'], 1e3)}  env.step {np.median(cat['ms']):.2f} ms (median of episodes)")


if __name__ == "__main__":
    main()
