"""`lerobot-eval --env.type=x2`: LeRobot's own config parser and env factory (unchanged) build x2's Gymnasium
environments through the `lerobot_env_x2` plugin (plugins/lerobot_env_x2), and LeRobot's own evaluator scores a
policy on the worlds `x2 eval` scores it on, episode for episode.

The policy is a tiny freshly initialised ACT saved the way lerobot-train saves one (config, weights, processors
with their statistics): no training, since what is compared is the two evaluators, not the policy. Its statistics
centre each action on the middle of the joint's range, so the untrained network's answers are joint targets the
robot can take.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers.x2_cli import HEADLESS_ENV, run_x2

import x2.envs  # noqa: F401 - registers x2/TASK-v0
from x2 import format as fmt
from x2.datasets import Dataset
from x2.envs.env import EnvError

# ~25 s of CPU (LeRobot's and torch's imports in three processes most of it), ~90 s on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(400)
TASK, TICKS, EPISODES = "pick_place", 12, 2


def x2_config(**kwargs: object):  # -> lerobot_env_x2.X2EnvConfig (LeRobot is imported inside the tests only)
    from lerobot.envs.factory import make_env_config
    from lerobot.utils.import_utils import register_third_party_plugins

    register_third_party_plugins()  # what lerobot-eval does before it parses its arguments
    return make_env_config("x2", **kwargs)


@pytest.fixture(scope="module")
def tiny_act(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pretrained_model folder of an untrained ACT with x2's pick_place features (state and object poses)."""
    import torch
    from lerobot.configs.types import NormalizationMode
    from lerobot.policies import make_policy, make_pre_post_processors
    from lerobot.policies.act.configuration_act import ACTConfig

    torch.manual_seed(0)
    cfg = x2_config(task=TASK)
    modes = {k: NormalizationMode.MEAN_STD for k in ("VISUAL", "STATE", "ENV", "ACTION")}
    config = ACTConfig(device="cpu", push_to_hub=False, chunk_size=4, n_action_steps=4, dim_model=32,
                       dim_feedforward=64, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
                       n_vae_encoder_layers=1, normalization_mapping=modes)
    policy = make_policy(config, env_cfg=cfg)
    env = gym.make(f"x2/{TASK}-v0")
    low, high = env.action_space.low, env.action_space.high  # type: ignore[attr-defined]
    env.close()
    state, env_state = cfg.features["agent_pos"].shape, cfg.features["environment_state"].shape
    stats = {"observation.state": {"mean": np.zeros(state, np.float32), "std": np.ones(state, np.float32)},
             "observation.environment_state": {"mean": np.zeros(env_state, np.float32),
                                               "std": np.ones(env_state, np.float32)},
             "action": {"mean": ((low + high) / 2).astype(np.float32), "std": ((high - low) / 20).astype(np.float32)}}
    preprocess, postprocess = make_pre_post_processors(config, dataset_stats=stats)
    folder = tmp_path_factory.mktemp("act") / "pretrained_model"
    policy.save_pretrained(folder)
    preprocess.save_pretrained(folder)
    postprocess.save_pretrained(folder)
    return folder


def test_lerobots_factory_builds_the_splits_as_suites_on_x2s_slots() -> None:
    from lerobot.envs.factory import make_env
    from lerobot.envs.utils import env_to_policy_features

    cfg = x2_config(task=TASK, max_ticks=TICKS)
    assert env_to_policy_features(cfg) == {
        "action": cfg.features["action"], "observation.state": cfg.features["agent_pos"],
        "observation.environment_state": cfg.features["environment_state"]}
    assert cfg.features["action"].shape == (14,) and cfg.fps == 30
    suites = make_env(cfg, n_envs=2, use_async_envs=False)
    assert sorted(suites) == ["eval", "train"] and all(list(tasks) == [0] for tasks in suites.values())
    try:
        for split, tasks in suites.items():
            vec = tasks[0]
            obs, info = vec.reset(seed=[3, 4])  # (LeRobot's rollout: episode i of a suite gets --seed + i)
            assert list(info["slot"]) == [3, 4]
            assert vec.call("_max_episode_steps") == (TICKS - 1, TICKS - 1)  # the rollout's loop length
            single = gym.make(f"x2/{TASK}-v0", split=split, max_ticks=TICKS)
            for j, slot in enumerate((3, 4)):
                alone, alone_info = single.reset(seed=slot)
                assert alone_info["world_seed"] == info["world_seed"][j]
                for key in ("agent_pos", "environment_state"):
                    assert alone[key].tobytes() == obs[key][j].tobytes(), f"{split} slot {slot} {key}"
            single.close()
        train_pose = suites["train"][0].reset(seed=[3, 4])[0]["environment_state"]
        eval_pose = suites["eval"][0].reset(seed=[3, 4])[0]["environment_state"]
        assert not np.array_equal(train_pose, eval_pose)  # the held-out split: other worlds
    finally:
        for tasks in suites.values():
            tasks[0].close()


