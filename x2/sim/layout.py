"""Per-reset placement of scene objects: rejection sampling of non-overlapping footprints.

Objects are discs on the table (their `footprint_radius`); fixed poses are obstacles first,
then region objects are placed largest first. A region with slots shares them out instead: one order of
its slots is drawn when its first object is placed, its objects (in scene order) take them in that order,
each within half_size of its slot. Pure numpy: the simulator only receives poses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from x2.base.errors import X2Error
from x2.envspec.env import AssetSpec, ObjectInstance, Role


class LayoutError(X2Error):
    """No collision-free placement was found within the sampling budget."""


# Placements are kept to 10 um and 1e-5 rad: the world XML prints 6 significant digits, so a placement
# below 10 m survives the XML (and the model compiled from it) exactly as sampled.
DECIMALS = 5


@dataclass(frozen=True)
class Placement:
    x: float
    y: float
    z: float
    yaw: float

    def as_list(self) -> list[float]:
        return [self.x, self.y, self.z, self.yaw]

    def quantized(self) -> Placement:
        return Placement(*(round(float(v), DECIMALS) for v in self.as_list()))


def draw_roles(roles: Sequence[Role], rng: np.random.Generator) -> dict[str, int]:
    """Each role's place in its `one_of` for one reset: one integer from `rng` per role, in order, never the
    object its `unlike` role drew (a scene without roles draws nothing)."""
    place: dict[str, int] = {}
    bound: dict[str, str] = {}
    for r in roles:
        free = [i for i, name in enumerate(r.one_of) if r.unlike is None or name != bound[r.unlike]]
        place[r.name] = free[int(rng.integers(len(free)))]
        bound[r.name] = r.one_of[place[r.name]]
    return place


def draw_assets(objects: Sequence[ObjectInstance], rng: np.random.Generator,
                roles: Mapping[str, int] | None = None) -> dict[str, AssetSpec]:
    """Each object's asset for one reset: one integer from `rng` per object, in order (so scenes without groups
    draw as they always have); a group's objects draw among the places of their pool not taken yet, and an
    object that follows another (or a role: `roles` gives the places draw_roles drew) takes the place that one
    drew, drawing nothing."""
    place: dict[str, int] = dict(roles or {})
    taken: dict[str, list[int]] = {}
    for o in objects:
        if o.follows is not None:
            place[o.name] = place[o.follows]
            continue
        free = list(range(len(o.candidates)))
        if o.group is not None:
            free = [i for i in free if i not in taken.setdefault(o.group, [])]
        place[o.name] = free[int(rng.integers(len(free)))]
        if o.group is not None:
            taken[o.group].append(place[o.name])
    return {o.name: o.candidates[place[o.name]] for o in objects}


def solve_layout(objects: Sequence[ObjectInstance], chosen: Mapping[str, AssetSpec], rng: np.random.Generator,
                 clearance: float = 0.01, max_tries: int = 200) -> dict[str, Placement]:
    placed: dict[str, Placement] = {}
    radius = {o.name: chosen[o.name].footprint_radius for o in objects}
    for obj in objects:
        if obj.pose is not None:
            placed[obj.name] = Placement(*obj.pose).quantized()
    sampled = sorted((o for o in objects if o.region is not None), key=lambda o: -radius[o.name])
    slot_order: dict[str, list[int]] = {}  # region -> its slots in this reset's order
    for obj in sampled:
        region = obj.region
        assert region is not None  # filtered above
        cx, cy = region.center
        if region.slots:
            if region.name not in slot_order:
                slot_order[region.name] = [int(i) for i in rng.permutation(len(region.slots))]
            sharing = [o.name for o in objects if o.region is not None and o.region.name == region.name]
            cx, cy = region.slots[slot_order[region.name][sharing.index(obj.name)]]
        for _ in range(max_tries):
            x = cx + rng.uniform(-1.0, 1.0) * region.half_size[0]
            y = cy + rng.uniform(-1.0, 1.0) * region.half_size[1]
            clear = all(math.hypot(x - p.x, y - p.y) >= radius[obj.name] + radius[name] + clearance
                        for name, p in placed.items() if name != region.on)
            if clear:
                yaw = rng.uniform(*region.yaw_range)
                placed[obj.name] = Placement(float(x), float(y), region.z + chosen[obj.name].height,
                                             float(yaw)).quantized()
                break
        else:
            others = ", ".join(placed) or "nothing"
            raise LayoutError(f"object {obj.name!r}: no free spot in region {region.name!r} after {max_tries} "
                              f"tries (radius {radius[obj.name]} m, next to {others}); enlarge the region")
    return {o.name: placed[o.name] for o in objects}


def check_layout(objects: Sequence[ObjectInstance], chosen: Mapping[str, AssetSpec],
                 placements: Mapping[str, Placement], clearance: float = 0.0) -> list[tuple[str, str]]:
    """Pairs of objects whose footprints overlap (used by tests and by replay augmentation)."""
    names = [o.name for o in objects]
    support = {o.name: o.region.on for o in objects if o.region is not None and o.region.on is not None}
    bad = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if support.get(a) == b or support.get(b) == a:  # one stands on the other
                continue
            pa, pb = placements[a], placements[b]
            reach = chosen[a].footprint_radius + chosen[b].footprint_radius + clearance
            if math.hypot(pa.x - pb.x, pa.y - pb.y) < reach:
                bad.append((a, b))
    return bad
