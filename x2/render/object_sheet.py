"""The contact sheet of objects: each object alone (x2.sim.mujoco.object_picture), named, in one PNG grid
(x2/render/grid.py), e.g. the objects `x2 objects add` made, to see their shapes and textures at a glance."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from x2.envspec import catalog
from x2.envspec.mesh_objects import written_key
from x2.envspec.schema import AssetFile, parse
from x2.render.grid import GridRow, draw_grid, write_png
from x2.sim.camera import ImageSize
from x2.sim.mujoco.object_picture import object_picture


def made_objects() -> list[str]:
    """The user objects `x2 objects add` made (./specs/objects), sorted by name."""
    folder = catalog.user_dir("objects")
    return sorted(p.stem for p in folder.glob("*.yaml") if written_key(p) is not None) if folder.is_dir() else []


def object_mjcf(name: str) -> Path:
    """The MJCF file of object `name` (x2's own or a user's), as its asset YAML names it."""
    path, fragment = catalog.load("objects", name)
    asset: AssetFile = parse(AssetFile, fragment)
    return (path.parent / asset.mjcf).resolve()


def object_sheet(names: Sequence[str], out: Path, size: ImageSize = ImageSize(200, 200), columns: int = 5,
                 tell: Callable[[int, str], None] | None = None) -> Path:
    """Write the pictures of objects `names` (`columns` a row) to `out`; `tell(i, name)` as each is drawn."""
    tiles = []
    for i, name in enumerate(names):
        if tell is not None:
            tell(i, name)
        tiles.append(object_picture(object_mjcf(name), size))
    rows = [GridRow(tiles[k:k + columns], list(names[k:k + columns])) for k in range(0, len(tiles), columns)]
    picture, _ = draw_grid(f"{len(names)} object{'s' * (len(names) != 1)}", rows, size)
    return write_png(picture, out)
