"""Object assets by name: the catalog's asset YAMLs compiled into `AssetSpec`s."""

from __future__ import annotations

from functools import cache

from x2.base.errors import NotFoundError
from x2.envspec import catalog
from x2.envspec.env import AssetSpec
from x2.envspec.robot import _file_next_to
from x2.envspec.schema import AssetFile, parse
from x2.envspec.source import Fragment, Path_


@cache
def load_asset(name: str) -> AssetSpec:
    path, frag = catalog.load("objects", name)
    spec: AssetFile = parse(AssetFile, frag)
    return AssetSpec(name=spec.name, mjcf=_file_next_to(frag, ("mjcf",), spec.mjcf), tags=tuple(spec.tags),
                      footprint_radius=spec.footprint_radius, height=spec.height, free=spec.free,
                      parts=dict(spec.parts), joints=tuple(spec.joints), display=spec.display or "")


def asset_at(frag: Fragment, key: Path_, name: str) -> AssetSpec:
    """The asset `name` written at `key` of `frag`; an unknown name is an error there listing the catalog."""
    try:
        return load_asset(name)
    except NotFoundError:
        raise frag.error(key, repr(name), "one of " + ", ".join(catalog.names("objects"))) from None
