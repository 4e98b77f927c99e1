"""x2.envs against Gymnasium's own checker, for every registered task, and its answers to bad input."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import x2.envs
from x2 import format as fmt
from x2.envs.env import EnvError, X2Env

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("env_id", x2.envs.ENV_IDS)
def test_check_env_passes_for_every_registered_task(env_id: str) -> None:
    env = gym.make(env_id, max_ticks=8)  # (no images; the checker's few steps stay inside the horizon)
    try:
        with warnings.catch_warnings():
            # the checker's advice for RL (a normalised action Box, finite observation bounds) is not an error:
            # joint targets are in rad and object poses unbounded, as x2 records them
            warnings.filterwarnings("ignore", message=".*(symmetric and normalized|infinity).*")
            check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_every_task_of_x2_is_registered() -> None:
    from x2.envspec import catalog

    assert list(x2.envs.ENV_IDS) == [f"x2/{t}-v0" for t in catalog.names("tasks")]
    assert len(x2.envs.ENV_IDS) >= 19


def test_gym_make_finds_it_through_the_module_named_in_the_id() -> None:
    env = gym.make("x2.envs:x2/pick_place-v0", obs=["agent_pos"], max_ticks=3)
    try:
        obs, info = env.reset(seed=0)
        assert set(obs) == {"agent_pos"} and info["slot"] == 0
        steps = 0
        while True:
            steps += 1
            *_, terminated, truncated, info = env.step(env.action_space.sample())
            if terminated or truncated:
                break
        assert (steps, truncated, info["end_reason"]) == (2, True, "horizon")  # x2 eval scores frames 0 .. 2
    finally:
        env.close()


def test_images_come_as_lerobot_pixels_and_render_gives_a_frame() -> None:
    env = gym.make("x2/pick_place-v0", obs=["head", "agent_pos"], image_size=(48, 64), render_mode="rgb_array")
    try:
        obs, _ = env.reset(seed=1)
        assert obs["pixels"]["head"].shape == (48, 64, 3) and obs["pixels"]["head"].dtype == np.uint8
        assert env.observation_space.contains(obs)
        frame = env.render()
        assert frame is not None and frame.shape == (48, 64, 3) and np.array_equal(frame, obs["pixels"]["head"])
    finally:
        env.close()


def test_depth_comes_in_metres_beside_the_same_pictures() -> None:
    """`<camera>_depth` adds `depth`: MuJoCo's own depth render of the state within 1 mm, the picture unchanged."""
    import mujoco

    env = gym.make("x2/pick_place-v0", obs=["head", "head_depth", "right_wrist_depth"], image_size=(48, 64))
    try:
        obs, _ = env.reset(seed=1)
        assert set(obs) == {"pixels", "depth"} and set(obs["depth"]) == {"head", "right_wrist"}
        assert env.observation_space.contains(obs)
        backend = env.unwrapped.backend
        np.testing.assert_array_equal(obs["pixels"]["head"], backend.render("head", 64, 48))
        with mujoco.Renderer(backend.model, 48, 64) as r:
            r.enable_depth_rendering()
            for cam, depth in obs["depth"].items():
                r.update_scene(backend.data, camera=cam)
                assert depth.shape == (48, 64, 1) and np.abs(depth[..., 0] - r.render()).max() <= 1e-3
    finally:
        env.close()


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"obs": ["agent_pos", "nose_cam"]}, "obs: found 'nose_cam'; allowed: agent_pos, environment_state, a camera"),
    ({"obs": ["nose_cam_depth"]}, "obs: found 'nose_cam_depth'; allowed: agent_pos, environment_state, a camera"),
    ({"action": "torque"}, "action: found 'torque'; allowed: 'joint', 'ee_pose', 'ee_delta'"),
    ({"split": "test"}, "split: found 'test'; allowed: 'train', 'eval'"),
    ({"master_seed": -1}, "master_seed: found -1; allowed: 0 to"),
    ({"variant": "nowhere"}, "variant: found 'nowhere'; allowed: one of task pick_place's scene variants"),
    ({"obs": []}, "obs: found none; allowed: agent_pos, environment_state and camera names"),
    ({"max_ticks": 1}, "max_ticks: found 1; allowed: 2 or more"),
])
def test_bad_arguments_are_one_line_naming_the_key(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(EnvError) as error:
        gym.make("x2/pick_place-v0", **kwargs)
    assert says in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith("x2/pick_place-v0: ")


def test_an_unknown_task_is_gymnasiums_error_naming_it() -> None:
    with pytest.raises(gym.error.NameNotFound, match="nonesuch"):
        gym.make("x2/nonesuch-v0")


def test_an_action_of_the_wrong_width_or_units_is_one_line() -> None:
    env = X2Env("pick_place", max_ticks=5)
    try:
        env.reset(seed=0)
        home = env.backend.home_action().astype(np.float32)
        with pytest.raises(EnvError, match=r"action: found shape \(13,\); allowed: \(14,\), the robot's action "
                                           r"layout \(left_j1, "):
            env.step(home[:-1])
        units = r"action: found left_j1 = 171.9; allowed: within \[-2, 2\] \(the robot.s action units"
        with pytest.raises(EnvError, match=units):
            env.step(np.degrees(home + 3.0))  # degrees: far outside every joint's range
        _, _, terminated, truncated, _ = env.step(home)  # (the refused actions changed nothing)
        assert env.tick == 1 and not (terminated or truncated)
    finally:
        env.close()


def test_recorded_episodes_are_ordinary_x2_episodes_that_replay(tmp_path: Path) -> None:
    from x2.datasets import Dataset
    from x2.envs.recording import RecordEpisodes
    from x2.recorded.replay import replay_actions

    env = RecordEpisodes(gym.make("x2/pick_place-v0", max_ticks=6), tmp_path / "agent", agent="zeros")
    try:
        _, first = env.reset(seed=2)
        seen = []
        while True:
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            seen.append(obs["agent_pos"])
            if terminated or truncated:
                break
        env.reset(seed=5)
        env.step(env.action_space.sample())  # (left unfinished: committed when the env closes)
    finally:
        env.close()
    ds = Dataset.open(tmp_path / "agent")
    records = ds.episodes()
    assert [(r.slot, r.seed, r.source) for r in records] == [(2, first["world_seed"], "policy"),
                                                             (5, records[1].seed, "policy")]
    with ds.load(records[0].index) as ep:
        assert len(ep[fmt.ACTION]) == 6 and ep.attrs[fmt.END_REASON_ATTR] == "horizon" and not ep.success
        assert np.array_equal(ep[fmt.QPOS][1:], np.asarray(seen))
        assert json.loads(ep.attrs[fmt.POLICY_ATTR])["identity"] == "zeros"
        assert replay_actions(ep).first_deviation is None  # (x2 replay --check: bit for bit)
    with ds.load(records[1].index) as ep:
        assert len(ep[fmt.ACTION]) == 2 and ep.attrs[fmt.END_REASON_ATTR] == "teacher"
