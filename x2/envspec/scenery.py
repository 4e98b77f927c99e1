"""Scene `scenery:` blocks -> compiled `Scenery` for replay augmentation (and the looks a reset draws).

A scenery recomposes only a recorded world's static layer: distractor objects, the table's look, the
walls and floor (the chroma-green booth is there to be replaced) and the lighting. Unlike a scene's
collection-time `variants:` overlay it never recompiles the task; states, actions and labels of a
recorded episode stay as they are. Everything here is plain frozen data (no simulator); the look is
drawn and applied by `x2.sim.mujoco.look`.

Defaults are resolved here, from the scene's own booth, so that a compiled scenery needs nothing else:
a surface without `colour` keeps the booth's colour, lighting without `intensity` keeps the booth's.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace

from x2.base.errors import NotFoundError, X2Error
from x2.envspec import catalog
from x2.envspec.assets import load_asset
from x2.envspec.env import KEY_LIGHT_DIRECTION, BoothSpec, DistractorPool, LightingLook, Scenery, SurfaceLook
from x2.envspec.schema import RGB, DistractorsFile, LightingFile, SceneFile, SurfaceFile, parse
from x2.envspec.source import Fragment

__all__ = ["RGB", "SURFACES", "DistractorPool", "LightingLook", "Scenery", "SurfaceLook", "compile_scenery",
           "builtin_looks", "find_look", "load_scenery", "scene_booth"]

SURFACES = ("table", "walls", "floor")
# Checker repeats per face when a block gives none (a repeat is 2 x 2 squares): squares of 0.1 m on the
# 0.8 x 1.2 m table, 0.2 m on the 3.2 m floor, about 0.4 m on the walls. A gradient spans each face once.
DEFAULT_REPEAT: dict[str, tuple[float, float]] = {"table": (4.0, 6.0), "walls": (4.0, 4.0), "floor": (8.0, 8.0)}
GRADIENT_REPEAT = (1.0, 1.0)
# An image (wood, concrete, fabric: 256 px a side) once across the table top, about 1.6 m a repeat on the walls
# and 1 m on the floor: grain and weave stay sharp at the cameras' distances.
IMAGE_REPEAT: dict[str, tuple[float, float]] = {"table": (1.0, 1.0), "walls": (2.0, 2.0), "floor": (3.0, 3.0)}
WHITE: RGB = (1.0, 1.0, 1.0)
_NAME = re.compile(r"[A-Za-z0-9_-]+")
# x2's built-in looks (the textured lab): scenery blocks any scene may be drawn in when asked (`find_look`)
BUILTIN_LOOKS = catalog.PACKAGE_ROOT / "assets" / "looks" / "lab_looks.yaml"


def scene_booth(spec: SceneFile) -> BoothSpec:
    """The booth of a validated scene: its `booth:` fields over the defaults."""
    over = {f.name: v for f in fields(BoothSpec) if (v := getattr(spec.booth, f.name, None)) is not None}
    return BoothSpec(**over)


def _surface(block: SurfaceFile, booth_rgba: tuple[float, float, float, float], surface: str) -> SurfaceLook:
    repeat = block.repeat or (GRADIENT_REPEAT if block.texture == "gradient" else DEFAULT_REPEAT[surface]
                              if block.texture in ("none", "checker") else IMAGE_REPEAT[surface])
    return SurfaceLook(colours=block.colour or ((booth_rgba[0], booth_rgba[1], booth_rgba[2]),), texture=block.texture,
                       colours2=block.colour2 or (), repeat=repeat)


def _lighting(block: LightingFile, booth: BoothSpec) -> LightingLook:
    return LightingLook(directions=block.direction or (KEY_LIGHT_DIRECTION,), colours=block.colour or (WHITE,),
                        intensity=block.intensity or (booth.light_intensity, booth.light_intensity),
                        shadows=block.shadows)


def _static_assets() -> list[str]:
    """Catalog assets a distractor may be: those without joints (a distractor never moves)."""
    names = []
    for name in catalog.names("objects"):
        try:
            if not load_asset(name).joints:
                names.append(name)
        except X2Error:  # a broken user asset is reported where it is used, not in this list
            continue
    return names


def _pool(frag: Fragment, key: tuple[str, ...], block: DistractorsFile) -> DistractorPool:
    assets = []
    for i, name in enumerate(block.pool):
        try:
            asset = load_asset(name)
        except NotFoundError:
            raise frag.error((*key, "pool", i), repr(name),
                             "one of the assets without joints: " + ", ".join(_static_assets())) from None
        if asset.joints:
            raise frag.error((*key, "pool", i), f"{name!r} (articulated: joints {', '.join(asset.joints)})",
                             "a static asset, one of " + ", ".join(_static_assets()))
        assets.append(asset)
    return DistractorPool(tuple(assets), block.count)


def compile_scenery(frag: Fragment, spec: SceneFile) -> dict[str, Scenery]:
    """The scene's scenery blocks (`spec` is `frag` validated), in the order written, includes first."""
    booth = scene_booth(spec)
    booth_rgba = {"table": booth.table_rgba, "walls": booth.wall_rgba, "floor": booth.floor_rgba}
    out: dict[str, Scenery] = {}
    for name, block in spec.scenery.items():
        key = ("scenery", name)
        if not _NAME.fullmatch(name):
            raise frag.error(key, repr(name), "a name of letters, digits, '_' and '-'")
        surfaces = {s: _surface(b, booth_rgba[s], s) if (b := getattr(block, s)) else None
                    for s in SURFACES}
        out[name] = Scenery(
            name=name, split=block.split, description=block.description,
            distractors=_pool(frag, (*key, "distractors"), block.distractors) if block.distractors else None,
            table=surfaces["table"], walls=surfaces["walls"], floor=surfaces["floor"],
            lighting=_lighting(block.lighting, booth) if block.lighting else None)
    return out


def load_scenery(scene: str) -> dict[str, Scenery]:
    """The sceneries of a scene (by name, from the catalog, or a path to its YAML), inherited
    blocks included: a scene that includes green_booth.yaml has its blocks, and may override or add."""
    _path, frag = catalog.load("scenes", scene)
    return compile_scenery(frag, parse(SceneFile, frag))


def builtin_looks() -> dict[str, Scenery]:
    """x2's built-in looks (BUILTIN_LOOKS), by name: drawn only when named, never by a scene's default."""
    return load_scenery(str(BUILTIN_LOOKS))


def find_look(scene: str, name: str, option: str = "--look") -> Scenery:
    """The look `name`: the scene's own scenery block of that name, else x2's built-in one (BUILTIN_LOOKS); one
    with a table, walls, floor or lighting (its distractors are left to replay augmentation)."""
    looks = {**builtin_looks(), **load_scenery(scene)}
    usable = [n for n, v in looks.items() if any(getattr(v, p) is not None for p in (*SURFACES, "lighting"))]
    if name not in usable:
        raise X2Error(f"{option}: found {name!r}; allowed: one of {', '.join(usable)} (scene {scene}'s looks and "
                      "x2's built-in ones)")
    return replace(looks[name], distractors=None)
