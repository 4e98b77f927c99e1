"""`x2 objects ...`: make a user object from a mesh file; draw objects as a contact sheet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from x2.cli._common import console
from x2.cli.group_class import typer_group
from x2.cli.progress import progress

objects_app = typer_group(
    "objects", "Make objects from your own mesh files (OBJ, STL, GLB, PLY) into ./specs/objects/.",
    "  x2 objects add mug.obj --name my_mug --display 'red mug'\n\n"
    "  x2 objects add part.stl --name bracket --scale 0.001 --mass 0.12\n\n"
    "  x2 objects sheet --out objects.png",
)


@objects_app.command("add")
def objects_add(
    mesh: Annotated[Path, typer.Argument(help="the mesh file: .obj (with its .mtl and textures), .stl, .glb, .ply",
                                         dir_okay=False)],
    name: Annotated[str, typer.Option("--name", help="the object's name in scenes and tasks")],
    scale: Annotated[float, typer.Option("--scale", help="file units -> metres (0.001 for a file in mm)")] = 1.0,
    up: Annotated[str, typer.Option("--up", help="the file's axis that points up: z, y (glTF, many OBJ files), x, "
                                    "-x, -y or -z")] = "z",
    mass: Annotated[float | None, typer.Option("--mass", help="kg (else density x volume)")] = None,
    density: Annotated[float | None, typer.Option("--density", help="kg/m^3 (default 500: between wood and "
                                                  "plastic); a mesh with holes needs --mass instead")] = None,
    display: Annotated[str | None, typer.Option("--display", help="what instructions call it, e.g. 'red mug'")] = None,
    threshold: Annotated[float, typer.Option("--threshold", help="CoACD's concavity threshold: lower makes more, "
                                             "tighter convex pieces (at most 16)")] = 0.05,
) -> None:
    """Make object NAME from a mesh file: convex collision pieces (CoACD), a decimated visual mesh, mass and
    inertia, all inline in ./specs/objects/NAME.xml + NAME.yaml (so an episode still rebuilds its world from the
    file alone). It is compiled and dropped on a table before it is written; the same file with the same options
    again does nothing. A mesh textured by one image keeps it as NAME.png (at most 512 pixels a side) with UVs on
    its visual mesh, and every episode of a world that holds it carries the image; other textures become the
    object's mean colour.

    Example: [cyan]x2 objects add mug.obj --name my_mug --display 'red mug'[/cyan]

    A part drawn in millimetres, of known weight: [cyan]x2 objects add part.stl --name bracket --scale 0.001
    --mass 0.12[/cyan]
    """
    from x2.meshes.build import MeshOptions
    from x2.sim.mujoco.mesh_object import STAGES, add_mesh_object
    from x2.sim.mujoco.textures import png_size

    options = MeshOptions(name=name, scale=scale, up=up, mass=mass, density=density, display=display,
                          threshold=threshold)
    with progress(f"object {name}") as update:
        added = add_mesh_object(mesh, options, lambda i, stage: update(i, len(STAGES), stage=stage))
    shown = f"{added.files.xml} and {added.files.yaml.name}"
    if added.unchanged or added.made is None or added.drop is None:
        console.print(escape(f"{name}: unchanged ({shown} were made from the same file and options)"))
        return
    made, drop, props = added.made, added.drop, added.made.props
    i = props.inertia + 0.0  # (no "-0")
    table = Table(title=f"object {name} from {mesh.name}", title_justify="left", show_header=False)
    for key, value in (
        ("convex pieces", f"{len(made.pieces)} ({', '.join(str(len(p.vertices)) for p in made.pieces)} vertices)"),
        ("visual mesh", f"{made.visual_vertices} vertices, rgba {' '.join(f'{c:g}' for c in made.rgba)}"),
        ("texture", "none (the mean colour above)" if made.texture is None else
         "{} x {} px PNG, {:.0f} KB, in {}".format(*(png_size(made.texture) or (0, 0)), len(made.texture) / 1024,
                                                  added.files.png.name)),
        ("bounding box", " x ".join(f"{e * 1000:.1f}" for e in made.extents) + " mm"),
        ("watertight", "yes" if made.watertight else "no (inertia from the convex pieces)"),
        ("mass", f"{props.mass:.4g} kg" + (f" ({props.mass / props.volume:.4g} kg/m^3)" if props.volume else "")),
        ("centre of mass", " ".join(f"{c * 1000 + 0.0:.1f}" for c in props.com) + " mm"),
        ("inertia", f"diag {i[0, 0]:.3g} {i[1, 1]:.3g} {i[2, 2]:.3g}, off {i[0, 1]:.2g} {i[0, 2]:.2g} {i[1, 2]:.2g}"
                    " kg m^2"),
        ("drop test", f"rests {drop.sink * 1000:+.2f} mm into the table, moved {drop.drift * 1000:.1f} mm, "
                      f"tilted {drop.tilt:.3f} rad"),
        ("written", shown),
    ):
        table.add_row(key, escape(value))
    console.print(table)
    if made.missing:
        console.print(escape(f"note: {mesh.name} names {', '.join(made.missing)}, not found beside it: its colour is "
                             "the file's default"))


@objects_app.command("sheet")
def objects_sheet(
    names: Annotated[list[str] | None, typer.Argument(help="objects to draw (default: every object `x2 objects add` "
                                                      "made in ./specs/objects)")] = None,
    out: Annotated[Path, typer.Option("--out", help="the PNG to write", dir_okay=False)] = Path("objects.png"),
    size: Annotated[int, typer.Option("--size", help="pixels a side of each picture", min=32, max=1024)] = 200,
    columns: Annotated[int, typer.Option("--columns", help="pictures a row", min=1, max=20)] = 5,
) -> None:
    """Draw objects, each alone on a grey table as an episode's cameras see it (its texture included), named, in
    one PNG grid: a contact sheet to check what `x2 objects add` made.

    Example: [cyan]x2 objects sheet --out objects.png[/cyan]

    Some objects, x2's own among them: [cyan]x2 objects sheet my_mug block plate --size 160[/cyan]
    """
    from x2.base.errors import NotFoundError
    from x2.render.object_sheet import made_objects, object_sheet
    from x2.sim.camera import ImageSize

    chosen = list(names) if names else made_objects()
    if not chosen:
        raise NotFoundError("objects: found none made by `x2 objects add` in ./specs/objects; allowed: object "
                            "names, or `x2 objects add PATH --name NAME` first")
    with progress("objects sheet") as update:
        written = object_sheet(chosen, out, ImageSize(size, size), columns,
                               lambda i, name: update(i, len(chosen), stage=name))
    console.print(escape(f"{len(chosen)} object{'s' * (len(chosen) != 1)}: {written}"))
