"""Scene YAML (+ variant overlay) and asset YAMLs -> booth, regions and object instances."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from x2.envspec import catalog
from x2.envspec.assets import asset_at, load_asset
from x2.envspec.env import AssetSpec, BoothSpec, ObjectInstance, Region, Role
from x2.envspec.held_out import check_pools
from x2.envspec.robot import RobotInfo
from x2.envspec.roles import compile_roles
from x2.envspec.scenery import Scenery, compile_scenery, scene_booth
from x2.envspec.schema import ObjectFile, SceneFile, parse
from x2.envspec.source import Fragment, merge_fragments

OBJECT_NAME = re.compile(r"[A-Za-z0-9_-]+")

__all__ = ["SceneInfo", "compile_scene", "load_asset", "load_scene"]


@dataclass(frozen=True)
class SceneInfo:
    name: str
    booth: BoothSpec
    regions: dict[str, Region]
    objects: tuple[ObjectInstance, ...]
    split: str
    variant: str
    variants: tuple[str, ...]
    file: Path
    appearance: tuple[Scenery, ...] = ()  # looks drawn per reset (their distractors left out)
    embodiment: tuple[str, ...] = ()  # embodiment axes drawn per reset ("camera")
    roles: tuple[Role, ...] = ()  # names the task uses for objects, bound per reset (x2/envspec/roles.py)


def _variant_overlay(frag: Fragment, variant: str) -> Fragment:
    blocks = frag.data.get("variants") or {}
    if variant == "default":
        return frag
    if not isinstance(blocks, dict):
        blocks = {}  # no variant is named (validating the scene reports the field itself)
    if variant not in blocks:
        raise frag.error(("variants",), f"no variant {variant!r}",
                         "one of " + ", ".join(["default", *blocks]))
    prefix = ("variants", variant)
    origins = {k[2:]: v for k, v in frag.origins.items() if k[:2] == prefix}
    overlay = Fragment(blocks[variant], origins, frag.origin(prefix).file)
    if not isinstance(overlay.data, dict):
        raise frag.error(prefix, repr(overlay.data), "a mapping of scene fields to override")
    return merge_fragments(frag, overlay)


def _metres(value: float) -> str:
    """A coordinate as written in errors: centimetres, or 3 digits for a number no table has (1e300)."""
    return f"{value:.2f}" if abs(value) < 1e6 else f"{value:.3g}"


def _check_region(frag: Fragment, key: tuple[str, ...], region: Region, footprint: float,
                  booth: BoothSpec, robot: RobotInfo) -> None:
    """A region must keep the whole object on the table and inside some arm's reach."""
    (cx, cy), (hx, hy) = booth.table_center, booth.table_half_size
    centres = region.slots or (region.center,)
    corners = [(x0 + sx * region.half_size[0], y0 + sy * region.half_size[1])
               for x0, y0 in centres for sx in (-1, 1) for sy in (-1, 1)]
    for x, y in corners:
        if abs(x - cx) > hx - footprint or abs(y - cy) > hy - footprint:
            raise frag.error(key, f"corner ({_metres(x)}, {_metres(y)}) off the table for an object of radius "
                             f"{footprint}",
                             f"regions within x {cx - hx + footprint:.2f}..{cx + hx - footprint:.2f}, "
                             f"y {cy - hy + footprint:.2f}..{cy + hy - footprint:.2f}")
    if not robot.shoulders:
        return
    base = robot.model.base_pos
    # a mobile base carries its shoulders anywhere in its x, y range (its heading aside): the nearest of those
    travel = robot.model.base.range[:2] if robot.model.base is not None else ((0.0, 0.0), (0.0, 0.0))
    for x, y in corners:
        dist = min(math.dist((x, y, region.z), _nearest_on_travel((x, y), (base[0] + s[0], base[1] + s[1]), travel)
                             + (base[2] + s[2],))
                   for s in robot.shoulders.values())
        if dist > robot.reach:
            where = "a shoulder" if robot.model.base is None else "a shoulder the base can bring there"
            raise frag.error(key, f"corner ({_metres(x)}, {_metres(y)}) {_metres(dist)} m from the nearest shoulder "
                             f"(unreachable by {robot.model.name})", f"points within {robot.reach} m of {where}")


def _nearest_on_travel(point: tuple[float, float], shoulder: tuple[float, float],
                       travel: tuple[tuple[float, float], tuple[float, float]]) -> tuple[float, float]:
    """The shoulder's position, moved by a base within `travel` (x and y ranges), nearest to `point`."""
    return tuple(min(max(p, s + lo), s + hi) for p, s, (lo, hi) in zip(point, shoulder, travel, strict=True))  # type: ignore[return-value]


