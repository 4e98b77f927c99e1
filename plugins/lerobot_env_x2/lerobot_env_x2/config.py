"""The EnvConfig "x2": what `lerobot-eval --env.type=x2` builds, LeRobot 0.6's way (lerobot/envs/configs.py).

- Suites are x2's splits: `train` (the task's training configuration, master seed `master_seed`) and `eval` (the
  held-out scene variant, EVAL_SEED_BASE + `master_seed`), each one task (task id 0), each a VectorEnv of
  `x2/TASK-v0` (x2/envs/env.py). LeRobot runs every suite and writes per-suite and overall figures.
- Seeds: LeRobot's rollout resets env j of batch b with seed `--seed + b * batch_size + j`
  (lerobot/scripts/lerobot_eval.py, `eval_policy`), i.e. episode i of a suite gets `--seed + i`, and x2's
  `reset(seed=k)` is slot k of the split's master seed. So `--seed=0` runs the worlds `x2 eval --seed
  MASTER_SEED` runs, episode for episode (LeRobot's default `--seed` 1000 runs slots 1000 on). `slot_stride` is the
  batch size, so an autoreset never meets a world another env of the batch meets.
- Features (LeRobot's policy features, from the env's own spaces): `agent_pos` -> observation.state,
  `environment_state` -> observation.environment_state, `pixels/<camera>` -> observation.images.<camera>, and the
  robot's joint-target action. Only the streams named in `obs` are observed: a policy's input features decide them.
- The rollout reads `_max_episode_steps` from each env for its loop's length (`env.call`): `EpisodeSteps` gives the
  steps after which the env truncates (horizon - 1: x2 eval scores frames 0 .. horizon - 1). Each env is wrapped in
  LeRobot's own FreezeAfterEpisodeEnd, so a finished env of a batch does no work while the others run on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import gymnasium as gym
from gymnasium.vector import AutoresetMode
from lerobot.configs import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig
from lerobot.envs.utils import FreezeAfterEpisodeEnd
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE

from x2.envs import env_id
from x2.envs.env import AGENT_POS, ENV_STATE, PIXELS, EnvError, X2Env
from x2.eval.seeds import SPLITS

TYPE = "x2"


class EpisodeSteps(gym.Wrapper[dict[str, Any], Any, dict[str, Any], Any]):
    """An x2 env with `_max_episode_steps`, what LeRobot's rollout reads for its loop's length: the steps after
    which the env truncates (its horizon - 1)."""

    def __init__(self, env: gym.Env[dict[str, Any], Any]) -> None:
        super().__init__(env)
        self._max_episode_steps = cast(X2Env, env.unwrapped).horizon - 1


def make_x2_env(gym_id: str, kwargs: dict[str, Any]) -> gym.Env[dict[str, Any], Any]:
    """One env of a suite (module level: an AsyncVectorEnv's workers unpickle it)."""
    env = gym.make(gym_id, disable_env_checker=True, **kwargs)
    return cast(gym.Env[dict[str, Any], Any], FreezeAfterEpisodeEnd(EpisodeSteps(env)))


def _shape(space: gym.Space[Any]) -> tuple[int, ...]:
    assert space.shape is not None  # (x2's observation and action entries are Boxes: always shaped)
    return tuple(space.shape)


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# (EnvConfig and its registry decorator come from LeRobot, which ships no type information.)
@EnvConfig.register_subclass(TYPE)
@dataclass
class X2EnvConfig(EnvConfig):  # type: ignore[misc]
    """`--env.type=x2`: `--env.task` (an x2 task, `x2 tasks ls`), `--env.robot` (default: the task's),
    `--env.splits` (the suites, comma-separated: train, eval), `--env.master_seed` (x2 eval's `--seed`),
    `--env.variant`, `--env.obs` (comma-separated: agent_pos, environment_state and camera names),
    `--env.observation_height` / `--env.observation_width` (every camera's picture), `--env.max_ticks` (x2 eval's
    `--max-ticks`; default: the task's horizon), `--env.ee_state` (agent_pos gains the tool centre point poses, for
    a policy trained on `x2 export lerobot --ee-state`), `--env.velocity_state` (agent_pos gains the joints'
    velocities after their positions, for one trained on `--velocity-state`)."""

    task: str | None = "pick_place"
    fps: int = 30  # (set from the task's world: its control rate)
    robot: str | None = None
    splits: str = "train,eval"
    master_seed: int = 1
    variant: str | None = None
    obs: str = f"{AGENT_POS},{ENV_STATE}"
    observation_height: int = 480
    observation_width: int = 640
    max_ticks: int | None = None
    ee_state: bool = False
    velocity_state: bool = False
    render_mode: str = "rgb_array"
    features: dict[str, PolicyFeature] = field(default_factory=dict)
    features_map: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for split in self.split_names:
            if split not in SPLITS:
                raise EnvError(f"--env.splits: found {split!r}; allowed: {', '.join(SPLITS)} (comma-separated)")
        if not self.split_names:
            raise EnvError(f"--env.splits: found none; allowed: {', '.join(SPLITS)} (comma-separated)")
        # One env of the first suite says what the policy's features are (and refuses, in one line, an argument
        # the task cannot honour, before LeRobot loads a policy).
        probe = gym.make(self.gym_id, disable_env_checker=True, **self.split_kwargs(self.split_names[0]))
        try:
            spaces = cast(gym.spaces.Dict, probe.observation_space)
            action = cast(gym.spaces.Box, probe.action_space)
            self.fps = int(probe.metadata["render_fps"])
        finally:
            probe.close()
        features = {ACTION: PolicyFeature(type=FeatureType.ACTION, shape=_shape(action))}
        names = {ACTION: ACTION}
        if PIXELS in spaces.spaces:
            for camera, box in cast(gym.spaces.Dict, spaces[PIXELS]).spaces.items():
                features[f"{PIXELS}/{camera}"] = PolicyFeature(type=FeatureType.VISUAL, shape=_shape(box))
                names[f"{PIXELS}/{camera}"] = f"{OBS_IMAGES}.{camera}"
        for key, kind, policy_key in ((AGENT_POS, FeatureType.STATE, OBS_STATE),
                                      (ENV_STATE, FeatureType.ENV, OBS_ENV_STATE)):
            if key in spaces.spaces:
                features[key] = PolicyFeature(type=kind, shape=_shape(spaces[key]))
                names[key] = policy_key
        self.features, self.features_map = features, names

    @property
    def split_names(self) -> list[str]:
        return _names(self.splits)

    @property
    def package_name(self) -> str:
        return "x2.envs"

    @property
    def gym_id(self) -> str:
        # "x2.envs:" has Gymnasium import x2.envs (which registers the ids) first, in any process
        return f"{self.package_name}:{env_id(self.task or '')}"

    @property
    def gym_kwargs(self) -> dict[str, Any]:
        return {"robot": self.robot, "obs": _names(self.obs), "render_mode": self.render_mode,
                "master_seed": self.master_seed, "variant": self.variant,
                "image_size": (self.observation_height, self.observation_width), "max_ticks": self.max_ticks,
                "ee_state": self.ee_state, "velocity_state": self.velocity_state}

    def split_kwargs(self, split: str, slot_stride: int = 1) -> dict[str, Any]:
        return {**self.gym_kwargs, "split": split, "slot_stride": slot_stride}

    def create_envs(self, n_envs: int, use_async_envs: bool = False) -> dict[str, dict[int, gym.vector.VectorEnv]]:
        """{split: {0: VectorEnv of n_envs}}, as LeRobot's own default builds one (SAME_STEP autoreset; an async
        one through forkserver)."""
        suites: dict[str, dict[int, gym.vector.VectorEnv]] = {}
        for split in self.split_names:
            fns = [partial(make_x2_env, self.gym_id, self.split_kwargs(split, n_envs)) for _ in range(n_envs)]
            vec: gym.vector.VectorEnv
            if use_async_envs and n_envs > 1:
                vec = gym.vector.AsyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP, context="forkserver")
            else:
                vec = gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
            suites[split] = {0: vec}
        return suites
