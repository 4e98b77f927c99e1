"""The environment spec: robot, scene and task YAML fragments (include + override), validated and compiled
into one `EnvSpec`, and its record in an episode file."""

from x2.envspec.catalog import names
from x2.envspec.env import EnvSpec
from x2.envspec.robot import RobotInfo, load_robot
from x2.envspec.scene import SceneInfo, load_asset, load_scene
from x2.envspec.task import load_env, task_robot

__all__ = ["EnvSpec", "RobotInfo", "SceneInfo", "load_asset", "load_env", "load_robot", "load_scene", "names",
           "task_robot"]
