"""A vendor gripper whose fingers ride on linkages (robots/parts/<name>.yaml, `drive: linkage`), renamed to x2's
gripper contract with its physics as the vendor wrote it.

The Robotiq 2F-85 (MuJoCo Menagerie's, in gym-hil's panda.xml) moves each pad on a four-bar: a driven hinge
(driver), a coupler, a spring link and a follower carrying the pad, the loop closed by an equality constraint,
both sides tied by a tendon and a joint equality, one actuator on the tendon. All of it stays: joints, limits,
springs, masses, collision meshes, pads, equalities, tendon, contact exclusions and the actuator's gains. x2
renames it (module docstring of x2/sim/mujoco/parts.py for the slide contract):

- body `gripper`: the vendor's root body, turned at the flange by the part's `mount_quat` (the vendor's mounting);
- joints `finger_a`, `finger_b`: the two driven hinges; the linkage's other joints and every other element of a
  side get the side's prefix `a_` / `b_` instead of the vendor's (`right_coupler_joint` -> `a_coupler_joint`);
- bodies `finger_a`, `finger_b`: the pads (what x2's grasp predicates ask to touch), given pad friction;
- actuator `gripper`: the vendor's, ctrl the vendor's command; site `tcp` and camera `wrist` on `gripper`.

The root may sit deep inside the vendor's file (the 2F-85 hangs at the Panda's link7 there): it is copied out
into a file of its own first. What a command does to the jaw is measured, not assumed (x2/sim/mujoco/jaw.py).
"""

from __future__ import annotations

import functools
import re
import warnings

import mujoco

from x2.base.errors import SpecError
from x2.envspec.env import GripperPart, Linkage
from x2.sim.mujoco.parts import add_tcp_and_wrist, inline_meshes, pad_contacts, strip_part, vendor_spec

_COPY = "vendor_"  # the prefix the copied subtree's names carry until they are renamed


def linkage_gripper_spec(part: GripperPart, closed: float, opened: float) -> mujoco.MjSpec:
    """The vendor's linkage gripper renamed to x2's contract (module docstring), meshes inline; a fresh spec each
    call (attaching consumes it)."""
    return _linkage_gripper(part, closed, opened).copy()


def lone_subtree(spec: mujoco.MjSpec, body: str, rename: dict[str, str] | None = None,
                 classes: str = "copied/") -> mujoco.MjSpec:
    """`body` of `spec` and everything that refers only to its subtree (equalities, tendons, actuators, contact
    exclusions), alone in a spec of its own with `spec`'s options, `body` at the origin. Names are mapped by
    `rename` (others kept); default classes get the prefix `classes` (so that they cannot clash with the classes
    of the arm they were copied from). MuJoCo copies every asset along with the subtree, so the lone spec carries
    `spec`'s images too (`assets`, x2/sim/mujoco/textures.py)."""
    root = spec.body(body)
    lone = mujoco.MjSpec()
    if spec.assets:
        lone.assets = dict(spec.assets)
    lone.compiler.degree = False
    lone.option, lone.visual = spec.option, spec.visual  # (the source's physics; and no attach conflict)
    with warnings.catch_warnings():  # (an empty spec's default class name is one MuJoCo warns about)
        warnings.simplefilter("ignore")
        lone.worldbody.add_frame().attach_body(root, _COPY, "")
        text = lone.to_xml()
    # MjSpec's references are names: renaming an element leaves what refers to it dangling, so the names are
    # changed in the text, references and all
    mapping = rename or {}
    text = re.sub(rf'((?:child)?class)="{_COPY}([^"]*)"', rf'\1="{classes}\2"', text)
    text = re.sub(rf'"{_COPY}([^"]*)"', lambda m: f'"{mapping.get(m.group(1), m.group(1))}"', text)
    out = mujoco.MjSpec.from_string(text)
    if spec.assets:
        out.assets = dict(spec.assets)
    top = out.body(mapping.get(body, body))
    top.pos, top.quat = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
    return out


@functools.cache
def _linkage_gripper(part: GripperPart, closed: float, opened: float) -> mujoco.MjSpec:
    file, link = part.source.file, part.linkage
    assert link is not None
    vendor = vendor_spec(file, f"gripper part {part.name!r}")
    if vendor.body(part.root) is None:
        raise SpecError(str(file), None, "root", f"no body {part.root!r}", "the gripper's body in the vendor file")
    _check_names(vendor, part, link)
    rename = {name: link.renamed(name) for name in _names(vendor)}
    rename |= {part.root: "gripper", link.actuator: "gripper"}
    rename |= dict(zip(part.fingers, ("finger_a", "finger_b"), strict=True))
    rename |= dict(zip(link.pads, ("finger_a", "finger_b"), strict=True))
    spec = lone_subtree(vendor, part.root, rename, classes=f"{part.name}/")
    strip_part(spec, keep_visual=True, rgba=part.rgba, linkage=True)
    for site in list(spec.sites):
        spec.delete(site)
    root = spec.body("gripper")
    root.quat = list(part.mount_quat)
    for body in spec.bodies:
        if body.name:
            body.gravcomp = 1.0
    for name in ("finger_a", "finger_b"):
        pad_contacts(spec.body(name), part)
    add_tcp_and_wrist(root, part)
    actuators = [a for a in spec.actuators if a.name != "gripper"]
    for actuator in actuators:  # (only the gripper's own: an arm's would not refer to the subtree)
        spec.delete(actuator)
    servo = spec.actuator("gripper")
    servo.ctrllimited, servo.ctrlrange = 1, [min(closed, opened), max(closed, opened)]
    inline_meshes(spec)
    spec.default.name = f"{part.name}_part"
    return spec


def _names(spec: mujoco.MjSpec) -> set[str]:
    groups = (spec.bodies, spec.joints, spec.geoms, spec.sites, spec.tendons, spec.actuators, spec.equalities)
    return {e.name for group in groups for e in group if e.name}


def _check_names(spec: mujoco.MjSpec, part: GripperPart, link: Linkage) -> None:
    file = str(part.source.file)
    for field, names, kind in (("fingers", part.fingers, "joint"), ("pads", link.pads, "body"),
                               ("linkage", link.joints, "joint"), ("actuator", (link.actuator,), "actuator")):
        for name in names:
            if getattr(spec, kind)(name) is None:
                raise SpecError(file, None, field, f"no {kind} {name!r}", f"a {kind} of the vendor file")
    joints: list[str] = []
    stack = [spec.body(part.root)]
    while stack:  # every joint of the gripper's subtree must be a finger or listed: x2 records them all
        body = stack.pop()
        joints += [j.name for j in body.joints]
        stack += list(body.bodies)
    others = sorted(set(joints) - set(part.fingers))
    if sorted(link.joints) != others:
        missing = sorted(set(others) - set(link.joints)) or sorted(link.joints)
        raise SpecError(file, None, "linkage", ", ".join(missing),
                        "each joint of the gripper but the fingers, once: " + ", ".join(others))
