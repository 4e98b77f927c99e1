"""x2's Gymnasium environments in Gymnasium's vector envs: SyncVectorEnv and AsyncVectorEnv give the worlds of their
slots and the same steps, and no worker outlives a SIGKILLed parent."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from helpers.processes import Proc, descendants, kill_all, wait_gone

import x2.envs  # noqa: F401 - registers x2/TASK-v0

pytestmark = pytest.mark.timeout(300)
ID, N = "x2/pick_place-v0", 2
KW = {"obs": ["agent_pos", "environment_state"], "max_ticks": 4, "slot_stride": N}


def rollout(envs: gym.vector.VectorEnv, steps: int) -> list[np.ndarray]:
    obs, _ = envs.reset(seed=3)  # env i: slot 3 + i
    seen = [obs["environment_state"].copy()]
    action = np.zeros(envs.action_space.shape, np.float32)  # (every joint at 0, both grippers closed)
    for _ in range(steps):
        obs, *_ = envs.step(action)
        seen.append(obs["agent_pos"].copy())
    return seen


def test_sync_and_async_vector_envs_step_the_same_worlds() -> None:
    single = gym.make(ID, **KW)
    try:
        firsts = [single.reset(seed=3 + i)[0]["environment_state"] for i in range(N)]
        later = single.reset(seed=3 + N)[0]["environment_state"]  # (the slot an autoreset of env 0 takes)
    finally:
        single.close()
    sync = gym.make_vec(ID, num_envs=N, vectorization_mode="sync", **KW)
    try:
        a = rollout(sync, 4)  # (max_ticks 4: the 3rd step ends the episodes, the 4th autoresets them)
        _, _, _, _, info = sync.step(np.zeros(sync.action_space.shape, np.float32))
        assert list(info["slot"]) == [3 + N, 4 + N]
    finally:
        sync.close()
    asynchronous = gym.make_vec(ID, num_envs=N, vectorization_mode="async", **KW)
    try:
        b = rollout(asynchronous, 4)
        assert asynchronous.get_attr("task") == ("pick_place",) * N  # (what LeRobot's evaluator asks every env)
        assert all("block" in text for text in asynchronous.get_attr("task_description"))
    finally:
        asynchronous.close()
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert all(np.array_equal(a[0][i], firsts[i]) for i in range(N))
    assert not np.array_equal(firsts[0], firsts[1]) and not np.array_equal(later, firsts[0])


PARENT = textwrap.dedent("""
    import gymnasium as gym, numpy as np
    import x2.envs
    envs = gym.make_vec("x2/pick_place-v0", num_envs=2, vectorization_mode="async", obs=["agent_pos"])
    envs.reset(seed=0)
    print("stepping", flush=True)
    while True:  # (the workers are busy stepping when the parent is killed)
        envs.step(np.zeros(envs.action_space.shape, np.float32))
""")


def test_async_workers_die_with_their_sigkilled_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    seen: set[Proc] = set()
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line == "stepping\n", f"the parent ended before it stepped: {parent.stderr.read()[-2000:]}"
        seen = descendants(parent.pid)
        assert len(seen) >= N
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        left = wait_gone(seen, 10.0)
        assert not left, f"outlived their SIGKILLed parent: {[p.cmdline() for p in left]}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        kill_all(seen)
