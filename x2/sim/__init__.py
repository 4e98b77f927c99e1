"""Simulators behind one protocol. MuJoCo is the embedded default; others plug in through the entry point group
`x2.backends` (x2/sim/discovery.py, docs/backends.md)."""

from collections.abc import Mapping

from x2 import format as fmt
from x2.envspec.env import EnvSpec
from x2.sim.backend import Backend, CameraInfo, Contact, Jaw, ResetInfo, RobotState, SimulationUnstable
from x2.sim.camera import ImageSize, StateRenderer, WorldCameras, parse_cameras
from x2.sim.discovery import BackendFactory, backend_factory, installed_backends
from x2.sim.layout import LayoutError, Placement, solve_layout

__all__ = ["Backend", "BackendFactory", "CameraInfo", "Contact", "ImageSize", "Jaw", "LayoutError", "Placement",
           "ResetInfo", "RobotState", "SimulationUnstable", "StateRenderer", "WorldCameras", "backend_factory",
           "installed_backends", "make_backend", "parse_cameras", "recorded_backend", "simulator_versions",
           "solve_layout"]


def make_backend(env: EnvSpec, backend: str | None = None) -> Backend:
    """A simulator for collecting in `env`: each reset draws a scene from its seed. `backend` names an
    installed one (None: $X2_BACKEND, else mujoco)."""
    return backend_factory(backend).make(env)


def recorded_backend(env: EnvSpec, model_xml: str, assets: Mapping[str, str],
                     layout: Mapping[str, Placement], source: str = fmt.MODEL_XML_ATTR,
                     roles: Mapping[str, str] | None = None, backend: str | None = None,
                     textures: Mapping[str, bytes] | None = None) -> Backend:
    """The world of a recorded episode, compiled from its stored model XML and the images it carries (`textures`;
    no spec file is read) once it is known to be self-contained (x2.sim.mujoco.recorded_xml); `source` names the
    file in errors. `backend` as for `make_backend`."""
    factory = backend_factory(backend)
    if textures:  # (only then: a backend written before worlds carried images still opens every other world)
        return factory.recorded(env, model_xml, assets, layout, source, roles, textures=textures)
    return factory.recorded(env, model_xml, assets, layout, source, roles)


def simulator_versions() -> dict[str, str]:
    """The simulator library every backend runs on, by name, with its version (each episode's `versions` records
    it): MuJoCo, whose model/data view every backend keeps and whose renderer draws x2's pictures
    (docs/backends.md). A backend other than MuJoCo's is named beside it by its entry point."""
    import mujoco  # (here: importing x2.sim loads no simulator until one is used)

    return {"mujoco": mujoco.__version__}
