"""Simulators behind one protocol. MuJoCo is the embedded default."""

from x2.sim.backend import Backend, CameraInfo, Contact, ResetInfo, RobotState
from x2.sim.layout import LayoutError, Placement, solve_layout

__all__ = ["Backend", "CameraInfo", "Contact", "LayoutError", "Placement", "ResetInfo", "RobotState", "solve_layout"]
