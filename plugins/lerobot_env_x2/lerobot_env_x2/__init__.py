"""x2's tasks in LeRobot's own evaluator: `lerobot-eval --env.type=x2 --env.task=pick_place --seed=0 ...`.

LeRobot 0.6 imports this distribution before it parses its arguments (lerobot/utils/import_utils.py,
`register_third_party_plugins`: every installed distribution named `lerobot_env_*`); importing it registers the
EnvConfig "x2" (lerobot_env_x2/config.py), whose suites are x2's splits, `train` and `eval`, over the Gymnasium
environments of x2.envs (docs/gymnasium.md).
"""

from lerobot_env_x2.config import X2EnvConfig

__all__ = ["X2EnvConfig"]
