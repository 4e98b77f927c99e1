"""Synthesis with physically honest contacts, side by side with a checkout from before them.

Runs `x2 synth --task fruit_in_microwave` in this checkout ("after") and in another checkout ("before",
e.g. a git worktree of the commit before the change, with its own .venv) in alternating rounds, so both
see the same load on this shared machine, then reports acceptance, accepted demos per minute and their
ratio, and the deepest penetration between any two geoms per episode: "after" through
`x2 datasets validate --physics`, "before" by the same measurement (set each stored state, deepest
contact) run with the old checkout's own code.

    .venv/bin/python bench/bench_contacts.py --before /work/wt-base --n 100 --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
TASK = "fruit_in_microwave"

# Deepest contact per stored episode in a checkout from before the world was stored in the file: its
# backend rebuilt from today's specs and the episode's seed, its stored layout applied, each state set.
OLD_PENETRATION = r"""
import json, sys
import numpy as np
from x2.datasets import Dataset
from x2.sim.layout import Placement
from x2.sim.mujoco.backend import MujocoBackend
from x2.envspec import load_env
ds = Dataset.open(sys.argv[1])
backend = MujocoBackend(load_env(ds.manifest.task))
out = []
for r in ds.episodes():
    with ds.load(r.index) as ep:
        backend.reset(int(ep.attrs["seed"]))
        backend.apply_layout({k: Placement(*v) for k, v in json.loads(ep.attrs["layout"]).items()})
        deepest = 0.0
        for state in ep["states"]:
            backend.set_state(state)
            d = backend.data
            if d.ncon:
                deepest = max(deepest, -float(d.contact.dist.min()))
        out.append(deepest)
print(json.dumps(out))
"""


def synth(checkout: Path, n: int, seed: int, out: Path, workers: int) -> dict:
    cmd = [str(checkout / ".venv" / "bin" / "x2"), "synth", "--task", TASK, "-n", str(n), "--seed", str(seed),
           "--workers", str(workers), "--dataset", str(out)]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, cwd=out.parent, capture_output=True, text=True,
                         env={**os.environ, "MUJOCO_GL": "egl"})
    wall = time.perf_counter() - t0
    if run.returncode not in (0, 1):  # 1: fewer accepted than asked (reported, not an error)
        sys.exit(f"{checkout}: synth failed:\n{run.stderr}")
    report = json.loads((out / "synth_report.json").read_text())
    return {"accepted": report["accepted"], "attempted": report["attempted"], "wall": wall,
            "rejections": report["rejections"]}


def after_penetrations(paths: list[Path]) -> list[float]:
    """What `x2 datasets validate --physics` reports, per episode (the same function)."""
    from x2.datasets import Dataset
    from x2.recorded.replay import deepest_penetration

    depths = []
    for path in paths:
        ds = Dataset.open(path)
        for r in ds.episodes():
            with ds.load(r.index) as ep:
                depths.append(deepest_penetration(ep).depth)
    return depths


def before_penetrations(checkout: Path, paths: list[Path]) -> list[float]:
    depths = []
    for path in paths:
        # run in the old checkout, so `import x2` is its x2 (-c puts the working directory first on sys.path)
        run = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", OLD_PENETRATION, str(path)],
                             capture_output=True, text=True, env={**os.environ, "MUJOCO_GL": "egl"}, cwd=checkout)
        if run.returncode:
            sys.exit(f"{checkout}: penetration replay failed:\n{run.stderr}")
        depths += json.loads(run.stdout)
    return depths


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True, help="checkout from before the change (with .venv)")
    p.add_argument("--n", type=int, default=100, help="accepted demos per side, over all rounds")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    per_round = a.n // a.rounds
    sides = {"before": a.before.resolve(), "after": HERE}
    totals = {s: {"accepted": 0, "attempted": 0, "wall": 0.0, "rejections": {}} for s in sides}
    paths: dict[str, list[Path]] = {s: [] for s in sides}
    with tempfile.TemporaryDirectory(prefix="x2-contacts-") as tmp:
        for r in range(a.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                out = Path(tmp) / side / f"round{r}"
                out.parent.mkdir(parents=True, exist_ok=True)
                got = synth(sides[side], per_round, 100 + r, out, a.workers)
                t = totals[side]
                t["accepted"] += got["accepted"]
                t["attempted"] += got["attempted"]
                t["wall"] += got["wall"]
                for k, v in got["rejections"].items():
                    t["rejections"][k] = t["rejections"].get(k, 0) + v
                paths[side].append(out)
                print(f"round {r} {side:6s}: {got['accepted']}/{got['attempted']} in {got['wall']:.1f} s",
                      flush=True)
        pen = {"before": before_penetrations(a.before, paths["before"]), "after": after_penetrations(paths["after"])}
    print(f"\nmachine: {os.uname().nodename} {os.uname().machine}, {os.cpu_count()} cores; task {TASK}; "
          f"{a.rounds} alternating rounds of -n {per_round}, {a.workers} workers")
    print(f"{'side':8s}{'accepted':>10s}{'attempted':>10s}{'accept %':>10s}{'demos/min':>11s}"
          f"{'deepest mm':>12s}{'p95 mm':>8s}{'> 5 mm':>8s}")
    rate = {}
    for side, t in totals.items():
        rate[side] = 60.0 * t["accepted"] / t["wall"]
        d = np.array(pen[side]) * 1e3
        print(f"{side:8s}{t['accepted']:>10d}{t['attempted']:>10d}{100 * t['accepted'] / t['attempted']:>10.1f}"
              f"{rate[side]:>11.1f}{d.max():>12.2f}{np.percentile(d, 95):>8.2f}{int((d > 5).sum()):>8d}")
    print(f"throughput after / before: {rate['after'] / rate['before']:.3f}")
    for side, t in totals.items():
        print(f"rejections {side}: {dict(sorted(t['rejections'].items(), key=lambda kv: -kv[1]))}")


if __name__ == "__main__":
    main()
