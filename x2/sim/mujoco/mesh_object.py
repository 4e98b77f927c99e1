"""`x2 objects add`: a mesh file made into a user object, compiled and drop-tested before it is written.

x2.meshes makes the MJCF text (no simulator); here it is compiled as a recorded world would be (the same
self-containment check, x2.sim.mujoco.recorded_xml) and dropped onto a table: `DROP_HEIGHT` above it, at rest
after `DROP_SECONDS` of x2's physics (its timestep and solver), it must neither sink into the table nor bounce,
spin or roll away. Only then are the files written (x2.envspec.mesh_objects).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from x2.base.errors import SpecError
from x2.envspec.mesh_objects import ObjectFiles, check_display_name, is_current, object_files, write_object
from x2.meshes.build import MeshObject, MeshOptions, build_object, cache_key
from x2.sim.mujoco.recorded_xml import compile_world
from x2.sim.mujoco.textures import texture_name

TIMESTEP = 1 / 480  # as x2's worlds (30 Hz control, 16 substeps)
DROP_HEIGHT = 0.005  # m above the table
DROP_SECONDS = 1.0
MAX_SINK = 0.003  # m below the table top the object's lowest point may rest (contact softness: ~1 mm)
MAX_DRIFT = 0.03  # m the object may slide or roll from where it landed
MAX_SPEED = 0.02  # m/s at the end: at rest
MAX_SPIN = 0.5  # rad/s at the end


@dataclass(frozen=True)
class DropTest:
    sink: float  # m, how far the lowest piece rests below the table top (negative: above)
    drift: float  # m, horizontal distance from where it was dropped
    speed: float  # m/s at the end
    spin: float  # rad/s at the end
    tilt: float  # rad, how far it turned from upright


@dataclass(frozen=True)
class Added:
    files: ObjectFiles
    unchanged: bool  # the files were current: nothing was made
    made: MeshObject | None = None
    drop: DropTest | None = None


def drop_test(xml: str, where: str, texture: bytes | None = None) -> DropTest:
    """Compile the object alone (as a world read from a file, its texture carried as a world carries it), then
    drop it on a table and watch it settle."""
    child = mujoco.MjSpec.from_string(xml)
    textures = {}
    if texture is not None:  # (the MJCF names NAME.png beside it: a world names the image by its digest)
        textures = {texture_name(texture): texture}
        for tex in child.textures:
            tex.file = texture_name(texture)
        child.assets = textures
    compile_world(child.to_xml(), where, textures)
    world = mujoco.MjSpec()
    world.assets = textures
    world.option.timestep = TIMESTEP
    world.worldbody.add_geom(name="table", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.4, 0.4, 0.02], pos=[0, 0, -0.02],
                             condim=4, friction=[0.9, 0.01, 0.001])
    frame = world.worldbody.add_frame(pos=[0, 0, DROP_HEIGHT])
    world.attach(child, frame=frame, prefix="o/")
    world.body("o/object").add_freejoint(name="free")
    model = world.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    start = data.qpos[:3].copy()
    for _ in range(round(DROP_SECONDS / TIMESTEP)):
        mujoco.mj_step(model, data)
    if not np.isfinite(data.qpos).all():
        raise SpecError(where, None, "mesh", "an object whose simulation diverged when dropped on a table",
                        "an object that comes to rest (check --scale and --mass)")
    pieces = [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.body("o/object").id
              and model.geom_contype[g]]
    lowest = min(_lowest_point(model, data, g) for g in pieces)
    up = data.xmat[model.body("o/object").id].reshape(3, 3)[:, 2]
    return DropTest(sink=-lowest, drift=float(np.linalg.norm(data.qpos[:2] - start[:2])),
                    speed=float(np.linalg.norm(data.qvel[:3])), spin=float(np.linalg.norm(data.qvel[3:6])),
                    tilt=float(np.arccos(np.clip(up[2], -1.0, 1.0))))


def _lowest_point(model: mujoco.MjModel, data: mujoco.MjData, geom: int) -> float:
    mesh = int(model.geom_dataid[geom])
    start, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
    vertices = model.mesh_vert[start:start + count].astype(np.float64)
    world = vertices @ data.geom_xmat[geom].reshape(3, 3).T + data.geom_xpos[geom]
    return float(world[:, 2].min())


def check_drop(test: DropTest, where: str) -> None:
    problems = [(test.sink > MAX_SINK, f"sank {test.sink * 1000:.1f} mm into the table"),
                (test.drift > MAX_DRIFT, f"rolled or slid {test.drift * 100:.1f} cm away"),
                (test.speed > MAX_SPEED or test.spin > MAX_SPIN,
                 f"still moving after {DROP_SECONDS:g} s ({test.speed:.2f} m/s, {test.spin:.1f} rad/s)")]
    for failed, what in problems:
        if failed:
            raise SpecError(where, None, "mesh", f"an object that {what} when dropped on a table",
                            "an object that rests where it is put (a stable bottom face; check --scale and --mass)")


STAGES = ("convex pieces", "drop test", "writing")


def add_mesh_object(path: Path, options: MeshOptions, stage: Callable[[int, str], None] | None = None) -> Added:
    """Make, check and write user object `options.name` from the mesh at `path` (nothing when current);
    `stage(i, name)` is told as each of `STAGES` starts."""
    files = object_files(options.name)
    check_display_name(options.display)
    key = cache_key(path, options)
    if is_current(files, key):
        return Added(files=files, unchanged=True)
    tell = stage or (lambda i, name: None)
    tell(0, STAGES[0])
    made = build_object(path, options, key)
    tell(1, STAGES[1])
    test = drop_test(made.text.xml, str(path), made.texture)
    check_drop(test, str(path))
    tell(2, STAGES[2])
    write_object(files, made.text.xml, made.text.yaml, made.texture)
    return Added(files=files, unchanged=False, made=made, drop=test)
