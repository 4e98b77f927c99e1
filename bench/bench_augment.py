"""Replay augmentation figures on one real synthesised episode (~900 frames), measured side by side:

1. The geometry of one augmented episode: envelope (FK of every state, adaptive sampling, RDP, capsules), placement
   of three distractors, the composed world, and the independent checker (true distances at every
   frame), next to a bare loop of mj_setState + mj_kinematics over the same states (the least any
   per-frame check costs). Median of `--rounds`; the ratio total / bare loop.
2. Capsule counts before (one per proxy per sample pair) and after RDP, for a few tolerances; and the
   adaptive sampler with temporal tolerances finer than the motion between two frames.
3. Violations found by the checker over `--seeds` seeds, with the real inflation and with the
   inflation dropped (capsule radius 0), both in the tight placement mode that puts each distractor as
   close to the envelope as its tries allow: the first must be 0, the second shows the margin is needed.

Usage: python bench/bench_augment.py [--dataset data/fruit_in_microwave] [--rounds 5] [--seeds 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

from x2.augment.check import check_world
from x2.augment.compose import compose_world
from x2.augment.envelope import STATE, EnvelopeParams, build_envelope
from x2.augment.placement import box_support, distractor_shape, place_distractors, static_obstacles, work_area
from x2.datasets import Dataset
from x2.envspec.scene import load_asset

ASSETS = ("block", "mug", "orange")
CLEARANCE = 0.02


def bare_kinematics(model: mujoco.MjModel, states: np.ndarray) -> float:
    data = mujoco.MjData(model)
    t0 = time.perf_counter()
    for s in states:
        mujoco.mj_setState(model, data, s, STATE)
        mujoco.mj_kinematics(model, data)
    return time.perf_counter() - t0


def one_augmented(model: mujoco.MjModel, xml: str, states: np.ndarray, seed: int,
                mode: str = "uniform") -> dict[str, float]:
    t0 = time.perf_counter()
    envelope = build_envelope(model, states, EnvelopeParams(clearance=CLEARANCE))
    t1 = time.perf_counter()
    shapes = [distractor_shape(load_asset(n)) for n in ASSETS]
    table = box_support(model)
    report = place_distractors(shapes, work_area(envelope, table), envelope, static_obstacles(model, table),
                               np.random.default_rng(seed), CLEARANCE, mode=mode)
    t2 = time.perf_counter()
    world = mujoco.MjModel.from_xml_string(compose_world(xml, {}, report.placed, {s.name: s for s in shapes},
                                                         model.opt.timestep)[0])
    t3 = time.perf_counter()
    result = check_world(world, states, CLEARANCE)
    t4 = time.perf_counter()
    return {"envelope": t1 - t0, "placement": t2 - t1, "compose": t3 - t2, "check": t4 - t3, "total": t4 - t0,
            "placed": len(report.placed), "violations": result.violations, "capsules": len(envelope),
            "capsules_before": envelope.capsules_before, "pairs": result.pairs_measured}


def violations(model: mujoco.MjModel, xml: str, states: np.ndarray, seeds: int) -> tuple[int, int, int, int]:
    envelope = build_envelope(model, states, EnvelopeParams(clearance=CLEARANCE))
    bare = dataclasses.replace(envelope, radius=np.zeros_like(envelope.radius))
    shapes = [distractor_shape(load_asset(n)) for n in ASSETS]
    by_name = {s.name: s for s in shapes}
    table = box_support(model)
    obstacles = static_obstacles(model, table)
    real = mutated = real_bad = mutated_bad = 0
    for seed in range(seeds):
        for env, is_mutated in ((envelope, False), (bare, True)):
            report = place_distractors(shapes, table, env, obstacles, np.random.default_rng(seed), CLEARANCE,
                                       max_tries=150, mode="tight")
            world = mujoco.MjModel.from_xml_string(compose_world(xml, {}, report.placed, by_name,
                                                                 model.opt.timestep)[0])
            found = check_world(world, states, CLEARANCE).violations
            if is_mutated:
                mutated += found
                mutated_bad += found > 0
            else:
                real += found
                real_bad += found > 0
    return real, real_bad, mutated, mutated_bad


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, help="use episode 0 of this dataset (default: synthesise one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=20, help="tight placements (one a seed) checked")
    # its name before --seeds (bench/RESULTS.md's commands): still taken, hidden from --help
    parser.add_argument("--variants", type=int, dest="seeds", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.dataset
        if root is None:
            root = Path(tmp) / "fruit"
            subprocess.run([sys.executable, "-m", "x2", "synth", "--task", "fruit_in_microwave", "-n", "1",
                            "--workers", "1", "--dataset", str(root)], check=True, capture_output=True)
        with Dataset.open(root).load(0) as ep:
            xml, states = str(ep.attrs["model_xml"]), ep["states"]
    model = mujoco.MjModel.from_xml_string(xml)
    print(f"machine: {platform.node()} {platform.machine()}, python {platform.python_version()}, "
          f"mujoco {mujoco.__version__}; episode: {len(states)} frames, {model.ngeom} geoms")
    one_augmented(model, xml, states, 0)  # warm caches (asset compiles) before timing
    rows = []
    for r in range(args.rounds):
        bare = bare_kinematics(model, states)
        rows.append({**one_augmented(model, xml, states, r), "bare": bare})
    med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    print(f"\n1. one augmented episode, median of {args.rounds} rounds (s)")
    for key in ("envelope", "placement", "compose", "check", "total"):
        print(f"   {key:10s} {med[key]:.3f}")
    print(f"   bare FK loop over the same states: {med['bare']:.3f} s; total / bare = {med['total'] / med['bare']:.1f}")
    print(f"   placed {med['placed']:.0f} of {len(ASSETS)}, exact distance calls {med['pairs']:.0f}, "
          f"violations {med['violations']:.0f}")
    print("\n2. capsules before -> after RDP")
    for eps in (0.002, 0.005, 0.01, 0.02):
        env = build_envelope(model, states, EnvelopeParams(eps=eps, clearance=CLEARANCE))
        print(f"   eps {eps * 1000:4.0f} mm: {env.capsules_before} -> {len(env)} "
              f"({env.capsules_before / len(env):.0f}x fewer), inflation {env.inflation() * 1000:.1f} mm, "
              f"samples {env.samples} for {env.frames} frames, temporal bound {env.temporal_bound * 1000:.2f} mm")
    for tol in (0.0005, 0.0001):
        t0 = time.perf_counter()
        env = build_envelope(model, states, EnvelopeParams(temporal_tol=tol, clearance=CLEARANCE))
        print(f"   temporal_tol {tol * 1000:.1f} mm: {env.samples} samples for {env.frames} frames, bound "
              f"{env.temporal_bound * 1000:.3f} mm, {env.capsules_before} -> {len(env)} capsules, "
              f"{time.perf_counter() - t0:.2f} s")
    real, real_bad, mutated, mutated_bad = violations(model, xml, states, args.seeds)
    print(f"\n3. tight placements, {args.seeds} seeds x {len(ASSETS)} distractors, checker at every frame:")
    print(f"   real inflation:    {real} violating frame-pairs, {real_bad} of {args.seeds} placements rejected")
    print(f"   inflation dropped: {mutated} violating frame-pairs, {mutated_bad} of {args.seeds} placements rejected")


if __name__ == "__main__":
    main()
