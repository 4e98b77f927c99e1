"""Rebuild the world an episode was recorded in from its file alone: no spec file is read.

`open_world(episode)` compiles the stored `model_xml` (the model exactly as stepped: layout and welded
poses baked in) and rebuilds the compiled task, scene and robot from the stored `world` record
(x2.envspec.record). Relabelling, action replay, the physics check and every later reader (render,
augmentation, export) start here, so a stranger holding only the file, or a later x2 whose specs changed,
gets the same world.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.envspec.env import EnvSpec, TaskSpec
from x2.envspec.record import env_from_record
from x2.envspec.roles import bind_task
from x2.sim import Backend, Placement, recorded_backend

# Stored states and actions a rebuilt world may be given: MuJoCo calls anything beyond this unstable
# (mjMAXVAL) and prints warnings, so a file holding such values (or NaN) is refused in one line instead.
SIM_BOUND = 1e10


@dataclass
class RecordedWorld:
    env: EnvSpec  # rebuilt from the file's world record
    backend: Backend  # compiled from the file's model_xml
    record: dict[str, Any]  # the world record as stored
    roles: dict[str, str] = field(default_factory=dict)  # the object each role was bound to (x2/envspec/roles.py)

    @property
    def task(self) -> TaskSpec | None:
        """The recorded task with the episode's roles bound: the task its monitor ran."""
        return None if self.env.task is None else bind_task(self.env.task, self.roles)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> RecordedWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _json(ep: Episode, name: str) -> Any:
    value = ep.json_attr(name)
    if value is None:
        raise DatasetError(f"{ep.path}: {name}: found missing or malformed JSON; allowed: an x2/2 episode "
                           "(recorded by this x2 or later)")
    return value


def recorded_env(ep: Episode) -> EnvSpec:
    """The compiled environment the episode's `world` record describes (robot, scene, task), typed and
    checked, without building a simulator."""
    return _world_record(ep)[1]


def _world_record(ep: Episode) -> tuple[dict[str, Any], EnvSpec]:
    ep.refuse_real("this command")
    record = _json(ep, fmt.WORLD_ATTR)
    return record, env_from_record(record, f"{ep.path}: {fmt.WORLD_ATTR}")


def open_world(ep: Episode) -> RecordedWorld:
    """The episode's world, compiled from the file. Raises DatasetError naming what is missing (a real recording:
    that it has no world)."""
    ep.refuse_real("this command")
    xml = ep.attrs.get(fmt.MODEL_XML_ATTR)
    if not isinstance(xml, str) or not xml.strip():
        raise DatasetError(f"{ep.path}: model_xml: found none; allowed: the compiled world as MJCF text")
    record, env = _world_record(ep)
    assets, layout = _json(ep, fmt.ASSETS_ATTR), _json(ep, fmt.LAYOUT_ATTR)
    try:
        placements = {str(k): Placement(*(float(x) for x in v)) for k, v in layout.items()}
    except (TypeError, ValueError, AttributeError):
        raise DatasetError(f"{ep.path}: layout: found {str(layout)[:60]}; allowed: {{object: [x, y, z, yaw]}}") \
            from None
    if not isinstance(assets, dict):
        raise DatasetError(f"{ep.path}: assets: found {str(assets)[:60]}; allowed: {{object: asset name}}")
    roles = _roles(ep, env)
    backend = recorded_backend(env, xml, {str(k): str(v) for k, v in assets.items()}, placements, str(ep.path),
                               roles, textures=ep.textures)
    states = ep.dataset(fmt.STATES)
    if len(states.shape) != 2 or states.shape[0] < 1 or states.shape[1] != backend.state_size \
            or states.dtype.kind not in "biuf":
        backend.close()
        raise DatasetError(f"{ep.path}: states: found {states.dtype}{states.shape}; allowed: (T, "
                           f"{backend.state_size}) numbers, T >= 1, for the world in its model_xml")
    return RecordedWorld(env, backend, record, roles)


def _roles(ep: Episode, env: EnvSpec) -> dict[str, str]:
    """The objects the episode's reset bound its scene's roles to, each checked against the role's objects."""
    if not env.roles:
        return {}
    stored = _json(ep, fmt.RESET_ROLES_ATTR)
    for role in env.roles:
        bound = stored.get(role.name) if isinstance(stored, dict) else None
        if bound not in role.one_of:
            raise DatasetError(f"{ep.path}: {fmt.RESET_ROLES_ATTR}.{role.name}: found {bound!r}; allowed: one of "
                               f"{', '.join(role.one_of)}")
    return {r.name: str(stored[r.name]) for r in env.roles}
