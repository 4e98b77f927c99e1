"""x2's tasks as Gymnasium environments (docs/gymnasium.md): importing this package registers `x2/TASK-v0` for
every task `x2 tasks ls` lists (the built-in ones and those under ./specs/tasks).

Gymnasium 1.x loads no plugins through entry points (its `gymnasium.envs` group was read up to 0.29 only), so a
program that has not imported x2 names the module in the id, and Gymnasium imports it first:
`gymnasium.make("x2.envs:x2/pick_place-v0")`, which also works in the workers of an AsyncVectorEnv.
"""

from __future__ import annotations

import gymnasium as gym

from x2.envspec import catalog

NAMESPACE = "x2"
ENTRY_POINT = "x2.envs.env:X2Env"


def env_id(task: str) -> str:
    return f"{NAMESPACE}/{task}-v0"


def register_tasks() -> list[str]:
    """Register every task (again: a task added under ./specs/tasks since), and return their ids."""
    ids = []
    for task in catalog.names("tasks"):
        ids.append(env_id(task))
        if ids[-1] not in gym.registry:
            # no max_episode_steps: the env truncates at the task's own horizon (TimeLimit would add a wrapper)
            gym.register(ids[-1], entry_point=ENTRY_POINT, kwargs={"task": task})
    return ids


ENV_IDS = tuple(register_tasks())

__all__ = ["ENTRY_POINT", "ENV_IDS", "NAMESPACE", "env_id", "register_tasks"]
