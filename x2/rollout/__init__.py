"""The loop every data source runs: teacher -> record -> step -> label."""

from x2.rollout.clock import Clock, FreeClock, RealTimeClock
from x2.rollout.episodes import commit_episode, dataset_manifest, open_dataset, record_episode
from x2.rollout.loop import EpisodeResult, Recorder, Rollout, RolloutOptions
from x2.rollout.monitor import TaskMonitor
from x2.rollout.teacher import JointWaypointTeacher, Observation, Teacher, Waypoint, reach_and_return

__all__ = [
    "Clock", "EpisodeResult", "FreeClock", "JointWaypointTeacher", "Observation", "RealTimeClock", "Recorder",
    "Rollout", "RolloutOptions", "TaskMonitor", "Teacher", "Waypoint", "dataset_manifest", "open_dataset",
    "commit_episode", "reach_and_return", "record_episode",
]
