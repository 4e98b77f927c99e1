"""A checkerboard in a MuJoCo world, to check a calibrated camera the way a lab checks its real one: drawn through the
camera at known poses, its corners found by OpenCV (bench/bench_camera_calibration.py,
tests/test_sim_checkerboard.py).

The board is geometry, not a texture: black squares (flat, emissive) on a white plate, so every inner corner is exactly
where `x2.sim.boards.checkerboard_corners` says, whatever MuJoCo's texture mapping and filtering do. It hangs on a free
joint named `<name>/free` and touches nothing (no collision), so it is placed by setting its joint's qpos.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import mujoco
import numpy as np

from x2.base.arrays import Floats, Image
from x2.envspec.camera_calibration import rotation_to_quat
from x2.sim.camera import ImageSize
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.state import STATE_SPEC

PLATE_DEPTH = 5e-4  # m the white plate stands behind the squares' faces (no z-fighting between the two)


def add_checkerboard(spec: mujoco.MjSpec, cols: int, rows: int, square: float, name: str = "board") -> str:
    """Add a board of `cols` x `rows` inner corners and `square` m squares, with a one-square white margin, to the
    world spec; returns its free joint's name."""
    black = spec.add_material(name=f"{name}/black", rgba=[0.02, 0.02, 0.02, 1], emission=0.0, specular=0.0)
    white = spec.add_material(name=f"{name}/white", rgba=[1, 1, 1, 1], emission=0.6, specular=0.0)
    body = spec.worldbody.add_body(name=name)
    body.add_freejoint(name=f"{name}/free")
    half = [(cols + 1) * square / 2 + square, (rows + 1) * square / 2 + square, PLATE_DEPTH / 2]
    body.add_geom(name=f"{name}/plate", type=mujoco.mjtGeom.mjGEOM_BOX, size=half, material=white.name,
                  pos=[(cols - 1) * square / 2, (rows - 1) * square / 2, -PLATE_DEPTH], contype=0, conaffinity=0,
                  mass=0.1)
    for a in range(cols + 1):
        for b in range(rows + 1):
            if (a + b) % 2 == 0:
                body.add_geom(name=f"{name}/sq{a}_{b}", type=mujoco.mjtGeom.mjGEOM_BOX,
                              size=[square / 2, square / 2, PLATE_DEPTH / 4], material=black.name,
                              pos=[(a - 0.5) * square, (b - 0.5) * square, -PLATE_DEPTH / 4], contype=0,
                              conaffinity=0, mass=0.001)
    return f"{name}/free"


def board_views(model: mujoco.MjModel, camera: str, size: ImageSize, joint: str, poses: Sequence[Floats],
                qpos: Floats | None = None) -> Iterator[Image]:
    """The camera's pictures, through x2's renderer, of the board on free joint `joint` at each world pose (4x4
    transforms of the board's frame), the rest of the world at `qpos` (default: its qpos0)."""
    data = mujoco.MjData(model)
    if qpos is not None:
        data.qpos[:] = qpos
    adr = int(model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)])
    state = np.empty(mujoco.mj_stateSize(model, STATE_SPEC))
    with MujocoRenderer(model, [camera], size) as renderer:
        for pose in poses:
            data.qpos[adr:adr + 3] = pose[:3, 3]
            data.qpos[adr + 3:adr + 7] = rotation_to_quat(pose[:3, :3])
            mujoco.mj_getState(model, data, state, STATE_SPEC)
            yield renderer.frame(state)[camera]


def poses_facing(camera: Floats, cols: int, rows: int, square: float, count: int, seed: int = 0,
                 distance: tuple[float, float] = (0.45, 0.7), tilt_deg: float = 35.0,
                 spread: float = 0.12) -> list[Floats]:
    """`count` world poses of a board in front of a camera whose optical frame (x right, y down, z forward) is at
    `camera` (4x4): centred within `spread` x distance of the optical axis (two thirds of it vertically) at
    `distance` m, turned up to `tilt_deg` about its own x and y and half that about the axis, facing the camera:
    what a person waving a board at a camera does, seeded."""
    rng = np.random.default_rng(seed)
    centre = np.array([(cols - 1) * square / 2, (rows - 1) * square / 2, 0.0])
    out: list[Floats] = []
    for _ in range(count):
        d = rng.uniform(*distance)
        at = np.array([rng.uniform(-spread, spread) * d, rng.uniform(-spread, spread) * d * 2 / 3, d])
        ax, ay, az = np.deg2rad(rng.uniform(-tilt_deg, tilt_deg, 3) * np.array([1.0, 1.0, 0.5]))
        # facing the camera: the board's +z towards it, i.e. along the optical frame's -z
        rot = _about(0, np.pi) @ _about(0, ax) @ _about(1, ay) @ _about(2, az)
        in_cam = np.eye(4)
        in_cam[:3, :3] = rot
        in_cam[:3, 3] = at - rot @ centre
        out.append(camera @ in_cam)
    return out


def _about(axis: int, angle: float) -> Floats:
    c, s = np.cos(angle), np.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r
