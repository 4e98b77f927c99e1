"""Specs: robot, scene and task YAML fragments (include + override), validated and compiled."""

from x2.spec.catalog import names
from x2.spec.env import EnvSpec
from x2.spec.robot import RobotInfo, load_robot
from x2.spec.scene import SceneInfo, load_asset, load_scene
from x2.spec.task import load_env

__all__ = ["EnvSpec", "RobotInfo", "SceneInfo", "load_asset", "load_env", "load_robot", "load_scene", "names"]
