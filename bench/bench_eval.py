"""x2 eval, every policy on the same seeds: success, progress, subtasks, throughput and where the time went.

In one run, for each policy: `x2 eval --task T --policy P -n N --seed S --workers W --train-dataset D` (both
splits). Then the two checks evaluation owes: `replay` of a dataset synthesised on the same seeds (`x2 synth
--seed S --keep-failed`, and for the held-out split `--variant V --seed 2^31 + S --allow-eval`) must score, seed
by seed, what the dataset scored, and `expert` must succeed on the seeds synthesis accepted.

    .venv/bin/python bench/bench_eval.py --train-dataset data/pick200 -n 50 \\
        --policies lerobot:outputs/act_pick/checkpoints/last/pretrained_model expert random hold
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

from x2.datasets import Dataset
from x2.envspec.held_out import EVAL_SEED_BASE
from x2.eval.seeds import plan_split


def x2(*args: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "x2", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"x2 {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return time.perf_counter() - t0


def successes(path: Path) -> dict[int, bool]:
    ds = Dataset.open(path)
    return {r.seed: r.success for r in ds.episodes()}


def row(name: str, report: dict[str, Any], task: str) -> list[str]:
    cells = [name]
    for split in ("train", "eval"):
        v = report["tasks"][task].get(split)
        if v is None:
            cells += ["-"] * 4
            continue
        lo, hi = v["success_ci95"]
        subtasks = ", ".join(f"{n} {r:.0%}" for n, r in v["subtask_completion"].items())
        run = next((r for r in report.get("runs", []) if r["split"] == split), {})
        share = v["time_share"]
        cells += [f"{v['successes']}/{v['episodes']} ({v['success_rate']:.0%}, {lo:.0%}-{hi:.0%})",
                  f"{v['mean_progress']:.2f} ({subtasks})", f"{run.get('per_minute', 0):.1f}",
                  f"{share['inference']:.0%} / {share['render']:.0%} / {share['physics']:.0%}"]
    return cells


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--train-dataset", required=True)
    ap.add_argument("--policies", nargs="+", default=["expert", "random", "hold"])
    ap.add_argument("--out", default="bench-eval")
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--image-run", default="head", help="cameras for one more run of `random` that is sent images "
                    "(96x128): what rendering costs an image-based policy's evaluation ('' to skip)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}, {os.cpu_count()} "
          f"cores; {args.task}, n {args.n} per split, master seed {args.seed}, {args.workers} workers")
    common = ["--task", args.task, "-n", str(args.n), "--seed", str(args.seed), "--workers", str(args.workers)]
    rows, reports = [], {}
    for policy in args.policies:
        name = policy.split(":")[0]
        wall = x2("eval", *common, "--policy", policy, "--train-dataset", args.train_dataset,
                  "--dataset", str(out / name))
        reports[name] = json.loads((out / name / "eval_report.json").read_text())
        rows.append(row(name, reports[name], args.task))
        print(f"{name}: {wall:.0f} s", flush=True)
    if args.image_run:
        wall = x2("eval", *common, "--policy", "random", "--cameras", args.image_run, "--size", "96x128",
                  "--train-dataset", args.train_dataset, "--dataset", str(out / "random-images"))
        reports["random-images"] = json.loads((out / "random-images" / "eval_report.json").read_text())
        rows.append(row(f"random, sent {args.image_run} images 96x128", reports["random-images"], args.task))
        print(f"random-images: {wall:.0f} s", flush=True)
    if not args.skip_replay:
        eval_variant = plan_split(args.task, None, "eval", None, args.seed, 1).variant
        for split, extra, seed in (("train", [], args.seed),
                                   ("eval", ["--variant", eval_variant, "--allow-eval"], EVAL_SEED_BASE + args.seed)):
            data = out / f"synth-{split}"
            x2("synth", "--task", args.task, "-n", str(args.n), "--max-attempts", str(args.n), "--keep-failed",
               "--seed", str(seed), "--workers", str(args.workers), "--dataset", str(data), *extra)
            replay = out / f"replay-{split}"
            x2("eval", *common, "--split", split, "--policy", f"replay:{data}", "--dataset", str(replay))
            recorded = successes(data)
            replayed = successes(replay / split)
            same = sum(replayed.get(s) == ok for s, ok in recorded.items())
            synth = json.loads((data / "synth_report.json").read_text())
            accepted = {a["seed"] for a in synth["attempts"] if a["accepted"]}
            expert = successes(out / "expert" / split) if "expert" in reports else {}
            print(f"{split}: replay matches the dataset's success on {same} of {len(recorded)} recorded seeds "
                  f"(dataset {sum(recorded.values())} successes); synthesis accepted {len(accepted)} of "
                  f"{synth['attempted']} attempts, expert succeeded on {sum(expert.values())} of {len(expert)} "
                  f"(on {sum(expert.get(s, False) for s in accepted)} of the accepted seeds)", flush=True)
    print()
    print("| policy | ID success (95 % CI) | ID progress (subtasks) | ID episodes/min | ID inference / render / "
          "physics | OOD success (95 % CI) | OOD progress (subtasks) | OOD episodes/min | OOD inference / render / "
          "physics |")
    print("|" + "---|" * 9)
    for cells in rows:
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
