"""Cost of one `CollisionWorld.in_collision` check on fruit_in_microwave, in interleaved rounds (medians).

Three workloads, each a fixed list of right-arm configurations (seeded):

- near home: home + uniform noise of +-0.3 rad per joint, almost all free (the planner's common case);
- random: uniform within the joint limits, about half in collision (RRT samples);
- holding: the near-home list with the fruit held in the right gripper (a second kinematics pass).

Times are CPU time of this process (`time.process_time`): on the shared 2-core machine other sessions'
load stretches wall time by up to 2x and CPU time much less. Each figure is printed in microseconds and
as a ratio to one bare `mj_kinematics` on the same model copy (measured in the same rounds), a yardstick
that does not depend on the contact policy. To compare two versions of the code, run this script for
each, alternately (bench/RESULTS.md, "Honest contacts").

Usage: python bench/bench_collision.py [--rounds 15] [--n 2000]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import mujoco
import numpy as np

from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld


def per_check(world: CollisionWorld, qs: list[np.ndarray]) -> float:
    t0 = time.process_time()
    for q in qs:
        world.in_collision({"right": q})
    return (time.process_time() - t0) / len(qs)


def per_kinematics(world: CollisionWorld, qs: list[np.ndarray]) -> float:
    m, d, sl = world.model, world.data, world.arm_qadr["right"]
    t0 = time.process_time()
    for q in qs:
        d.qpos[sl] = q
        mujoco.mj_kinematics(m, d)
    return (time.process_time() - t0) / len(qs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--n", type=int, default=2000, help="configurations per workload")
    args = parser.parse_args()
    backend = MujocoBackend(load_env("fruit_in_microwave"))
    backend.reset(1)
    world = CollisionWorld(backend)
    # a second world with the fruit in the open right gripper (its origin is at its bottom), held from there
    tcp = backend.robot_state().ee_pose[1, :3]
    backend.set_object_pose("fruit", tcp - np.array([0.0, 0.0, 0.5 * backend.object_rest_height("fruit")]))
    held = CollisionWorld(backend)
    held.attach("fruit", "right")
    rng = np.random.default_rng(0)
    lo, hi = world.joint_range["right"].T
    home = np.array(backend.env.robot.arm("right").home)
    near = [np.clip(home + rng.uniform(-0.3, 0.3, 6), lo, hi) for _ in range(args.n)]
    anywhere = [rng.uniform(lo, hi) for _ in range(args.n)]
    hits = {"near home": np.mean([world.in_collision({"right": q}) for q in near]),
            "random": np.mean([world.in_collision({"right": q}) for q in anywhere]),
            "holding": np.mean([held.in_collision({"right": q}) for q in near])}
    samples: dict[str, list[float]] = {"kinematics": [], "near home": [], "random": [], "holding": []}
    for _ in range(args.rounds):
        samples["kinematics"].append(per_kinematics(world, near))
        samples["near home"].append(per_check(world, near))
        samples["random"].append(per_check(world, anywhere))
        samples["holding"].append(per_check(held, near))
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; "
          f"{args.rounds} rounds x {args.n} checks, medians")
    print(f"{'what':40s} {'per call':>10s} {'/ kinematics':>13s} {'in collision':>13s}")
    print(f"{'mj_kinematics on the copy':40s} {med['kinematics'] * 1e6:8.1f}us {1.0:13.2f} {'-':>13s}")
    for what in ("near home", "random", "holding"):
        print(f"{'in_collision, ' + what:40s} {med[what] * 1e6:8.1f}us {med[what] / med['kinematics']:13.2f} "
              f"{100 * hits[what]:12.0f}%")


if __name__ == "__main__":
    main()
