"""A picture of one object alone: its MJCF on a grey table, lit from above, seen from a free camera sized to it.

The object is attached as a world attaches it (its images carried by digest name, x2/sim/mujoco/textures.py), the
world compiled as a recorded world is (x2/sim/mujoco/recorded_xml.py), and drawn by x2's one renderer
(x2/sim/mujoco/renderer.py): what the picture shows is what an episode of the object shows.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from x2.base.arrays import Floats, Image
from x2.sim.camera import FreeCamera, ImageSize
from x2.sim.mujoco.recorded_xml import compile_world
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.robot import load_mjcf
from x2.sim.mujoco.state import STATE_SPEC, state_size
from x2.sim.mujoco.textures import carry_textures
from x2.sim.mujoco.world import ASSET_ROOT_BODY

AZIMUTH, ELEVATION = 135.0, -30.0  # deg: from the front left, a little above
FILL = 0.8  # of the picture's height the object's bounding sphere spans


def object_picture(mjcf: Path, size: ImageSize) -> Image:
    """The object of `mjcf` (one top-level body `object`) drawn at `size`."""
    child = load_mjcf(mjcf, f"object {mjcf.stem!r}")
    textures = carry_textures(child, mjcf)
    world = mujoco.MjSpec()
    world.visual.global_.offwidth, world.visual.global_.offheight = max(size.width, 64), max(size.height, 64)
    world.visual.headlight.ambient = [0.35, 0.35, 0.35]
    world.visual.headlight.diffuse = [0.5, 0.5, 0.5]
    world.worldbody.add_light(pos=[0.3, -0.3, 1.0], dir=[-0.3, 0.3, -1.0], diffuse=[0.5, 0.5, 0.5])
    world.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[1.0, 1.0, 0.01], pos=[0, 0, -0.01],
                             rgba=[0.82, 0.82, 0.8, 1.0])
    world.attach(child, frame=world.worldbody.add_frame(), prefix="o/")
    world.assets = textures
    model = compile_world(world.to_xml(), str(mjcf), textures)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    lo, hi = _bounds(model, data, model.body(f"o/{ASSET_ROOT_BODY}").id)
    radius = max(float(np.linalg.norm(hi - lo)) / 2, 0.01)
    fovy = float(model.vis.global_.fovy)
    distance = radius / np.sin(np.deg2rad(fovy) * FILL / 2)
    state = np.empty(state_size(model))
    mujoco.mj_getState(model, data, state, STATE_SPEC)
    with MujocoRenderer(model, (), size) as renderer:
        renderer.set_state(state)
        picture, _ = renderer.render_free(FreeCamera((lo + hi) / 2, float(distance), AZIMUTH, ELEVATION))
    return picture


def _bounds(model: mujoco.MjModel, data: mujoco.MjData, body: int) -> tuple[Floats, Floats]:
    """The world box around the body's geoms (each geom's own bounding box, turned into the world)."""
    corners = []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] != body:
            continue
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        local = centre + signs * half
        corners.append(local @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g])
    points = np.concatenate(corners) if corners else np.zeros((1, 3))
    return points.min(axis=0), points.max(axis=0)
