"""Build the MuJoCo world for an EnvSpec: robot + grippers, green booth, and the scene's objects.

Names in the compiled model (the backend and the dataset store rely on them):

- robot: exactly as in its MJCF (``left_j1`` ... ``right_j6``, actuators of the same names, sites
  ``left_flange`` / ``right_flange``, camera ``head``);
- grippers: prefixed ``<arm>_`` (``left_finger_a``, actuator ``left_gripper``, site ``left_tcp``,
  camera ``left_wrist``);
- booth: geoms ``floor``, ``table_top``, ``wall_*`` (each wall in a static body of the same name),
  lights ``key`` / ``fill_*``, camera ``front``, site ``table_surface``;
- objects: everything prefixed ``<instance>/`` (body ``microwave/object``, joint
  ``microwave/door_hinge``, site ``microwave/cavity``); free assets get a free joint
  ``<instance>/free``, welded assets none.

Every object is attached at its placement, welded or free, so the world XML is the scene: a model
compiled from it has the welded objects where they stand and the free ones there at ``qpos0``. The
backend compiles the model it steps from exactly this XML text (`world_xml`), which is what an
episode stores, so a reader that compiles the stored XML gets the stepped model bit for bit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

import mujoco

from x2.base.errors import SpecError
from x2.envspec.env import AssetSpec, EnvSpec, ObjectInstance
from x2.envspec.source import display_path
from x2.sim.layout import Placement
from x2.sim.mujoco.booth import add_booth
from x2.sim.mujoco.calibrated import check_stable
from x2.sim.mujoco.robot import load_mjcf, robot_mjcf_spec
from x2.sim.mujoco.textures import carry_textures

ASSET_ROOT_BODY = "object"


def object_prefix(instance: str) -> str:
    return f"{instance}/"


def object_body(instance: str) -> str:
    return f"{instance}/{ASSET_ROOT_BODY}"


def free_joint(instance: str) -> str:
    return f"{instance}/free"


def initial_pose(obj: ObjectInstance, asset: AssetSpec) -> tuple[float, float, float, float]:
    """(x, y, z, yaw) of the asset origin when no layout is given: its fixed pose or its region's centre."""
    if obj.pose is not None:
        return obj.pose
    if obj.region is not None:
        r = obj.region
        yaw = 0.5 * (r.yaw_range[0] + r.yaw_range[1])
        return (r.center[0], r.center[1], r.z + asset.height, yaw)
    raise SpecError(None, None, f"objects.{obj.name}", "neither pose nor region",
                    "a pose (x, y, z, yaw) or a region")


def yaw_quat(yaw: float) -> list[float]:
    """The quaternion (w x y z) of a turn by `yaw` about the world's z axis."""
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def add_object(spec: mujoco.MjSpec, obj: ObjectInstance, asset: AssetSpec, place: Placement | None = None,
               textures: dict[str, bytes] | None = None) -> mujoco.MjsBody:
    """Attach one asset under the world at `place` (default: its initial pose); free assets get a free joint. The
    images it carries are added to `textures` (for the caller to give the world once every object is in: MuJoCo's
    attach renames a child's images by its prefix), else to the world's own."""
    x, y, z, yaw = place.as_list() if place is not None else initial_pose(obj, asset)
    child = load_mjcf(asset.mjcf, f"asset {asset.name!r}")
    if child.body(ASSET_ROOT_BODY) is None:
        bodies = [b.name for b in child.worldbody.bodies]
        raise SpecError(str(asset.mjcf), None, "worldbody", f"top-level bodies {bodies}",
                        f"one top-level body named {ASSET_ROOT_BODY!r}")
    # an object made from a textured mesh: its images travel with the world, named by digest (x2.sim.mujoco.textures)
    carried = carry_textures(child, asset.mjcf)
    frame = spec.worldbody.add_frame(pos=[x, y, z], quat=yaw_quat(yaw))
    spec.attach(child, frame=frame, prefix=object_prefix(obj.name))
    if textures is not None:
        textures.update(carried)
    elif carried:
        spec.assets = {**spec.assets, **carried}
    body = spec.body(object_body(obj.name))
    if asset.free:
        body.add_freejoint(name=free_joint(obj.name))
    return body


