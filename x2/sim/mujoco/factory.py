"""x2's MuJoCo backend as the entry point `mujoco` of the group `x2.backends` (x2/sim/discovery.py): this module is
the `BackendFactory`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from x2.envspec.env import EnvSpec
from x2.sim.backend import Backend
from x2.sim.discovery import BackendFactory
from x2.sim.layout import Placement
from x2.sim.mujoco.backend import MujocoBackend


def make(env: EnvSpec) -> Backend:
    return MujocoBackend(env)


def recorded(env: EnvSpec, model_xml: str, assets: Mapping[str, str], layout: Mapping[str, Placement],
             source: str, roles: Mapping[str, str] | None, textures: Mapping[str, bytes] | None = None) -> Backend:
    return MujocoBackend.recorded(env, model_xml, assets, layout, source, roles, textures)


if TYPE_CHECKING:  # mypy checks this module against the protocol an entry point must meet
    import x2.sim.mujoco.factory as _this

    _conforms: BackendFactory = _this
