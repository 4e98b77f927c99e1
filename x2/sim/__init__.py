"""Simulators behind one protocol. MuJoCo is the embedded default."""

from collections.abc import Mapping

from x2 import format as fmt
from x2.sim.backend import Backend, CameraInfo, Contact, Jaw, ResetInfo, RobotState, SimulationUnstable
from x2.sim.layout import LayoutError, Placement, solve_layout
from x2.spec.env import EnvSpec

__all__ = ["Backend", "CameraInfo", "Contact", "Jaw", "LayoutError", "Placement", "ResetInfo", "RobotState",
           "SimulationUnstable", "make_backend", "recorded_backend", "solve_layout"]


def make_backend(env: EnvSpec) -> Backend:
    """The default simulator (MuJoCo) for collecting in `env`: each reset draws a scene from its seed."""
    from x2.sim.mujoco.backend import MujocoBackend

    return MujocoBackend(env)


def recorded_backend(env: EnvSpec, model_xml: str, assets: Mapping[str, str],
                     layout: Mapping[str, Placement], source: str = fmt.MODEL_XML_ATTR,
                     roles: Mapping[str, str] | None = None) -> Backend:
    """The world of a recorded episode, compiled from its stored model XML (no spec file is read) once
    it is known to be self-contained (x2.sim.mujoco.recorded_xml); `source` names the file in errors."""
    from x2.sim.mujoco.backend import MujocoBackend

    return MujocoBackend.recorded(env, model_xml, assets, layout, source, roles)
