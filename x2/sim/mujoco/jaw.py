"""What a linkage gripper's command does to its jaw, measured once on the gripper alone.

A slide gripper's ctrl is its opening, so x2 knows its jaw from its numbers. A linkage gripper's command moves
its pads along arcs, through springs and joint limits, so x2 copies the gripper out of the world it steps
(everything that refers only to it comes along: the equalities closing the linkage, the tendon, the actuator),
with the world's physics options, and for evenly spaced commands settles it from rest and records the gap
between the pads' inner faces (along the tcp's y, as x2.synth measures a jaw) and every gripper joint. Reset
puts the linkage where the open command settles it, and the skills turn gaps into commands with the table.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import X2Error
from x2.envspec.env import RobotSpec
from x2.sim.backend import Jaw
from x2.sim.mujoco.linkage import lone_subtree

COMMANDS = 21  # evenly spaced commands, closed to open: the 2F-85's gap is within 0.3 mm of linear between them
SETTLE_S = 1.5  # s from rest at each command (the 2F-85 settles within 0.5 s)
SETTLED = 1e-3  # rad/s or m/s: the largest joint speed that counts as settled


def world_jaw(model_xml: str, robot: RobotSpec, textures: Mapping[str, bytes] | None = None) -> Jaw:
    """The jaw of the robot's (linkage) gripper, from the first arm's gripper in the world `model_xml` (with the
    images it carries, `textures`: the gripper alone still holds the world's assets)."""
    arm = robot.arms[0]
    world = mujoco.MjSpec.from_string(model_xml)
    if textures:
        world.assets = dict(textures)
    lone = lone_subtree(world, f"{arm.name}_gripper")  # (with the world's physics options)
    g = robot.gripper
    return _measure(lone.to_xml(), arm.name, arm.gripper_joints, g.closed_ctrl, g.open_ctrl,
                    tuple(sorted((textures or {}).items())))


@functools.cache
def _measure(xml: str, arm: str, joints: tuple[str, ...], closed: float, opened: float,
             textures: tuple[tuple[str, bytes], ...] = ()) -> Jaw:
    m = mujoco.MjModel.from_xml_string(xml, dict(textures))
    d = mujoco.MjData(m)
    servo = m.actuator(f"{arm}_gripper").id
    qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in joints])
    tcp = m.site(f"{arm}_tcp").id
    pads = [m.body(f"{arm}_finger_{s}").id for s in "ab"]
    commands = np.linspace(0.0, 1.0, COMMANDS)
    gaps, qpos = [], []
    for g in commands:
        mujoco.mj_resetData(m, d)
        d.ctrl[servo] = closed + g * (opened - closed)
        mujoco.mj_step(m, d, nstep=round(SETTLE_S / m.opt.timestep))
        if np.abs(d.qvel).max() > SETTLED:
            raise X2Error(f"gripper of arm {arm}: command {g:.2f} found still moving after {SETTLE_S} s "
                          f"(|qvel| {np.abs(d.qvel).max():.3g}); allowed: a linkage that comes to rest")
        mujoco.mj_forward(m, d)
        gaps.append(_gap(m, d, tcp, pads))
        qpos.append(d.qpos[qadr].copy())
    gap = np.array(gaps)
    if np.any(np.diff(gap) < -1e-4):
        raise X2Error(f"gripper of arm {arm}: jaw gaps {np.round(gap * 1e3, 1).tolist()} mm from closed to open; "
                      "allowed: a gap that grows as the command opens")
    return Jaw(commands, gap, np.array(qpos))


def _gap(m: mujoco.MjModel, d: mujoco.MjData, tcp: int, pads: list[int]) -> float:
    """The gap between the pads' collision geoms along the tcp's y (bounding boxes: a box is its own)."""
    y = d.site_xmat[tcp].reshape(3, 3)[:, 1]
    extents = []
    for body in pads:
        geoms = [g for g in np.flatnonzero(m.geom_bodyid == body) if m.geom_contype[g] or m.geom_conaffinity[g]]
        extents.append((-max(_support(m, d, g, -y) for g in geoms), max(_support(m, d, g, y) for g in geoms)))
    low, high = sorted(extents, key=lambda e: e[1])
    return high[0] - low[1]


def _support(m: mujoco.MjModel, d: mujoco.MjData, g: int, u: Floats) -> float:
    rot = d.geom_xmat[g].reshape(3, 3)
    centre = d.geom_xpos[g] + rot @ m.geom_aabb[g, :3]
    return float(centre @ u + np.abs(rot.T @ u) @ m.geom_aabb[g, 3:])
