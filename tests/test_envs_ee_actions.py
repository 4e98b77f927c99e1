"""End-effector actions in the Gymnasium env (x2/sim/mujoco/ee_adapter.py): an expert's joint actions converted to
`ee_pose` and `ee_delta` (x2/recorded/ee_actions.py) and stepped through the adapter from the same slot succeed, the
joint targets put the tool centre point on the commanded pose, an unreachable pose is flagged and recorded (the step
goes on), and a malformed action is one line."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import x2.envs  # noqa: F401 - registers x2/TASK-v0
from x2 import format as fmt
from x2.datasets import Dataset
from x2.envs.env import EnvError, X2Env
from x2.envspec.ee_action import EE_DELTA, EE_POSE, EELayout
from x2.recorded.ee_actions import episode_ee_actions

pytestmark = pytest.mark.timeout(300)
TRACK_M = 2e-3  # the adapter's promise where a pose is reachable (its IK converges to 0.1 mm)


def test_the_experts_episode_as_end_effector_actions_succeeds_from_the_same_slot(synthesised_fruit: Path) -> None:
    ds = Dataset.open(synthesised_fruit)
    [record] = ds.episodes()
    with ds.load(record.index) as ep:
        converted = {kind: episode_ee_actions(ep, kind) for kind in (EE_POSE, EE_DELTA)}
        assert ep.success
    assert record.master_seed is not None and record.slot is not None
    for kind, actions in converted.items():
        env = gym.make("x2/fruit_in_microwave-v0", master_seed=record.master_seed, action=kind)
        try:
            env.reset(seed=record.slot)
            assert env.action_space.shape == (len(actions.names),)
            errors, info = [], {}
            for t, action in enumerate(actions.values[:-1]):
                _, _, terminated, truncated, info = env.step(action)
                ee = info["ee"]
                assert not ee["unreachable"].any(), f"{kind} frame {t}"
                assert np.allclose(ee["commanded"][:, :3], actions.pos[t], atol=1e-5)  # (float32 actions)
                errors.extend(np.linalg.norm(ee["commanded"][:, :3] - ee["reached"][:, :3], axis=1))
                if terminated or truncated:
                    break
            assert info["is_success"] and info["end_reason"] == "success", kind
            assert max(errors) <= TRACK_M, kind
        finally:
            env.close()


def ee_env(kind: str) -> tuple[X2Env, np.ndarray]:
    """A pick_place env in `kind`, reset, and the action that holds every arm where it is."""
    env = X2Env("pick_place", action=kind, max_ticks=6)
    env.reset(seed=0)
    assert env.adapter is not None
    pos, rot = env.adapter.measured()
    n = len(pos)
    layout = EELayout(kind, tuple(env.ee_names[i].removesuffix("_x") for i in range(0, 8 * n, 8)) if kind == EE_POSE
                      else tuple(env.ee_names[i].removesuffix("_dx") for i in range(0, 7 * n, 7)))
    return env, layout.encode(pos, rot, np.ones(n), np.zeros(0), pos, rot).astype(np.float32)


def test_an_unreachable_pose_is_flagged_and_recorded_and_the_step_goes_on(tmp_path: Path) -> None:
    from x2.envs.recording import RecordEpisodes
    from x2.recorded.replay import replay_actions

    env, hold = ee_env(EE_POSE)
    recorded = RecordEpisodes(env, tmp_path / "agent", agent="far")
    try:
        recorded.reset(seed=0)
        _, _, _, _, info = recorded.step(hold)
        joints = info["joint_action"].copy()
        far = hold.copy()
        far[8] += 1.5  # the right arm's tcp 1.5 m further out: beyond its reach
        _, _, terminated, truncated, info = recorded.step(far)
        assert info["ee"]["unreachable"].tolist() == [False, True] and not (terminated or truncated)
        assert np.array_equal(info["joint_action"], joints)  # (the arm holds its targets)
        recorded.step(hold)
    finally:
        recorded.close()
    ds = Dataset.open(tmp_path / "agent")
    [record] = ds.episodes()
    with ds.load(record.index) as ep:
        assert ep[fmt.EE_UNREACHABLE][:, 1].tolist() == [False, True, False, False]
        assert ep[fmt.EE_ACTION_VALUES].shape == (4, 16) and ep[fmt.ACTION].shape == (4, 14)
        assert ep.dataset_attrs(fmt.EE_ACTION_VALUES)[fmt.EE_KIND_ATTR] == EE_POSE
        assert np.abs(ep[fmt.EE_COMMANDED][1, 1, 0] - ep[fmt.EE_REACHED][1, 1, 0]) > 1.0
        assert np.array_equal(ep[fmt.ACTION][1], joints)  # /action: the joint targets applied
        assert replay_actions(ep).first_deviation is None  # (x2 replay --check: bit for bit)


def test_a_malformed_end_effector_action_is_one_line_and_changes_nothing() -> None:
    env, hold = ee_env(EE_DELTA)
    try:
        for bad, says in ((hold[:-1], "action: found shape (13,); allowed: (14,), the ee_delta layout (left_dx, "),
                          (np.r_[np.nan, hold[1:]], "action: found left_dx = nan; allowed: finite values"),
                          (np.r_[np.float32(250.0), hold[1:]], "found left_dx = 250; allowed: within +-1 m")):
            with pytest.raises(EnvError) as error:
                env.step(bad)
            assert says in str(error.value) and "\n" not in str(error.value)
            assert str(error.value).startswith("x2/pick_place-v0: ")
        _, _, _, _, info = env.step(hold)
        assert env.tick == 1 and not info["ee"]["unreachable"].any()
    finally:
        env.close()
    with pytest.raises(EnvError, match="action: found 'ee_twist'; allowed: 'joint', 'ee_pose', 'ee_delta'"):
        X2Env("pick_place", action="ee_twist")


def test_check_env_passes_in_the_delta_action_space() -> None:
    import warnings

    from gymnasium.utils.env_checker import check_env

    env = gym.make("x2/pick_place-v0", action=EE_DELTA, max_ticks=8)
    try:
        with warnings.catch_warnings():  # (its advice for RL, a normalised Box, is not an error)
            warnings.filterwarnings("ignore", message=".*(symmetric and normalized|infinity).*")
            check_env(env.unwrapped, skip_render_check=True)  # (it steps samples of the Box: all well-formed)
    finally:
        env.close()
