"""The Gymnasium environments' step overhead, measured side by side in one run (interleaved rounds, medians):

1. per control tick, over the same actions of one pick_place world: `env.step` without images (through
   `gymnasium.make`, its wrappers included) against x2's own loop (`Rollout.run` as `x2 eval` runs it: the teacher
   asked, the DAG stepped, every stream recorded into memory) and against bare `mujoco.mj_step` of the same world for
   the same ticks (the control tick's substeps alone). Target: env.step within 1.2x of x2's loop.
2. throughput of 8 envs: one `AsyncVectorEnv` of 8 against 8 envs stepped one after another in this process
   (steps/s, interleaved rounds).

Usage: python bench/bench_gym_env.py [--rounds 7] [--ticks 300] [--vector-steps 50]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import gymnasium as gym
import mujoco
import numpy as np

import x2.envs  # noqa: F401 - registers x2/TASK-v0
from x2.base.arrays import Floats
from x2.envs.env import X2Env
from x2.rollout import Observation, Rollout, RolloutOptions
from x2.rollout.memory import MemoryRecorder
from x2.sim import ResetInfo

TASK, SLOT = "pick_place", 0
OBS = ["agent_pos", "environment_state"]


class Replay:
    """The loop's teacher: the same precomputed actions the env is given."""

    def __init__(self, actions: Floats):
        self.actions = actions

    def reset(self, info: ResetInfo, home_action: Floats) -> None:
        pass

    def act(self, obs: Observation) -> Floats | None:
        return self.actions[obs.tick] if obs.tick < len(self.actions) else None


def motion(env: X2Env, ticks: int) -> Floats:
    """A smooth reach of every arm joint from home and back (no contact-free shortcut: the arms really move)."""
    home = env.backend.home_action().astype(np.float64)
    phase = np.sin(np.linspace(0.0, np.pi, ticks))[:, None]
    swing = np.zeros_like(home)
    for arm in env.backend.action_layout.arms:
        swing[arm.joints] = 0.3
    return (home + phase * swing).astype(np.float32)


def time_env(env: gym.Env, actions: Floats) -> float:
    t0 = time.perf_counter()
    env.reset(seed=SLOT)
    for action in actions:
        env.step(action)
    return (time.perf_counter() - t0) / len(actions)


def time_loop(rollout: Rollout, world_seed: int, actions: Floats) -> float:
    t0 = time.perf_counter()
    result = rollout.run(Replay(actions), world_seed, MemoryRecorder(), RolloutOptions(max_ticks=len(actions)))
    elapsed = time.perf_counter() - t0
    assert result.ticks == len(actions), result.end_reason
    return elapsed / len(actions)


def time_bare(env: X2Env, ticks: int) -> float:
    backend = env.backend
    backend.reset(env.plan.seed_of(SLOT))
    m, d, substeps = backend.model, backend.data, env.spec_env.substeps
    t0 = time.perf_counter()
    for _ in range(ticks):
        mujoco.mj_step(m, d, nstep=substeps)
    return (time.perf_counter() - t0) / ticks


def time_vector(steps: int, n: int, rounds: int) -> tuple[float, float]:
    """Env-steps per second (medians of interleaved rounds): n envs one after another here, and one AsyncVectorEnv
    of n."""
    kw = {"obs": OBS, "max_ticks": rounds * steps + 2}  # (no episode ends inside the steps timed)
    envs = [gym.make(f"x2/{TASK}-v0", **kw) for _ in range(n)]
    vector = gym.make_vec(f"x2/{TASK}-v0", num_envs=n, vectorization_mode="async", **kw)
    sequential, asynchronous = [], []
    try:
        for i, env in enumerate(envs):
            env.reset(seed=i)
        vector.reset(seed=0)
        action = np.asarray(envs[0].unwrapped.backend.home_action(), np.float32)
        actions = np.repeat(action[None], n, axis=0)
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(steps):
                for env in envs:
                    env.step(action)
            sequential.append(n * steps / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            for _ in range(steps):
                vector.step(actions)
            asynchronous.append(n * steps / (time.perf_counter() - t0))
    finally:
        for env in envs:
            env.close()
        vector.close()
    return statistics.median(sequential), statistics.median(asynchronous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--vector-steps", type=int, default=50)
    args = parser.parse_args()
    env = gym.make(f"x2/{TASK}-v0", obs=OBS, max_ticks=args.ticks + 2)  # (no truncation inside the ticks timed)
    bare_env = X2Env(TASK, obs=OBS)
    x2env: X2Env = env.unwrapped  # type: ignore[assignment]  # (gymnasium types unwrapped as Env)
    actions = motion(x2env, args.ticks)
    # x2's loop on its own world of the same task, split and slot: the env's world, built the same way
    rollout = Rollout(bare_env.backend)
    world_seed = x2env.plan.seed_of(SLOT)
    rows: dict[str, list[float]] = {"env.step (no images)": [], "x2 loop (Rollout.run, as x2 eval)": [],
                                    "bare mujoco.mj_step (substeps)": []}
    for _ in range(args.rounds):
        rows["env.step (no images)"].append(time_env(env, actions))
        rows["x2 loop (Rollout.run, as x2 eval)"].append(time_loop(rollout, world_seed, actions))
        rows["bare mujoco.mj_step (substeps)"].append(time_bare(bare_env, args.ticks))
    loop = statistics.median(rows["x2 loop (Rollout.run, as x2 eval)"])
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}, "
          f"mujoco {mujoco.__version__}; {args.rounds} rounds x {args.ticks} ticks of {TASK}, medians")
    print(f"{'what':<40}{'per tick':>12}{'/ x2 loop':>12}")
    for name, times in rows.items():
        median = statistics.median(times)
        print(f"{name:<40}{median * 1e6:>10.1f}us{median / loop:>12.3f}")
    env.close()
    bare_env.close()
    sequential, asynchronous = time_vector(args.vector_steps, 8, args.rounds)
    print(f"8 envs x {args.vector_steps} steps x {args.rounds} rounds: sequential {sequential:.0f} steps/s, "
          f"AsyncVectorEnv {asynchronous:.0f} steps/s ({asynchronous / sequential:.2f}x) on {os.cpu_count()} cpus")


if __name__ == "__main__":
    main()
