"""Draw a scenery variant's look for one episode, and restyle a recorded world with it.

A look is plain JSON (it is stored with the augmented episode, so the same look can be applied again):

    {"table":    {"rgb": [r, g, b], "texture": "none"}                      # plain, or
                 {"rgb": [..], "texture": "checker" | "gradient" | "wood" | "concrete" | "fabric",
                  "rgb2": [..], "repeat": [u, v]},
     "walls":    ... as table,
     "floor":    ... as table,
     "lighting": {"direction": [x, y, z], "colour": [r, g, b], "intensity": k, "shadows": false}}

each key present only when the variant changes that part. Numbers are rounded to LOOK_DECIMALS, so the
MJCF text (6 significant digits) prints them exactly and a world restyled from a stored look is the same
text, byte for byte.

Checker and gradient are MuJoCo's builtin patterns; wood, concrete and fabric are images x2 makes from the look
(x2/sim/mujoco/surface_images.py) and the world carries beside its text under their digest names
(x2/sim/mujoco/textures.py), so `apply_look` and `restyled_world` hand back the images the world now holds.

Restyling edits only materials, textures, geom colours and lights: never a body, joint, geom size or
pose, option or anything else the physics reads, so the restyled model steps the recorded states exactly
as the original did (tests/test_envspec_scenery.py checks kinematics, cameras and one step bit for bit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mujoco
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.envspec.env import FILL_LIGHT_RATIO
from x2.envspec.scenery import SURFACES, LightingLook, Scenery, SurfaceLook
from x2.envspec.schema import IMAGE_TEXTURES, TEXTURES
from x2.sim.mujoco.recorded_xml import world_spec
from x2.sim.mujoco.surface_images import surface_png
from x2.sim.mujoco.textures import texture_name
from x2.sim.mujoco.world import world_text

LOOK_DECIMALS = 4
SHADE = 0.6  # a textured surface without colour2 pairs its colour with this darker shade of it

# sample_look consumes exactly one uniform per entry, in this order, whatever the variant holds: a draw
# for a part the variant lacks is taken and thrown away. So the look of one part depends only on the rng
# state and that part's own block, and adding a block to a variant never changes the others' draws.
DRAW_ORDER = ("table.colour", "table.colour2", "walls.colour", "walls.colour2", "floor.colour", "floor.colour2",
              "lighting.direction", "lighting.colour", "lighting.intensity")

# The booth elements a look edits (x2/sim/mujoco/booth.py names them).
WALL_MATERIAL, FLOOR_MATERIAL, TABLE_GEOM = "booth_wall", "booth_floor", "table_top"
KEY_LIGHT, FILL_LIGHTS = "key", ("fill_left", "fill_right")
TEXTURE_SIZE = 128  # px per side of a builtin texture: sharp checks at the cameras' sizes, little to upload
_DEFAULT_GEOM_RGBA = [0.5, 0.5, 0.5, 1.0]  # MuJoCo's: a geom with this rgba shows its material's colour
_PARTS = (*SURFACES, "lighting")


def _round(values: Sequence[float] | npt.NDArray[np.float64]) -> list[float]:
    return [round(float(v), LOOK_DECIMALS) for v in values]


def _pick[T](options: Sequence[T], u: float) -> T:
    return options[min(int(u * len(options)), len(options) - 1)]  # u < 1, but u * n may round up to n


def _surface_look(surface: SurfaceLook, u_colour: float, u_colour2: float) -> dict[str, Any]:
    rgb = _round(_pick(surface.colours, u_colour))
    look: dict[str, Any] = {"rgb": rgb, "texture": surface.texture}
    if surface.texture != "none":
        rgb2 = _pick(surface.colours2, u_colour2) if surface.colours2 else [SHADE * c for c in rgb]
        look |= {"rgb2": _round(rgb2), "repeat": _round(surface.repeat)}
    return look


def _lighting_look(lighting: LightingLook, u_direction: float, u_colour: float, u_intensity: float
                   ) -> dict[str, Any]:
    lo, hi = lighting.intensity
    return {"direction": _round(_pick(lighting.directions, u_direction)),
            "colour": _round(_pick(lighting.colours, u_colour)),
            "intensity": round(lo + u_intensity * (hi - lo), LOOK_DECIMALS), "shadows": bool(lighting.shadows)}


def sample_look(variant: Scenery, rng: np.random.Generator) -> dict[str, Any]:
    """One episode's look: a colour drawn from each list, the intensity uniformly in its range.

    Consumes exactly len(DRAW_ORDER) uniforms from `rng` (see DRAW_ORDER); distractors are not drawn here."""
    u = dict(zip(DRAW_ORDER, rng.random(len(DRAW_ORDER)).tolist(), strict=True))
    look: dict[str, Any] = {}
    for name in SURFACES:
        surface: SurfaceLook | None = getattr(variant, name)
        if surface is not None:
            look[name] = _surface_look(surface, u[f"{name}.colour"], u[f"{name}.colour2"])
    if variant.lighting is not None:
        look["lighting"] = _lighting_look(variant.lighting, u["lighting.direction"], u["lighting.colour"],
                                          u["lighting.intensity"])
    return look


# ----- checking a look (it may come back from a file) ------------------------------------------------


def _bad(field: str, value: object, allowed: str) -> DatasetError:
    return DatasetError(f"look.{field}: found {value!r}; allowed: {allowed}")


def _numbers(field: str, value: Any, n: int, lo: float | None = None, hi: float | None = None) -> list[float]:
    ok = isinstance(value, list | tuple) and len(value) == n and all(
        isinstance(v, int | float) and not isinstance(v, bool) and (lo is None or v >= lo) and (hi is None or v <= hi)
        for v in value)
    if not ok:
        bounds = f" in {lo:g}..{hi:g}" if lo is not None and hi is not None else (f" > {lo:g}" if lo is not None
                                                                                   else "")
        raise _bad(field, value, f"{n} numbers{bounds}")
    return [float(v) for v in value]


def _check_keys(field: str, part: object, required: set[str]) -> None:
    if not isinstance(part, Mapping) or set(part) != required:
        found = sorted(part) if isinstance(part, Mapping) else part
        raise _bad(field, found, "a mapping with exactly the keys " + ", ".join(sorted(required)))


def _check_surface(name: str, part: Any) -> None:
    texture = part.get("texture") if isinstance(part, Mapping) else None
    if texture not in TEXTURES:
        raise _bad(f"{name}.texture", texture, "one of " + ", ".join(TEXTURES))
    _check_keys(name, part, {"rgb", "texture"} if texture == "none" else {"rgb", "texture", "rgb2", "repeat"})
    _numbers(f"{name}.rgb", part["rgb"], 3, 0.0, 1.0)
    if texture != "none":
        _numbers(f"{name}.rgb2", part["rgb2"], 3, 0.0, 1.0)
        repeat = _numbers(f"{name}.repeat", part["repeat"], 2, 0.0)
        if min(repeat) <= 0:
            raise _bad(f"{name}.repeat", part["repeat"], "2 positive numbers")


def _check_lighting(part: Any) -> None:
    _check_keys("lighting", part, {"direction", "colour", "intensity", "shadows"})
    direction = _numbers("lighting.direction", part["direction"], 3)
    if not any(direction):
        raise _bad("lighting.direction", part["direction"], "a non-zero vector")
    _numbers("lighting.colour", part["colour"], 3, 0.0, 1.0)
    _numbers("lighting.intensity", [part["intensity"]], 1, 0.0)
    if not isinstance(part["shadows"], bool):
        raise _bad("lighting.shadows", part["shadows"], "true or false")


def check_look(look: Mapping[str, Any]) -> None:
    """A look as `sample_look` makes them, else a DatasetError naming the first bad field."""
    unknown = [k for k in look if k not in _PARTS]
    if unknown:
        raise _bad(str(unknown[0]), look[unknown[0]], "only the parts " + ", ".join(_PARTS))
    for name in SURFACES:
        if name in look:
            _check_surface(name, look[name])
    if "lighting" in look:
        _check_lighting(look["lighting"])


# ----- applying a look -------------------------------------------------------------------------------


def _element[T](found: T | None, kind: str, name: str) -> T:
    if found is None:
        raise DatasetError(f"world: found no {kind} {name!r}; allowed: a green-booth world (materials "
                           f"{WALL_MATERIAL}, {FLOOR_MATERIAL}; geom {TABLE_GEOM}; lights "
                           f"{', '.join((KEY_LIGHT, *FILL_LIGHTS))})")
    return found


def _texture(spec: mujoco.MjSpec, name: str, part: Mapping[str, Any]) -> str:
    """A 2D texture named `name` (made, or updated when a look was applied before): builtin for checker and
    gradient, else x2's image of the kind, added to the spec's images (`spec.assets`) under its digest name."""
    tex = spec.texture(name) or spec.add_texture(name=name)
    tex.type = mujoco.mjtTexture.mjTEXTURE_2D
    if part["texture"] in IMAGE_TEXTURES:
        data = surface_png(part["texture"], tuple(part["rgb"]), tuple(part["rgb2"]))
        image = texture_name(data)
        spec.assets = {**spec.assets, image: data}
        tex.builtin = mujoco.mjtBuiltin.mjBUILTIN_NONE
        tex.file = image
        return name
    tex.file = ""
    tex.builtin = (mujoco.mjtBuiltin.mjBUILTIN_CHECKER if part["texture"] == "checker"
                   else mujoco.mjtBuiltin.mjBUILTIN_GRADIENT)
    tex.width = tex.height = TEXTURE_SIZE
    tex.rgb1, tex.rgb2 = list(part["rgb"]), list(part["rgb2"])
    return name


def _style_material(spec: mujoco.MjSpec, material: mujoco.MjsMaterial, part: Mapping[str, Any]) -> None:
    """Plain: the material's colour. Textured: a white material (the texture's colours show unmodulated)."""
    textured = part["texture"] != "none"
    rgb = part["rgb"] if not textured else [1.0, 1.0, 1.0]
    material.rgba = [*rgb, float(material.rgba[3])]
    role = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)
    material.textures[role] = _texture(spec, f"scenery_{material.name}", part) if textured else ""
    if textured:
        material.texrepeat = list(part["repeat"])


def _style_table(spec: mujoco.MjSpec, geom: mujoco.MjsGeom, part: Mapping[str, Any]) -> None:
    """The table top has a plain geom colour; a texture needs a material of its own."""
    if part["texture"] == "none":
        geom.rgba = [*part["rgb"], 1.0]
        geom.material = ""
        return
    name = f"scenery_{TABLE_GEOM}"
    material = spec.material(name) or spec.add_material(name=name)
    _style_material(spec, material, part)
    geom.material = name
    geom.rgba = _DEFAULT_GEOM_RGBA


def _style_lights(key: mujoco.MjsLight, fills: Sequence[mujoco.MjsLight], part: Mapping[str, Any]) -> None:
    colour = np.asarray(part["colour"], np.float64) * float(part["intensity"])
    key.dir = list(part["direction"])
    key.diffuse = _round(colour)
    key.castshadow = bool(part["shadows"])
    for fill in fills:  # the fills keep their directions and their share of the key light
        fill.diffuse = _round(FILL_LIGHT_RATIO * colour)


def apply_look(spec: mujoco.MjSpec, look: Mapping[str, Any]) -> dict[str, bytes]:
    """Restyle a world spec (e.g. `MjSpec.from_string(model_xml)`) in place; the empty look changes nothing.
    Returns the images the restyled world carries (`spec.assets`: those it had, and the look's).

    walls -> material booth_wall, floor -> material booth_floor, table -> geom table_top (a material of
    its own when textured), lighting -> light key (direction, diffuse = colour x intensity, shadows) and
    the fills' diffuse (FILL_LIGHT_RATIO x the key's). Checks the look and the world before editing."""
    check_look(look)
    materials = {"walls": WALL_MATERIAL, "floor": FLOOR_MATERIAL}
    targets = {s: _element(spec.material(m), "material", m) for s, m in materials.items() if s in look}
    table = _element(spec.geom(TABLE_GEOM), "geom", TABLE_GEOM) if "table" in look else None
    lights = ([_element(spec.light(n), "light", n) for n in (KEY_LIGHT, *FILL_LIGHTS)] if "lighting" in look
              else [])
    for surface, material in targets.items():
        _style_material(spec, material, look[surface])
    if table is not None:
        _style_table(spec, table, look["table"])
    if lights:
        _style_lights(lights[0], lights[1:], look["lighting"])
    return _carried(spec)


def _carried(spec: mujoco.MjSpec) -> dict[str, bytes]:
    """The images the world's textures name (an image a look replaced is not carried on)."""
    named = {t.file for t in spec.textures if t.file}
    return {k: v for k, v in sorted(spec.assets.items()) if k in named or not k.startswith("tex-")}


def restyled_world(model_xml: str, look: Mapping[str, Any], source: str = fmt.MODEL_XML_ATTR,
                   textures: Mapping[str, bytes] | None = None) -> tuple[str, dict[str, bytes]]:
    """A recorded world's MJCF text (read from the file `source` names, so checked first; `textures` the images
    it carries) with `look` applied, printed as the recorder prints worlds, and the images it now carries."""
    spec = world_spec(model_xml, source, textures)
    images = apply_look(spec, look)
    spec.assets = images
    return world_text(spec, spec.option.timestep), images
