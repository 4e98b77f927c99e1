"""Teleoperation: device samples -> actions (mirror, EE velocity, VR clutch), a safety filter, the
session that runs episodes through the one loop, and the operator panel."""

from x2.teleop.live import panel
from x2.teleop.mapping import EEVelocity, JointMirror, Mapper, VRClutch, mapper_for
from x2.teleop.safety import SafetyFilter
from x2.teleop.session import EpisodeSummary, TeleopConfig, TeleopSession
from x2.teleop.status import TeleopStatus
from x2.teleop.teacher import DeviceTeacher

__all__ = [
    "DeviceTeacher", "EEVelocity", "EpisodeSummary", "JointMirror", "Mapper", "SafetyFilter", "TeleopConfig",
    "TeleopSession", "TeleopStatus", "VRClutch", "mapper_for", "panel",
]
