"""`x2 synth` on a local worker pool against `--ray local`, side by side on the same seeds, and the driver's peak
memory on a long Ray run.

1. Throughput: for 1 and 2 workers, the local pool and Ray (a local Ray instance started by the command) run
   `x2 synth --task pick_place -n N` in turn, R rounds, each in its own subprocess into a fresh dataset.
   Accepted per minute is the runner's own figure (synth_report.json: from before the workers start, Ray's
   start included) and the command's wall time beside it; the ratio Ray / local is of the medians. Both sides
   must accept the same attempts (the same seeds, in the same order): checked for every pair.
2. Memory: `x2 synth --ray local -n M`, the driver's peak RSS (VmHWM of the command's own process, read from
   /proc until it exits; Ray's own processes are not in it).

With `--ray cluster` the Ray side is a cluster that is already up, as on a lab's nodes: before each Ray run
`ray start --head` starts one on this machine (untimed), the command runs with `--ray auto`, and `ray stop` ends
the cluster after it, so the local runs share the machine with no Ray process.

Usage: python bench/bench_ray.py [--task pick_place] [--n 40] [--rounds 2] [--workers 1,2] [--seed 0]
       [--memory-n 1000] [--skip-throughput] [--ray local|cluster]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "OMP_NUM_THREADS": "1",
       "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _peak_rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _ray_cli(*args: str) -> None:
    ray = Path(sys.executable).with_name("ray")
    subprocess.run([str(ray), *args], env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def synth(task: str, n: int, seed: int, workers: int, ray: str | None, dataset: Path) -> dict[str, object]:
    if ray == "cluster":
        _ray_cli("start", "--head", f"--num-cpus={workers}", "--include-dashboard=false", "--disable-usage-stats")
    try:
        return _synth(task, n, seed, workers, None if ray is None else "auto" if ray == "cluster" else ray, dataset)
    finally:
        if ray == "cluster":
            _ray_cli("stop", "--force")


def _synth(task: str, n: int, seed: int, workers: int, ray: str | None, dataset: Path) -> dict[str, object]:
    args = [sys.executable, "-m", "x2", "synth", "--task", task, "-n", str(n), "--seed", str(seed),
            "--workers", str(workers), "--dataset", str(dataset), *(["--ray", ray] if ray else [])]
    errors = dataset.with_name(dataset.name + ".stderr")
    started = time.perf_counter()
    with errors.open("w") as stderr:
        process = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL, stderr=stderr)
        peak = 0
        while process.poll() is None:
            peak = max(peak, _peak_rss_kb(process.pid) or 0)  # (VmHWM only grows: the last read is the peak)
            time.sleep(0.5)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {process.returncode}: {errors.read_text()}")
    report = json.loads((dataset / "synth_report.json").read_text())
    return {"accepted_per_minute": report["accepted_per_minute"], "runner_wall_s": report["wall_s"],
            "command_wall_s": round(wall, 2), "attempted": report["attempted"], "accepted": report["accepted"],
            "accepted_attempts": [a["index"] for a in report["attempts"] if a["accepted"]],
            "driver_peak_rss_mb": round(peak / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="pick_place")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-n", type=int, default=1000)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--ray", choices=("local", "cluster"), default="local")
    a = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {platform.node()}, {os.cpu_count()} cores, "
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="bench_ray-"))
    try:
        if not a.skip_throughput:
            print(f"{'workers':>7} {'side':>5} {'round':>5} {'acc/min':>8} {'runner s':>9} {'command s':>9} "
                  f"{'attempted':>9}", flush=True)
            medians: dict[tuple[int, str], float] = {}
            for workers in (int(w) for w in a.workers.split(",")):
                rates: dict[str, list[float]] = {"local": [], "ray": []}
                for r in range(a.rounds):
                    runs = {}
                    for side in ("local", "ray") if r % 2 == 0 else ("ray", "local"):  # (drift hits both)
                        out = synth(a.task, a.n, a.seed, workers, a.ray if side == "ray" else None,
                                    root / f"w{workers}-{side}-{r}")
                        runs[side] = out
                        rates[side].append(float(out["accepted_per_minute"]))  # type: ignore[arg-type]
                        print(f"{workers:>7} {side:>5} {r:>5} {out['accepted_per_minute']:>8} "
                              f"{out['runner_wall_s']:>9} {out['command_wall_s']:>9} {out['attempted']:>9}", flush=True)
                    assert runs["local"]["accepted_attempts"] == runs["ray"]["accepted_attempts"], "different attempts"
                for side, values in rates.items():
                    medians[(workers, side)] = statistics.median(values)
                # a round's two runs are minutes apart, its rounds further: the ratio within a round drifts least
                pairs = [ray / local for ray, local in zip(rates["ray"], rates["local"], strict=True)]
                print(f"{workers} worker(s): median accepted/min local {medians[(workers, 'local')]:.1f}, "
                      f"ray {medians[(workers, 'ray')]:.1f}, ray/local "
                      f"{medians[(workers, 'ray')] / medians[(workers, 'local')]:.3f}; per round "
                      f"{', '.join(f'{x:.3f}' for x in pairs)}, median {statistics.median(pairs):.3f}", flush=True)
        if a.memory_n:
            out = synth(a.task, a.memory_n, a.seed, 2, a.ray, root / "memory")
            print(f"--ray {a.ray} -n {a.memory_n} (2 workers): driver peak RSS {out['driver_peak_rss_mb']} MB, "
                  f"{out['accepted_per_minute']} accepted/min, {out['attempted']} attempts, "
                  f"{out['command_wall_s']} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
