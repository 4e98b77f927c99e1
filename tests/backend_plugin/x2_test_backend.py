"""A simulator backend from another package, as x2 finds it: registered under the entry point group `x2.backends`
by its distribution's metadata (the `x2_test_backend-0.0.dist-info` beside this module, which importlib.metadata
reads from any folder on sys.path, so no pip install is needed).

It delegates every call to x2's MuJoCo backend, so it passes the contract suite (tests/backend_contract) the way
a real second simulator would have to, while counting the ticks that went through it (proof that the world was
stepped by this package, not by x2's own backend directly) and the renderers it made (the pictures of stored states
go through `Backend.renderer`, which it implements itself rather than through `__getattr__`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from x2.base.arrays import Floats
from x2.envspec.env import EnvSpec
from x2.sim import ImageSize, Placement, StateRenderer
from x2.sim.mujoco.backend import MujocoBackend


class DelegatingBackend:
    def __init__(self, inner: MujocoBackend):
        self._inner = inner
        self.steps = 0
        self.renderers = 0

    def step(self, action: Floats) -> None:
        self._inner.step(action)
        self.steps += 1

    def renderer(self, cameras: Sequence[str], size: ImageSize) -> StateRenderer:
        self.renderers += 1
        return self._inner.renderer(cameras, size)

    def __getattr__(self, name: str) -> object:
        # everything else, attributes included (a reset recompiles the world: `model`/`data` change)
        return getattr(self._inner, name)


class Factory:
    """The object the entry point names (an instance; a module with the two functions works as well)."""

    def make(self, env: EnvSpec) -> DelegatingBackend:
        return DelegatingBackend(MujocoBackend(env))

    def recorded(self, env: EnvSpec, model_xml: str, assets: Mapping[str, str], layout: Mapping[str, Placement],
                 source: str, roles: Mapping[str, str] | None,
                 textures: Mapping[str, bytes] | None = None) -> DelegatingBackend:
        return DelegatingBackend(MujocoBackend.recorded(env, model_xml, assets, layout, source, roles, textures))


FACTORY = Factory()
