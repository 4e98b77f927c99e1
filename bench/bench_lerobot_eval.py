"""LeRobot's own evaluator against x2's on the same seeds: `lerobot-eval --env.type=x2` (LeRobot 0.6, unchanged,
through plugins/lerobot_env_x2) and `x2 eval` score the same LeRobot checkpoint on the same worlds, and their
per-episode successes must agree seed by seed.

    .venv/bin/python bench/bench_lerobot_eval.py --policy outputs/act_pick/checkpoints/last/pretrained_model -n 50

Both run at once (each one process of policy and simulation: lerobot-eval one env at a time, x2 eval one worker),
so each one's throughput is measured beside the other's. Episode i of each LeRobot suite is reset with seed
`--seed=0` + i, which x2's environments take as slot i of the split's master seed (`--env.master_seed`, x2 eval's
`--seed`): x2 eval's episode i. Batch size 1: a policy asked for a batch of observations at once answers within
float rounding of what it answers each alone, which over hundreds of ticks can tip an episode.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SPLITS = ("train", "eval")


def lerobot_eval_args(policy: Path, task: str, n: int, master_seed: int, out: Path) -> list[str]:
    # (small renders: lerobot-eval draws a video of its first 10 episodes per suite from env.render())
    return [str(Path(sys.executable).parent / "lerobot-eval"), f"--policy.path={policy}", "--policy.device=cpu",
            "--env.type=x2", f"--env.task={task}", f"--env.master_seed={master_seed}",
            "--env.observation_height=96", "--env.observation_width=128", f"--eval.n_episodes={n}",
            "--eval.batch_size=1", "--seed=0", f"--output_dir={out}"]


def x2_eval_args(policy: Path, task: str, n: int, master_seed: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "x2", "eval", "--task", task, "--policy", f"lerobot:{policy}", "-n", str(n),
            "--seed", str(master_seed), "--workers", "1", "--dataset", str(out)]


def compare(lerobot: dict[str, Any], report: dict[str, Any], n: int) -> tuple[int, int, list[str]]:
    """(agreeing episodes, compared episodes, one line per split) from eval_info.json and eval_report.json."""
    by_suite = {t["task_group"]: t["metrics"] for t in lerobot["per_task"]}
    agree = total = 0
    lines = []
    for split in SPLITS:
        rows = {r["slot"]: r for r in report["episodes"] if r["split"] == split}
        ours = by_suite[split]["successes"]
        theirs = [bool(rows[i]["success"]) for i in range(n)]
        same = [a == b for a, b in zip(ours, theirs, strict=True)]
        progress = max(abs(r - rows[i]["progress"]) for i, r in enumerate(by_suite[split]["sum_rewards"]))
        agree, total = agree + sum(same), total + n
        marks = "".join("S" if s else "." for s in ours)
        lines.append(f"{split:5s}  lerobot-eval {sum(ours)}/{n}  x2 eval {sum(theirs)}/{n}  same {sum(same)}/{n}  "
                     f"max |sum_reward - progress| {progress:.2e}  [{marks}]"
                     + ("" if all(same) else f"  differ at slots {[i for i, s in enumerate(same) if not s]}"))
    return agree, total, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", required=True, type=Path, help="a LeRobot pretrained_model folder")
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("-n", type=int, default=50, help="episodes per split")
    ap.add_argument("--seed", type=int, default=1, help="x2's master seed (x2 eval --seed)")
    ap.add_argument("--out", type=Path, default=Path("bench-lerobot-eval"))
    args = ap.parse_args()
    policy = args.policy.expanduser().absolute()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, {platform.node()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; policy {policy}; {args.task}, {args.n} episodes per split", flush=True)
    commands = {"lerobot-eval": lerobot_eval_args(policy, args.task, args.n, args.seed, args.out / "lerobot-eval"),
                "x2 eval": x2_eval_args(policy, args.task, args.n, args.seed, args.out / "x2-eval")}
    started, procs, took = time.perf_counter(), {}, {}
    for name, command in commands.items():
        print(f"{name}: {' '.join(command)}", flush=True)
        log = (args.out / f"{name.replace(' ', '-')}.log").open("w")
        procs[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    while len(took) < len(procs):
        for name, proc in procs.items():
            if name not in took and proc.poll() is not None:
                took[name] = time.perf_counter() - started
                if proc.returncode not in (0, 1):  # (x2 eval exits 1 when a policy faulted: still scored)
                    raise SystemExit(f"{name}: exit {proc.returncode}; see {args.out}")
        time.sleep(1)
    lerobot = json.loads((args.out / "lerobot-eval" / "eval_info.json").read_text())
    report = json.loads((args.out / "x2-eval" / "eval_report.json").read_text())
    agree, total, lines = compare(lerobot, report, args.n)
    for name, seconds in took.items():
        print(f"{name}: {seconds:.0f} s, {2 * args.n / seconds * 60:.1f} episodes/min (side by side)")
    print("\n".join(lines))
    print(f"per-episode success: {agree}/{total} episodes agree; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
