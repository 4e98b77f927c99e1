"""The green booth: physics options, chroma-green room, table, fixed lights and the front camera.

The room is centred on the table, floor at z = 0, with no ceiling (the lights hang where it would be).
Walls and floor use a matte material so the chroma green stays uniform for keying. Lighting is fixed:
nothing here is randomised, so scenery variants change only what they are asked to.
"""

from __future__ import annotations

import math

import mujoco

from x2.envspec.env import FILL_LIGHT_RATIO, KEY_LIGHT_DIRECTION, BoothSpec

TABLE_TOP_THICKNESS = 0.04  # m, a laminated tabletop
TABLE_LEG_HALF = 0.025  # m, square steel legs
TABLE_LEG_INSET = 0.06  # m from the table edge
WALL_HALF_THICKNESS = 0.02  # m

# The front camera stands behind and above the robot's head, looking over it at the table like
# ManiParena's front view; position and pitch chosen by eye from /tmp/x2_front.png.
FRONT_CAMERA_POS = (-0.25, 0.0, 2.1)
FRONT_CAMERA_PITCH = math.radians(55.0)  # down from horizontal
FRONT_CAMERA_FOVY = 50.0

# Off: a chroma-key booth is lit flat to keep shadows off the green, and on a CPU renderer shadows cost
# 2.5-3x per frame (llvmpipe, 3 cameras at 480x640: ~260-340 ms with a key-light shadow, ~100 ms without).
KEY_LIGHT_SHADOWS = False

CONTACT_TIMECONST = 0.005  # s, every contact's stiffness (set_options)

_BOX = mujoco.mjtGeom.mjGEOM_BOX


def _matte(spec: mujoco.MjSpec, name: str, rgba: tuple[float, float, float, float]) -> str:
    spec.add_material(name=name, rgba=list(rgba), specular=0.0, shininess=0.0, reflectance=0.0)
    return name


def set_options(spec: mujoco.MjSpec, booth: BoothSpec) -> None:
    spec.option.timestep = booth.timestep
    # implicitfast integrates the position servos' damping implicitly: stiff arm gains stay stable at 480 Hz.
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    # Elliptic friction cones + impratio hold grasped fruit without the slow creep of pyramidal cones
    # (checked by the grasp-and-lift test in tests/test_sim_mujoco_models.py).
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    # Every contact equally stiff, whatever its geoms say. MuJoCo's default softness (solref 0.02 s, solimp
    # 0.9..0.95) lets a fruit rest 4-5 mm deep in the microwave floor and a 25 N squeeze push a pad 6 mm into
    # it: contacts the world never has, which `x2 datasets validate --physics` flags above 5 mm. A time
    # constant of 0.005 s (2.4 x the 1/480 s step; MuJoCo's stability floor is 2 x) with impedance up to
    # 0.99 keeps the same grasps, doors and placements under 1 mm (measured on fruit_in_microwave).
    spec.option.enableflags |= int(mujoco.mjtEnableBit.mjENBL_OVERRIDE)
    spec.option.o_solref = [CONTACT_TIMECONST, 1.0]
    spec.option.o_solimp = [0.95, 0.99, 0.001, 0.5, 2.0]
    # A dim headlight only fills the shadows; the booth's own lights do the lighting.
    spec.visual.headlight.ambient = [0.15, 0.15, 0.15]
    spec.visual.headlight.diffuse = [0.15, 0.15, 0.15]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    # Offscreen buffer large enough for 720p renders.
    spec.visual.global_.offwidth = 1280
    spec.visual.global_.offheight = 960
    # Map distances are fractions of the model extent (~7.5 m, set by the booth). If shadows are switched
    # on (KEY_LIGHT_SHADOWS), the shadow map only needs to cover the table (0.3 x extent ~ 2.3 m), which
    # keeps a 2048 map sharp.
    spec.visual.quality.shadowsize = 2048
    spec.visual.map.shadowclip = 0.3
    # The default near plane (1 % of the extent) would cut the fingers, 5-8 cm away, out of the wrist camera.
    spec.visual.map.znear = 0.002
    spec.visual.map.zfar = 10.0


