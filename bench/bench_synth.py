"""Synthesis figures, concurrent against `--sequential`, measured side by side in one run on the same seeds.

For each schedule (the arm scheduler, and one node at a time):

1. Throughput: `x2 synth`'s runner with 2 workers on fruit_in_microwave (state only): accepted demos per
   minute, acceptance rate, mean episode length of the accepted demos.
2. The physics floor: the same accepted action streams stepped in the simulator alone (reset + step, no
   planning, no labels, no disk) on as many processes as the synthesis had workers. The overhead ratio is
   synthesis wall / floor wall (1.0 would be synthesis at the cost of its physics). Beside it the same ratio in
   CPU seconds (every process of the synthesis, parent and workers, start-up included / the floor's stepping).
   This shared machine's speed drifts by 10-20 % from one minute to the next, in CPU time too, so from the
   second round on the floor is measured before and after each synthesis and averaged.
   The loop ratio divides two figures of the same attempts instead (each attempt's rollout, reset included, over
   its physics steps, summed over the workers): nothing measured a minute apart, so it drifts least, and it
   leaves out what happens outside the attempts (worker start-up, the parent's commits, the last attempts a
   finished run discards).
3. Contacts: the deepest penetration in every accepted episode, recomputed from its stored states (what
   `x2 datasets validate --physics` reports), against the 5 mm limit.

With `--before DIR` (a checkout of an older commit, e.g. `git worktree add /tmp/before COMMIT`), that
commit's `x2 synth` runs first on the same seeds, in a subprocess on its own code, as the baseline.

With `--rounds R` the schedules run in turn R times (before, concurrent, sequential, before, ...) and the
medians are reported: on a shared machine one run's rate drifts by 10 % from the next one's.

With `--only concurrent` (or `sequential`) just that schedule runs, e.g. to follow one figure while changing it.

Usage: python bench/bench_synth.py [--task fruit_in_microwave] [--n 100] [--workers 2] [--seed 0] [--before DIR]
       [--rounds R] [--only concurrent|sequential]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from x2.datasets import Dataset
from x2.envspec import load_env
from x2.format import SYNTH_REPORT_FILE
from x2.recorded.replay import PENETRATION_LIMIT_M, deepest_penetration
from x2.sim.mujoco.backend import MujocoBackend
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun


def _cpu_seconds() -> float:
    """CPU time of this process and of every child it has reaped (a synthesis' workers, a subprocess)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def synthesise(task: str, n: int, workers: int, out: Path, seed: int, sequential: bool) -> tuple[float, float, dict]:
    """Wall seconds, CPU seconds (parent and workers) and the report of one synthesis."""
    t0, c0 = time.perf_counter(), _cpu_seconds()
    SynthRun(SynthConfig(SessionOptions(task, sequential=sequential), n=n, workers=workers, seed=seed), out).run()
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    return wall, cpu, json.loads((out / SYNTH_REPORT_FILE).read_text())


def synthesise_before(code: Path, task: str, n: int, workers: int, out: Path, seed: int) -> tuple[float, float, dict]:
    """The older commit's synthesis, run as its CLI would run it, on its own code."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    t0, c0 = time.perf_counter(), _cpu_seconds()  # (the cwd is the checkout: -m puts the cwd first on sys.path)
    subprocess.run([sys.executable, "-m", "x2", "synth", "--task", task, "-n", str(n), "--workers", str(workers),
                    "--seed", str(seed), "--dataset", str(out)],
                   env=env, cwd=code, check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    return wall, cpu, json.loads((out / SYNTH_REPORT_FILE).read_text())


def _step_share(task: str, path: str, indices: list[int]) -> tuple[float, float]:
    """In a fresh process: step the actions of these episodes from their seeds; the wall and CPU seconds."""
    backend = MujocoBackend(load_env(task))
    ds = Dataset.open(path)
    streams = []
    for index in indices:
        with ds.load(index) as ep:
            streams.append((int(ep.attrs["seed"]), np.asarray(ep["action"])))
    t0, c0 = time.perf_counter(), time.process_time()
    for seed, actions in streams:
        backend.reset(seed)
        for a in actions:
            backend.step(a)
    return time.perf_counter() - t0, time.process_time() - c0


def physics_floor(task: str, path: Path, workers: int) -> tuple[float, float]:
    """Wall seconds to step every accepted episode on `workers` processes (the slowest share, each share timed
    inside its process once its episodes are loaded: process start-up and reading are not physics), and the
    CPU seconds of all shares."""
    indices = [r.index for r in Dataset.open(path).episodes()]
    shares = [indices[w::workers] for w in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        timed = list(pool.map(_step_share, [task] * workers, [str(path)] * workers, shares))
    return max(wall for wall, _ in timed), sum(cpu for _, cpu in timed)


def deepest_mm(path: Path) -> tuple[float, int]:
    ds = Dataset.open(path)
    worst = (0.0, -1)
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            worst = max(worst, (deepest_penetration(ep).depth * 1e3, record.index))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="fruit_in_microwave")
    parser.add_argument("--n", type=int, default=100, help="accepted demos per schedule")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", type=Path, help="a checkout of an older commit: its synthesis is the baseline")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the schedules in turn this many times and report medians (a shared machine drifts)")
    parser.add_argument("--only", choices=("concurrent", "sequential"), help="run this schedule alone (no comparison)")
    args = parser.parse_args()
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; task {args.task}; "
          f"n {args.n}, {args.workers} workers, master seed {args.seed}")
    schedules = (("before",) if args.before else ()) + ((args.only,) if args.only else ("concurrent", "sequential"))
    rounds: list[dict[str, dict[str, float]]] = []
    kept: dict[str, Path] = {}  # each schedule's first dataset, for the floors measured before its later runs
    with tempfile.TemporaryDirectory() as keep_in:
        for r in range(args.rounds):
            if args.rounds > 1:
                print(f"round {r + 1} of {args.rounds}")
            rounds.append({schedule: measure(args, schedule, kept, Path(keep_in)) for schedule in schedules})
        if "before" in kept and "sequential" in kept:
            print(same_as_before(kept["before"], kept["sequential"]))
    if args.rounds > 1:
        print(f"medians over {args.rounds} rounds (throughput and overhead ratio; the data is the same every round)")
        for schedule in schedules:
            rates = [rnd[schedule]["rate"] for rnd in rounds]
            ratios = [rnd[schedule]["wall"] / rnd[schedule]["floor"] for rnd in rounds]
            cpu_ratios = [rnd[schedule]["cpu_ratio"] for rnd in rounds]
            loops = [rnd[schedule]["loop_ratio"] for rnd in rounds if "loop_ratio" in rnd[schedule]]
            print(f"  {schedule}: {np.median(rates):.1f} accepted/min (rounds {', '.join(f'{x:.1f}' for x in rates)}); "
                  f"overhead ratio {np.median(ratios):.2f} (rounds {', '.join(f'{x:.2f}' for x in ratios)}), "
                  f"in CPU seconds {np.median(cpu_ratios):.2f} (rounds {', '.join(f'{x:.2f}' for x in cpu_ratios)})"
                  + (f", loop ratio {np.median(loops):.2f} (rounds {', '.join(f'{x:.2f}' for x in loops)})"
                     if loops else ""))
    if args.only:
        return
    last = rounds[-1]
    c = last["concurrent"]
    for name in ("sequential", "before") if args.before else ("sequential",):
        s = last[name]
        shorter = 1 - c["mean_ticks"] / s["mean_ticks"]
        # each round's two runs are neighbours in time: the ratio within a round drifts less than either rate
        gains = [rnd["concurrent"]["rate"] / rnd[name]["rate"] for rnd in rounds]
        print(f"concurrent / {name}: throughput {np.median(gains):.2f}x"
              + (f" (median of rounds {', '.join(f'{g:.2f}' for g in gains)})" if len(gains) > 1 else "")
              + f", mean length {c['mean_ticks'] / s['mean_ticks']:.2f} ({100 * shorter:.1f} % shorter)")


def same_as_before(before: Path, sequential: Path) -> str:
    """`--sequential` promises the older commit's episodes: its attempts' verdicts and lengths, and the action
    streams of the episodes both keep, compared."""
    a = json.loads((before / SYNTH_REPORT_FILE).read_text())["attempts"]
    b = json.loads((sequential / SYNTH_REPORT_FILE).read_text())["attempts"]
    alike = sum((x["accepted"], x["reason"], x["ticks"]) == (y["accepted"], y["reason"], y["ticks"])
                for x, y in zip(a, b, strict=False))
    old, new = Dataset.open(before), Dataset.open(sequential)
    kept = sorted({r.index for r in old.episodes()} & {r.index for r in new.episodes()})
    equal = 0
    for index in kept:
        with old.load(index) as x, new.load(index) as y:
            equal += np.array_equal(np.asarray(x["action"]), np.asarray(y["action"]))
    return (f"sequential against before: {alike} of {max(len(a), len(b))} attempts alike (verdict and length), "
            f"{equal} of {len(kept)} action streams equal")


def measure(args: argparse.Namespace, schedule: str, kept: dict[str, Path], keep_in: Path) -> dict[str, float]:
    """One schedule's synthesis, its physics floor and its contacts, printed and returned.

    The floor is measured right after the synthesis and, from the second round on, right before it too (on the
    first round's dataset: the same seeds give the same accepted streams), and the two are averaged: the
    machine's speed drifts from one minute to the next, and a floor on one side only takes that drift for
    overhead, or hides overhead behind it."""
    before = physics_floor(args.task, kept[schedule], args.workers) if schedule in kept else None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / schedule
        if schedule == "before":
            wall, cpu, report = synthesise_before(args.before, args.task, args.n, args.workers, out, args.seed)
        else:
            wall, cpu, report = synthesise(args.task, args.n, args.workers, out, args.seed, schedule == "sequential")
        after = physics_floor(args.task, out, args.workers)
        floor, floor_cpu = (after if before is None else ((before[0] + after[0]) / 2, (before[1] + after[1]) / 2))
        ticks = [a["ticks"] for a in report["attempts"] if a["accepted"]]
        depth, where = deepest_mm(out)
        if schedule not in kept:
            kept[schedule] = keep_in / schedule
            shutil.copytree(out, kept[schedule])
    row = {"rate": 60.0 * report["accepted"] / wall, "accepted": report["accepted"],
           "attempted": report["attempted"], "mean_ticks": float(np.mean(ticks)), "wall": wall,
           "floor": floor, "cpu_ratio": cpu / floor_cpu, "depth_mm": depth}
    t = report["attempt_time_s"]
    if t.get("step"):  # (an older commit's report may not time its attempts)
        row["loop_ratio"] = t["total"] / t["step"]
    print(f"{schedule}: {report['accepted']} accepted / {report['attempted']} attempted "
          f"({100 * report['accepted'] / report['attempted']:.1f} %) in {wall:.1f} s -> "
          f"{row['rate']:.1f} accepted/min; mean length {row['mean_ticks']:.1f} ticks")
    print(f"  rejections: {report['rejections']}")
    sides = "after" if before is None else f"before {before[0]:.1f} s and after {after[0]:.1f} s"
    print(f"  physics floor ({args.workers} processes, the same accepted streams; {sides}): {floor:.1f} s -> "
          f"overhead ratio {wall / floor:.2f}; in CPU seconds {cpu:.1f} / {floor_cpu:.1f} = {cpu / floor_cpu:.2f}")
    print(f"  deepest penetration {depth:.2f} mm (episode {where}); limit {PENETRATION_LIMIT_M * 1e3:g} mm")
    if "loop_ratio" in row:
        print(f"  per attempt, summed over workers: loop {t['total']:.1f} s = teacher {t['teacher']:.1f} s + "
              f"physics step {t['step']:.1f} s + the rest {t['total'] - t['teacher'] - t['step']:.1f} s: "
              f"loop ratio {row['loop_ratio']:.2f}", flush=True)
        # what separates the loop ratio from the overhead ratio: the accepted streams' steps inside their attempts
        # (wall, beside planning and the parent's commits) against the floor stepping them back to back (CPU)
        inside = sum(a["timing_s"]["step"] for a in report["attempts"] if a["accepted"])
        print(f"  the accepted attempts' physics steps {inside:.1f} s against the floor's {floor_cpu:.1f} s of CPU: "
              f"{inside / floor_cpu:.2f}", flush=True)
    return row

if __name__ == "__main__":
    main()
