"""Errors of the motion layer. Skills catch `MotionError` to fail an attempt cleanly."""

from __future__ import annotations

from x2.errors import X2Error


class MotionError(X2Error):
    """The motion layer could not produce a motion for the request."""


class IKError(MotionError):
    """No joint configuration reaches the target pose within tolerance and joint limits."""


class PlanningError(MotionError):
    """No collision-free path (or timed trajectory) was found within the budget."""


class PathBreak(PlanningError):
    """A tcp path (motion/paths.py) breaks off before its end. `cause`: "ik" (a pose the iteration from the
    previous waypoint does not reach), "jump" (an IK branch switch) or "collision"; `reached`: the path
    parameter of the last waypoint kept."""

    def __init__(self, message: str, cause: str, reached: float):
        super().__init__(message)
        self.cause, self.reached = cause, reached
