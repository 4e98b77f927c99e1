"""Foundation figures, measured side by side in one run (interleaved rounds, medians):

1. DAG runtime cost per tick on a 10-node DAG, as a fraction of one physics control step
   (target <= 2 %), both the bare runtime and the runtime with real predicates on the booth.
2. Physics real-time factor of the fruit_in_microwave booth: control period / wall time per tick.
3. Recorder cost: one tick of state-only recording relative to one physics control step.

Usage: python bench/bench_foundation.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from x2.datasets import EpisodeStart, Tick
from x2.envspec import load_env
from x2.labeling import DagRuntime
from x2.rollout import TaskMonitor, open_dataset
from x2.sim.mujoco.backend import MujocoBackend

TICKS = 300


def ten_node_dag() -> tuple[list[str], list[tuple[str, str]]]:
    nodes = [f"n{i}" for i in range(10)]
    edges = [("n0", "n2"), ("n1", "n2"), ("n2", "n3"), ("n2", "n4"), ("n3", "n5"), ("n4", "n5"), ("n5", "n6"),
             ("n6", "n7"), ("n6", "n8"), ("n7", "n9"), ("n8", "n9")]
    return nodes, edges


def bench_runtime(rng: np.random.Generator) -> float:
    nodes, edges = ten_node_dag()
    rt = DagRuntime(nodes, edges)
    # Completions spread over the episode so the active set stays realistic (1-3 nodes).
    trace = [{n: bool(t > 25 * (i + 1) and rng.random() < 0.5) for i, n in enumerate(nodes)} for t in range(TICKS)]
    t0 = time.perf_counter()
    for t in range(TICKS):
        rt.step(t, trace[t])
    return (time.perf_counter() - t0) / TICKS


def bench_monitor(backend: MujocoBackend) -> float:
    monitor = TaskMonitor(backend.env.task, backend, backend.env.fps)
    t0 = time.perf_counter()
    for t in range(TICKS):
        monitor.step(t)
    return (time.perf_counter() - t0) / TICKS


def bench_physics(backend: MujocoBackend, action: np.ndarray) -> float:
    t0 = time.perf_counter()
    for _ in range(TICKS):
        backend.step(action)
    return (time.perf_counter() - t0) / TICKS


def bench_recorder(backend: MujocoBackend, ds, action: np.ndarray) -> float:
    writer = ds.begin_episode(EpisodeStart(source="scripted", seed=0), object_names=backend.object_names)
    rs, objects = backend.robot_state(), backend.object_poses()
    t0 = time.perf_counter()
    for t in range(TICKS):
        writer.append(Tick(timestamp=t / 30.0, action=action, qpos=rs.qpos, qvel=rs.qvel, ee_pose=rs.ee_pose,
                      object_poses=objects, state=backend.get_state(), lateness_ms=0.0))
    dt = (time.perf_counter() - t0) / TICKS
    writer.abort()
    return dt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    env = load_env("fruit_in_microwave")
    backend = MujocoBackend(env)
    backend.reset(0)
    action = backend.home_action()
    rng = np.random.default_rng(0)
    samples: dict[str, list[float]] = {"runtime": [], "monitor": [], "physics": [], "recorder": []}
    with tempfile.TemporaryDirectory() as tmp:
        ds = open_dataset(Path(tmp) / "bench", env, backend)
        for _ in range(args.rounds):
            samples["physics"].append(bench_physics(backend, action))
            samples["runtime"].append(bench_runtime(rng))
            backend.reset(0)
            samples["monitor"].append(bench_monitor(backend))
            samples["recorder"].append(bench_recorder(backend, ds, action))
    med = {k: statistics.median(v) for k, v in samples.items()}
    period = 1.0 / env.fps
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; "
          f"{args.rounds} rounds x {TICKS} ticks, medians")
    print(f"{'what':52s} {'per tick':>12s} {'ratio':>10s}")
    print(f"{'physics control step (16 substeps + forward)':52s} {med['physics'] * 1e3:10.3f}ms "
          f"{'1.000':>10s}")
    print(f"{'DAG runtime, 10-node DAG (bare)':52s} {med['runtime'] * 1e6:10.1f}us "
          f"{med['runtime'] / med['physics']:10.4f}")
    print(f"{'DAG runtime + real predicates, fruit_in_microwave':52s} {med['monitor'] * 1e6:10.1f}us "
          f"{med['monitor'] / med['physics']:10.4f}")
    print(f"{'recorder append, state only':52s} {med['recorder'] * 1e6:10.1f}us "
          f"{med['recorder'] / med['physics']:10.4f}")
    print(f"physics real-time factor (control period {period * 1e3:.1f} ms / step): {period / med['physics']:.1f}x")


if __name__ == "__main__":
    main()
