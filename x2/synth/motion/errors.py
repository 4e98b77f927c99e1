"""Errors of the motion layer. Skills catch `MotionError` to fail an attempt cleanly."""

from __future__ import annotations

from x2.errors import X2Error


class MotionError(X2Error):
    """The motion layer could not produce a motion for the request."""


class IKError(MotionError):
    """No joint configuration reaches the target pose within tolerance and joint limits."""


class PlanningError(MotionError):
    """No collision-free path (or timed trajectory) was found within the budget."""