def test_cameras_become_image_features_and_a_wrong_argument_is_one_line() -> None:
    from lerobot.envs.utils import env_to_policy_features

    cfg = x2_config(task=TASK, obs="head,agent_pos", observation_height=48, observation_width=64, splits="eval")
    assert env_to_policy_features(cfg)["observation.images.head"].shape == (3, 48, 64)
    assert "observation.environment_state" not in env_to_policy_features(cfg)
    widths = [env_to_policy_features(x2_config(task=TASK, obs="agent_pos", ee_state=ee))["observation.state"].shape
              for ee in (False, True)]
    assert widths == [(16,), (16 + 2 * 7,)]  # --env.ee_state: both arms' tool poses after the joints
    both = x2_config(task=TASK, obs="agent_pos", ee_state=True, velocity_state=True)
    assert env_to_policy_features(both)["observation.state"].shape == (2 * 16 + 2 * 7,)  # --env.velocity_state too
    with pytest.raises(EnvError, match=r"^x2/pick_place-v0: obs: found 'nose_cam'; allowed: agent_pos, "):
        x2_config(task=TASK, obs="nose_cam")
    with pytest.raises(EnvError, match=r"^--env.splits: found 'test'; allowed: train, eval"):
        x2_config(task=TASK, splits="train,test")


def lerobot_eval(policy: Path, out: Path, *args: str) -> dict[str, dict[str, list[object]]]:
    """LeRobot's own CLI in a subprocess, one env at a time (as x2 eval's service: a batch of one); the metrics
    of its eval_info.json by suite."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lerobot-eval"), f"--policy.path={policy}", "--policy.device=cpu",
         "--env.type=x2", f"--env.task={TASK}", f"--env.max_ticks={TICKS}", "--env.observation_height=48",
         "--env.observation_width=64", "--eval.batch_size=1", f"--output_dir={out}", *args],
        cwd=out.parent, env={**HEADLESS_ENV, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads((out / "eval_info.json").read_text())
    return {t["task_group"]: t["metrics"] for t in info["per_task"]}


def test_lerobot_eval_scores_what_x2_eval_scores_on_the_same_seeds(tiny_act: Path, tmp_path: Path) -> None:
    run = run_x2(["eval", "--task", TASK, "--policy", f"lerobot:{tiny_act}", "-n", str(EPISODES + 1), "--seed",
                  "1", "--max-ticks", str(TICKS), "--workers", "1", "--dataset", str(tmp_path / "x2-eval")],
                 cwd=tmp_path, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((tmp_path / "x2-eval" / "eval_report.json").read_text())
    # episode i of a LeRobot suite is reset with --seed + i: --seed=1 runs x2 eval's slots 1 and 2
    lerobot = lerobot_eval(tiny_act, tmp_path / "lerobot-eval", f"--eval.n_episodes={EPISODES}", "--seed=1")
    assert sorted(lerobot) == ["eval", "train"]
    for split in ("train", "eval"):
        rows = sorted((r for r in report["episodes"] if r["split"] == split), key=lambda r: r["slot"])
        assert [r["slot"] for r in rows] == list(range(EPISODES + 1))
        assert lerobot[split]["successes"] == [r["success"] for r in rows[1:]]
        assert lerobot[split]["sum_rewards"] == pytest.approx([r["progress"] for r in rows[1:]])

    # Seed by seed the same world and the same answers, to the bit: LeRobot's recording of its episode with seed 2
    # (each frame: the observation and the action answered to it) against x2 eval's episode of slot 2. (A
    # recording run writes one LeRobot dataset per env and rollout: one episode.)
    out = tmp_path / "lerobot-eval-recorded"
    lerobot_eval(tiny_act, out, "--eval.n_episodes=1", "--eval.recording=true", "--seed=2")
    for split in ("train", "eval"):
        ds = Dataset.open(tmp_path / "x2-eval" / split)
        [index] = [record.index for record in ds.episodes() if record.slot == 2]
        with ds.load(index) as ep:
            qpos, action = np.asarray(ep[fmt.QPOS]), np.asarray(ep[fmt.ACTION])
        frames = _recorded(out / "recordings" / f"{split}_0")
        assert len(frames["agent_pos"]) == TICKS - 1 == len(qpos) - 1  # (x2's last frame: recorded, not applied)
        assert frames["agent_pos"].tobytes() == qpos[:-1].tobytes(), split
        assert frames["action"].tobytes() == action[:-1].tobytes(), split


def _recorded(root: Path) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.concat_tables([pq.read_table(p) for p in sorted((root / "data").rglob("*.parquet"))])
    return {k: np.asarray(table.column(k).to_pylist(), np.float32) for k in ("agent_pos", "action")}
