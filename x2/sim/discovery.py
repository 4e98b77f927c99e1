"""Simulator backends found by name: x2's own MuJoCo one and any other package's, through the entry point group
`x2.backends` (docs/backends.md).

An entry point names a `BackendFactory`: any object (a module, an instance) with `make` and `recorded`. The
name picks it: `make_backend(env, backend="name")`, else the `X2_BACKEND` environment variable (so every
command, and every worker process it starts, switches without a flag), else `mujoco`.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol, runtime_checkable

from x2.base.errors import NotFoundError, X2Error, one_line
from x2.envspec.env import EnvSpec
from x2.sim.backend import Backend
from x2.sim.layout import Placement

GROUP = "x2.backends"
ENV_VAR = "X2_BACKEND"
DEFAULT = "mujoco"
# x2's own, declared in pyproject.toml too. Added here as well so that a source checkout whose installed metadata
# predates the entry point (or runs from PYTHONPATH) still has it; the name is reserved for it.
_OWN = "x2.sim.mujoco.factory"


@runtime_checkable
class BackendFactory(Protocol):
    """What an entry point of the group `x2.backends` names."""

    def make(self, env: EnvSpec) -> Backend:
        """A backend that collects in `env`: each `reset(seed)` draws its scene from the seed."""
        ...

    def recorded(self, env: EnvSpec, model_xml: str, assets: Mapping[str, str], layout: Mapping[str, Placement],
                 source: str, roles: Mapping[str, str] | None,
                 textures: Mapping[str, bytes] | None = None) -> Backend:
        """The world of a recorded episode, built from its stored MJCF text `model_xml` (nothing redrawn, no
        spec file read) and the images it carries (`textures`, by the names its ``<texture file>`` gives; passed
        only when there are any); `assets`/`layout`/`roles` as its reset drew them; `source` names the file in
        errors."""
        ...


def installed_backends() -> tuple[str, ...]:
    """The names a backend can be chosen by, sorted."""
    return tuple(sorted(_entry_points(tuple(sys.path))))


def chosen_backend(name: str | None = None) -> str:
    """The name a backend is chosen by: `name`, else $X2_BACKEND, else mujoco."""
    return name or os.environ.get(ENV_VAR) or DEFAULT


def backend_factory(name: str | None = None) -> BackendFactory:
    """The factory of the backend `name` (None: $X2_BACKEND, else mujoco). Raises NotFoundError naming the
    installed backends when no entry point has that name, X2Error when its entry point does not load."""
    chosen_by = "backend"
    if name is None:
        from_env = os.environ.get(ENV_VAR)
        name, chosen_by = (from_env, ENV_VAR) if from_env else (DEFAULT, chosen_by)
    found = _entry_points(tuple(sys.path))
    point = found.get(name)
    if point is None:
        raise NotFoundError(f"{chosen_by}: found {name!r}; allowed: an installed backend ({', '.join(sorted(found))}; "
                            f"entry point group {GROUP})")
    return _load(point)


@functools.lru_cache(maxsize=4)
def _entry_points(path: tuple[str, ...]) -> dict[str, EntryPoint]:
    # Keyed by sys.path: the scan reads every distribution's metadata (~7 ms), and a folder added to the path
    # (a plugin under test) must be seen. Nothing is imported until a backend is chosen (`_load`).
    found = {point.name: point for point in entry_points(group=GROUP)}
    found[DEFAULT] = EntryPoint(DEFAULT, _OWN, GROUP)
    return found


def _load(point: EntryPoint) -> BackendFactory:
    try:
        factory = point.load()
    except Exception as exc:  # a plugin's import can fail in any way; the message must still be one line
        raise X2Error(one_line(f"backend {point.name!r}: entry point {point.value!r} (group {GROUP}) does not load: "
                               f"{type(exc).__name__}: {exc}")) from exc
    if not isinstance(factory, BackendFactory):
        raise X2Error(f"backend {point.name!r}: entry point {point.value!r} (group {GROUP}) names a "
                      f"{type(factory).__name__}; allowed: an object with make(env) and recorded(env, model_xml, "
                      "assets, layout, source, roles)")
    return factory
