"""The loop every data source runs: teacher -> record -> step -> label."""

from typing import TYPE_CHECKING

from x2.rollout.clock import Clock, FreeClock, RealTimeClock
from x2.rollout.loop import EpisodeResult, Recorder, Rollout, RolloutOptions
from x2.rollout.monitor import TaskMonitor
from x2.rollout.teacher import JointWaypointTeacher, Observation, Teacher, Waypoint, reach_and_return

if TYPE_CHECKING:
    from x2.rollout.episodes import commit_episode, dataset_manifest, open_dataset, record_episode

# The dataset side of a rollout (x2.rollout.episodes: the store, HDF5) is imported on first use: a synthesis
# worker runs the loop into memory and never opens a dataset, and its start-up is on every run's clock.
_EPISODES = ("commit_episode", "dataset_manifest", "open_dataset", "record_episode")


def __getattr__(name: str) -> object:
    if name in _EPISODES:
        from x2.rollout import episodes

        return getattr(episodes, name)
    raise AttributeError(f"module 'x2.rollout' has no attribute {name!r}")


__all__ = [
    "Clock", "EpisodeResult", "FreeClock", "JointWaypointTeacher", "Observation", "RealTimeClock", "Recorder",
    "Rollout", "RolloutOptions", "TaskMonitor", "Teacher", "Waypoint", "dataset_manifest", "open_dataset",
    "commit_episode", "reach_and_return", "record_episode",
]
