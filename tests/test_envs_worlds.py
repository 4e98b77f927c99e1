"""The Gymnasium environments meet the worlds x2 meets: `reset(seed=k)` is the state `x2 eval` starts its episode k
from, and stepping a synthesised episode's actions reaches its recorded states and its success."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers.policy_serving import serving

import x2.envs  # noqa: F401 - registers x2/TASK-v0
from x2 import format as fmt
from x2.datasets import Dataset
from x2.eval.runner import EvalRun
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.policy.services import ServeOptions, make_service

pytestmark = pytest.mark.timeout(300)
TASK, SLOTS = "pick_place", 20


@contextmanager
def serving_hold() -> Iterator[str]:
    with serving(make_service("hold", ServeOptions(task=TASK))) as url:
        yield url


@pytest.mark.parametrize("split", ["train", "eval"])
def test_reset_seed_k_is_the_state_x2_eval_starts_slot_k_from(tmp_path: Path, split: str) -> None:
    plan = plan_split(TASK, None, split, None, 1, SLOTS)
    with serving_hold() as url:  # (one-tick episodes: their first state is all this compares)
        EvalRun(EvalSetup(TASK, None, plan.variant, plan.master_seed, url, max_ticks=1), plan, tmp_path).run()
    ds = Dataset.open(tmp_path)
    recorded = {}
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            recorded[record.slot] = (record.seed, np.asarray(ep[fmt.STATES])[0])
    assert sorted(recorded) == list(range(SLOTS))
    env = gym.make(f"x2/{TASK}-v0", split=split, master_seed=1)
    try:
        for slot in range(SLOTS):
            _, info = env.reset(seed=slot)
            seed, state = recorded[slot]
            assert info["world_seed"] == seed
            assert env.unwrapped.backend.get_state().tobytes() == state.tobytes(), f"slot {slot}"
    finally:
        env.close()


def test_synthesised_actions_stepped_through_the_env_reach_the_recorded_states(synthesised_fruit: Path) -> None:
    ds = Dataset.open(synthesised_fruit)
    [record] = ds.episodes()
    with ds.load(record.index) as ep:
        states, actions, success = np.asarray(ep[fmt.STATES]), np.asarray(ep[fmt.ACTION]), ep.success
    assert record.master_seed is not None and record.slot is not None
    env = gym.make("x2/fruit_in_microwave-v0", master_seed=record.master_seed)
    try:
        _, info = env.reset(seed=record.slot)
        assert info["world_seed"] == record.seed
        backend = env.unwrapped.backend
        assert backend.get_state().tobytes() == states[0].tobytes()
        ret = 0.0
        for t, action in enumerate(actions[:-1]):  # (the last frame's action was recorded, never applied)
            _, reward, terminated, truncated, info = env.step(action)
            ret += reward
            assert backend.get_state().tobytes() == states[t + 1].tobytes(), f"frame {t + 1}"
            assert (terminated or truncated) == (t == len(actions) - 2), f"ended at frame {t + 1} of {len(actions)}"
        assert info["is_success"] == success and success
        assert terminated and info["end_reason"] == "success" and info["progress"] == 1.0
        assert ret == pytest.approx(1.0)  # the return is the progress reached
    finally:
        env.close()