def add_room(spec: mujoco.MjSpec, booth: BoothSpec) -> None:
    cx, cy = booth.table_center
    hx, hy, hz = booth.booth_half_size
    wall = _matte(spec, "booth_wall", booth.wall_rgba)
    floor = _matte(spec, "booth_floor", booth.floor_rgba)
    world = spec.worldbody
    world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[hx, hy, 0.05], pos=[cx, cy, 0.0],
                   material=floor)
    t = WALL_HALF_THICKNESS
    walls = {
        "wall_front": ([cx + hx + t, cy, hz], [t, hy, hz]),
        "wall_back": ([cx - hx - t, cy, hz], [t, hy, hz]),
        "wall_left": ([cx, cy + hy + t, hz], [hx + 2 * t, t, hz]),
        "wall_right": ([cx, cy - hy - t, hz], [hx + 2 * t, t, hz]),
    }
    for name, (pos, size) in walls.items():
        # Solid like the table (MJCF default masks): a dropped or thrown object, or a robot mounted nearer
        # a wall, stops there. Each wall is a static body of its own: in the world body their 3 m extents
        # make the world's bounding box span the booth, so every moving body passes the broadphase against
        # all world geoms. mj_collision on fruit_in_microwave at home (CPU time, one interleaved run):
        # 8.7 us with the walls out of collision, 15.1 us with them in the world body, 10.9 us as bodies.
        world.add_body(name=name).add_geom(name=name, type=_BOX, pos=pos, size=size, material=wall)


def add_table(spec: mujoco.MjSpec, booth: BoothSpec) -> None:
    cx, cy = booth.table_center
    hx, hy = booth.table_half_size
    top_z = booth.table_height
    rgba = list(booth.table_rgba)
    world = spec.worldbody
    world.add_geom(name="table_top", type=_BOX, size=[hx, hy, TABLE_TOP_THICKNESS / 2],
                   pos=[cx, cy, top_z - TABLE_TOP_THICKNESS / 2], rgba=rgba)
    leg_h = (top_z - TABLE_TOP_THICKNESS) / 2
    for i, (sx, sy) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        x = cx + sx * (hx - TABLE_LEG_INSET)
        y = cy + sy * (hy - TABLE_LEG_INSET)
        world.add_geom(name=f"table_leg{i}", type=_BOX, size=[TABLE_LEG_HALF, TABLE_LEG_HALF, leg_h],
                       pos=[x, y, leg_h], rgba=[0.55, 0.55, 0.57, 1.0])
    world.add_site(name="table_surface", pos=[cx, cy, top_z], size=[hx, hy, 0.001],
                   type=_BOX, group=4, rgba=[1, 1, 1, 0.1])


def add_lights(spec: mujoco.MjSpec, booth: BoothSpec) -> None:
    cx, cy = booth.table_center
    height = 2 * booth.booth_half_size[2]
    k = booth.light_intensity
    world = spec.worldbody
    directional = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    # Key light from above and slightly beyond the table (the only one that may cast shadows); two
    # weaker fills from the robot's left and right keep the green walls evenly lit.
    world.add_light(name="key", type=directional, pos=[cx + 0.4, cy, height], dir=list(KEY_LIGHT_DIRECTION),
                    diffuse=[k, k, k], specular=[0.1, 0.1, 0.1], ambient=[0.25, 0.25, 0.25],
                    castshadow=KEY_LIGHT_SHADOWS)
    for name, sy in (("fill_left", 1.0), ("fill_right", -1.0)):
        world.add_light(name=name, type=directional, pos=[cx - 0.8, cy + sy * 1.0, height - 0.4],
                        dir=[0.6, -sy * 0.6, -0.8], diffuse=[FILL_LIGHT_RATIO * k] * 3, specular=[0.0] * 3,
                        castshadow=False)


def add_front_camera(spec: mujoco.MjSpec) -> None:
    c, s = math.cos(FRONT_CAMERA_PITCH), math.sin(FRONT_CAMERA_PITCH)
    # Looking along +x pitched down: image right = -y, image up = (sin, 0, cos).
    cam = spec.worldbody.add_camera(name="front", pos=list(FRONT_CAMERA_POS), fovy=FRONT_CAMERA_FOVY)
    cam.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    cam.alt.xyaxes = [0.0, -1.0, 0.0, s, 0.0, c]


def add_booth(spec: mujoco.MjSpec, booth: BoothSpec) -> None:
    """Everything in the booth except the robot and the objects."""
    set_options(spec, booth)
    add_room(spec, booth)
    add_table(spec, booth)
    add_lights(spec, booth)
    add_front_camera(spec)