def compile_scene(frag: Fragment, file: Path, robot: RobotInfo, variant: str = "default") -> SceneInfo:
    base: SceneFile = parse(SceneFile, frag)  # validate the base (variant blocks included) before overlaying
    # scenery blocks belong to the base scene; checked here so `tasks show` finds errors
    sceneries = compile_scenery(frag, base)
    check_pools(frag)  # held-out pools overlap no train pool, whichever variant this run uses
    frag = _variant_overlay(frag, variant)
    spec: SceneFile = parse(SceneFile, frag)
    booth = scene_booth(spec)
    regions = {name: Region(name, r.center, r.half_size, booth.table_height + r.height, r.yaw, tuple(r.slots), r.on)
               for name, r in spec.regions.items()}
    for name, r in spec.regions.items():
        if r.on is not None and r.on not in spec.objects:
            raise frag.error(("regions", name, "on"), repr(r.on), "an object of this scene: " + ", ".join(spec.objects))
    roles = compile_roles(frag, spec, OBJECT_NAME)
    objects: list[ObjectInstance] = []
    for name, obj in spec.objects.items():
        key = ("objects", name)
        if not OBJECT_NAME.fullmatch(name):  # it prefixes MuJoCo names and is an instruction placeholder
            raise frag.error(key, repr(name), "an object name of letters, digits, '_' and '-'")
        if (obj.asset is None) == (obj.pool is None):
            raise frag.error(key, "both asset and pool" if obj.asset else "neither asset nor pool",
                             "exactly one of asset: NAME or pool: [NAMES]")
        if obj.pool is not None and not obj.pool:
            raise frag.error((*key, "pool"), "an empty list", "at least one asset name")
        names = [obj.asset] if obj.asset is not None else list(obj.pool or [])
        field = "asset" if obj.asset is not None else "pool"
        candidates = tuple(asset_at(frag, (*key, field) if obj.asset else (*key, "pool", i), n)
                           for i, n in enumerate(names))
        if len({a.free for a in candidates}) > 1:
            raise frag.error((*key, "pool"), "a mix of free and welded assets",
                             "assets that are all free or all welded")
        if (obj.region is None) == (obj.pose is None):
            raise frag.error(key, "both region and pose" if obj.region else "neither region nor pose",
                             "exactly one of region: NAME or pose: [x, y, z, yaw]")
        region = None
        if obj.region is not None:
            if obj.region not in regions:
                raise frag.error((*key, "region"), repr(obj.region), "one of " + (", ".join(regions) or "no regions"))
            region = regions[obj.region]
            _check_region(frag, ("regions", obj.region), region, max(a.footprint_radius for a in candidates),
                          booth, robot)
            sharing = sum(o.region == obj.region for o in spec.objects.values())
            if region.slots and sharing > len(region.slots):
                raise frag.error(("regions", obj.region, "slots"), f"{len(region.slots)} slots for {sharing} objects",
                                 "a slot for every object placed in the region")
        tags = tuple(dict.fromkeys([*obj.tags, *(t for a in candidates for t in a.tags)]))
        _check_draw(frag, key, obj, name, candidates, objects, roles)
        objects.append(ObjectInstance(name, candidates, tags, region, obj.pose, obj.group, obj.follows))
    return SceneInfo(spec.name, booth, regions, tuple(objects), spec.split, variant,
                     ("default", *spec.variants), file, _appearance(frag, spec, sceneries),
                     tuple(dict.fromkeys(spec.embodiment)), roles)


def _check_draw(frag: Fragment, key: tuple[str, str], obj: ObjectFile, name: str, candidates: tuple[AssetSpec, ...],
                before: list[ObjectInstance], roles: tuple[Role, ...] = ()) -> None:
    """A group's objects share one pool, with an asset for each; a followed object comes earlier (or is a role),
    its pool (or the role's objects) as long as this one's."""
    pool = [a.name for a in candidates]
    if obj.group is not None:
        members = [o for o in before if o.group == obj.group]
        if members and [a.name for a in members[0].candidates] != pool:
            raise frag.error((*key, "pool"), f"{pool} in group {obj.group!r}",
                             f"the pool of the group's first object, {members[0].name}: "
                             f"{[a.name for a in members[0].candidates]}")
        if len(members) + 1 > len(pool):
            raise frag.error((*key, "group"), f"{len(members) + 1} objects in group {obj.group!r}",
                             f"at most one per asset of its pool ({len(pool)})")
    if obj.follows is not None:
        role = next((r for r in roles if r.name == obj.follows), None)
        leader = next((o for o in before if o.name == obj.follows), None)
        if leader is None and role is None:
            raise frag.error((*key, "follows"), repr(obj.follows),
                             "an object listed before this one or a role: "
                             + (", ".join([*(o.name for o in before), *(r.name for r in roles)]) or "none"))
        if role is not None:
            size, what = len(role.one_of), "objects"
        else:
            assert leader is not None  # (one of the two, checked above)
            size, what = len(leader.candidates), "pool"
        if size != len(pool):
            raise frag.error((*key, "pool"), f"{len(pool)} assets", f"{size}, as many as {obj.follows}'s {what}, "
                             "which it follows place by place")


def _appearance(frag: Fragment, spec: SceneFile, sceneries: dict[str, Scenery]) -> tuple[Scenery, ...]:
    """The looks a reset draws from: scenery blocks with a table, walls, floor or lighting, train ones only in a
    train configuration (an eval look is held out), their distractors left to replay augmentation."""
    looks = []
    usable = [n for n, v in sceneries.items() if v.split == "train" or spec.split == "eval"]
    for i, name in enumerate(spec.appearance):
        key = ("appearance", i)
        if name not in sceneries:
            raise frag.error(key, repr(name), "one of the scene's scenery looks: " + (", ".join(sceneries) or "none"))
        look = sceneries[name]
        if look.split == "eval" and spec.split != "eval":
            raise frag.error(key, f"{name!r} (split eval) in a train configuration",
                             "a train look: " + ", ".join(usable))
        if all(getattr(look, part) is None for part in ("table", "walls", "floor", "lighting")):
            raise frag.error(key, f"{name!r}, which only adds distractors",
                             "a look with a table, walls, floor or lighting block")
        looks.append(replace(look, distractors=None))
    return tuple(looks)


def load_scene(name: str, robot: RobotInfo, variant: str = "default") -> SceneInfo:
    path, frag = catalog.load("scenes", name)
    return compile_scene(frag, path, robot, variant)