def build_world(env: EnvSpec, chosen: Mapping[str, AssetSpec],
                layout: Mapping[str, Placement] | None = None) -> mujoco.MjSpec:
    """The complete world spec; ``chosen`` maps instance names to the drawn asset (default: the
    instance's first candidate), ``layout`` to their placements (default: `initial_pose`)."""
    spec = robot_mjcf_spec(env.robot)
    # Welded objects stay bodies of their own (named, with their sites), not fused into the world.
    spec.compiler.fusestatic = False
    add_booth(spec, env.booth)
    textures: dict[str, bytes] = {}
    for obj in env.objects:
        add_object(spec, obj, chosen.get(obj.name, obj.candidates[0]), (layout or {}).get(obj.name), textures)
    if textures:  # (given once all are attached: MuJoCo warns of a child without images joining a world with some)
        spec.assets = dict(sorted(textures.items()))
    return spec


_TIMESTEP = re.compile(r'(<option\b[^>]*\btimestep=")[^"]*(")')


def world_text(spec: mujoco.MjSpec, timestep: float) -> str:
    """A world spec as MJCF text, printed the one way x2 prints worlds (the recorder and replay augmentation).

    MjSpec.to_xml prints numbers with 6 significant digits; the model compiled from the text is the truth
    (so placements are quantised to that before they get here, see `Placement.quantized`). The timestep
    alone is written at full precision, so that a control tick of `substeps` steps lasts exactly 1/fps
    (1/480 s would print as 0.00208333). A recorded world read back with `MjSpec.from_string` and printed
    here compiles to the same model, array for array; its text is the same but for identity orientations
    (quat="1 0 0 0") that MuJoCo's writer spells out on bodies inside rotated frames, and a second pass
    prints the first pass's text again."""
    xml, n = _TIMESTEP.subn(lambda m: f"{m.group(1)}{timestep!r}{m.group(2)}", spec.to_xml(), count=1)
    if n != 1:
        raise SpecError(None, None, "option.timestep", "an MJCF without <option timestep>",
                        "a world whose booth sets the timestep")
    return xml


def world_xml(env: EnvSpec, chosen: Mapping[str, AssetSpec], layout: Mapping[str, Placement] | None = None) -> str:
    """The world as MJCF text, the one source the simulated model is compiled from (see `world_text`)."""
    return world_of(env, chosen, layout)[0]


def world_of(env: EnvSpec, chosen: Mapping[str, AssetSpec],
             layout: Mapping[str, Placement] | None = None) -> tuple[str, dict[str, bytes]]:
    """The world as MJCF text and the images it carries beside it (x2.sim.mujoco.textures: none but for objects
    made from textured meshes), sorted by name so that equal worlds give equal mappings."""
    check_stable(env.robot, env.booth.timestep)  # (a calibrated robot's values; nothing to do for others)
    try:
        spec = build_world(env, chosen, layout)
        return world_text(spec, env.booth.timestep), dict(sorted(spec.assets.items()))
    except ValueError as exc:  # MuJoCo's: printing the spec compiles it (a mesh file missing, a name twice)
        raise world_error(env, chosen, exc) from None


def spec_files(env: EnvSpec) -> tuple[str | None, str | None]:
    """The scene and robot files an EnvSpec was compiled from (its sources: [task,] scene, robot), as shown."""
    files = [display_path(Path(f)) for f in env.sources]
    return (files[-2], files[-1]) if len(files) >= 2 else (None, None)


def world_error(env: EnvSpec, chosen: Mapping[str, AssetSpec], exc: Exception) -> SpecError:
    """MuJoCo refusing a world built from specs, as one line naming the scene and robot files."""
    scene_file, robot_file = spec_files(env)
    problem = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    assets = ", ".join(sorted({a.name for a in chosen.values()})) or "none"
    return SpecError(scene_file, None, "<world>", f"a world MuJoCo cannot compile ({problem}) from this scene "
                     f"(assets: {assets}) and robot {robot_file or env.robot.name}",
                     "specs whose robot, gripper and asset MJCF compile into one world")
