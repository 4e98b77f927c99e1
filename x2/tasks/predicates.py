"""Named success/failure predicates: plain functions of privileged simulator state.

A task YAML names a predicate and its arguments; the spec compiler checks the name and the
argument kinds against `PREDICATES` (the one registry, filled in this module) before anything
runs. The functions read the world only through the `WorldView` protocol, so this module never
imports the simulator and the DAG can be re-evaluated offline on recorded states.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from x2.base.arrays import Floats

ArgKind = Literal["object", "joint", "part", "arm", "float"]


class WorldView(Protocol):
    """What predicates may read. Names are as compiled: objects by instance name, joints as
    `object/joint` or robot joint names, parts as `object/part` sites."""

    table_height: float

    def object_pos(self, obj: str) -> Floats: ...
    def object_rest_height(self, obj: str) -> float: ...
    def site_box(self, site: str) -> tuple[Floats, Floats, Floats]: ...  # pos, rot 3x3, half size
    def joint_value(self, joint: str) -> float: ...
    def touching(self, body_a: str, body_b: str) -> bool: ...  # any geom of a's subtree touches one of b's
    def finger_bodies(self, arm: str) -> tuple[str, str]: ...
    def arm_joint_error(self, arm: str) -> float: ...  # max |q - home| over the arm's joints
    def arm_root_pos(self, arm: str) -> Floats: ...  # where the arm's first joint axis is anchored (world)


@dataclass(frozen=True)
class PredicateDef:
    name: str
    fn: Callable[..., bool]
    params: dict[str, ArgKind]
    defaults: dict[str, object]
    doc: str


PREDICATES: dict[str, PredicateDef] = {}


def _predicate(**params: ArgKind) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    def register(fn: Callable[..., bool]) -> Callable[..., bool]:
        signature = inspect.signature(fn)
        defaults = {k: p.default for k, p in signature.parameters.items() if p.default is not p.empty}
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        PREDICATES[fn.__name__] = PredicateDef(fn.__name__, fn, dict(params), defaults, doc)
        return fn

    return register


def _arms(arm: str) -> tuple[str, ...]:
    return ("left", "right") if arm == "both" else (arm,)


@_predicate(obj="object", height="float")
def object_lifted(world: WorldView, obj: str, height: float = 0.05) -> bool:
    """The object's origin is at least `height` metres above where it rests on the table."""
    return float(world.object_pos(obj)[2]) - world.table_height - world.object_rest_height(obj) >= height


@_predicate(obj="object", margin="float")
def object_fallen(world: WorldView, obj: str, margin: float = 0.05) -> bool:
    """The object dropped below the table top (off the table)."""
    return float(world.object_pos(obj)[2]) < world.table_height - margin


@_predicate(obj="object", container="part", margin="float")
def object_inside(world: WorldView, obj: str, container: str, margin: float = 0.0) -> bool:
    """The object's origin lies inside the box site `container` (e.g. `microwave/cavity`), shrunk by `margin`."""
    pos, rot, half = world.site_box(container)
    local = rot.T @ (world.object_pos(obj) - pos)
    return bool((np.abs(local) <= half - margin).all())


@_predicate(obj="object", target="object", distance="float")
def object_near(world: WorldView, obj: str, target: str, distance: float = 0.05) -> bool:
    """The horizontal distance between the two objects' origins is at most `distance`."""
    delta = world.object_pos(obj)[:2] - world.object_pos(target)[:2]
    return float(np.hypot(*delta)) <= distance


@_predicate(obj="object", target="object", distance="float")
def object_on(world: WorldView, obj: str, target: str, distance: float = 0.06) -> bool:
    """The object touches `target` and sits above it, within `distance` horizontally."""
    above = world.object_pos(obj)[2] > world.object_pos(target)[2]
    return bool(above and object_near(world, obj, target, distance) and world.touching(obj, target))


@_predicate(joint="joint", value="float")
def joint_above(world: WorldView, joint: str, value: float) -> bool:
    """The joint's position is at least `value` (rad or m)."""
    return world.joint_value(joint) >= value


@_predicate(joint="joint", value="float")
def joint_below(world: WorldView, joint: str, value: float) -> bool:
    """The joint's position is at most `value` (rad or m)."""
    return world.joint_value(joint) <= value


@_predicate(joint="joint", depth="float")
def button_pressed(world: WorldView, joint: str, depth: float = 0.004) -> bool:
    """A button's slide joint is pushed in by at least `depth` metres."""
    return world.joint_value(joint) <= -depth


@_predicate(joint="joint", due="joint", last="joint", depth="float")
def pressed_instead(world: WorldView, joint: str, due: str, last: str = "", depth: float = 0.004) -> bool:
    """The button `joint` is pushed in though `due` is the one to press; `last`, the one pressed just before
    (it may still be on its way back up), is not counted."""
    return joint not in (due, last) and button_pressed(world, joint, depth)


@_predicate(arm="arm", obj="object")
def gripper_holding(world: WorldView, arm: str, obj: str) -> bool:
    """Both fingers of the arm's gripper touch the object."""
    return all(all(world.touching(f, obj) for f in world.finger_bodies(a)) for a in _arms(arm))


@_predicate(arm="arm", obj="object")
def gripper_released(world: WorldView, arm: str, obj: str) -> bool:
    """No finger of the arm's gripper touches the object."""
    return not any(world.touching(f, obj) for a in _arms(arm) for f in world.finger_bodies(a))


@_predicate(arm="arm", tolerance="float")
def arm_at_home(world: WorldView, arm: str, tolerance: float = 0.1) -> bool:
    """Every joint of the arm (or both arms) is within `tolerance` rad of its home angle."""
    return all(world.arm_joint_error(a) <= tolerance for a in _arms(arm))


@_predicate(obj="object", arm="arm", distance="float")
def within_reach(world: WorldView, obj: str, arm: str, distance: float = 0.5) -> bool:
    """The object's origin is at most `distance` metres from the arm's first joint axis, horizontally (a
    mobile robot has driven there)."""
    return all(float(np.hypot(*(world.object_pos(obj)[:2] - world.arm_root_pos(a)[:2]))) <= distance
               for a in _arms(arm))


def holds(world: WorldView, name: str, args: dict[str, object]) -> bool:
    """Whether predicate `name` holds with `args` in `world` (as the DAG runtime asks it)."""
    return bool(PREDICATES[name].fn(world, **args))
