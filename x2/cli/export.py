"""`x2 export`: the group. Each format's command lives in its own module (export_lerobot, export_formats)
and registers itself on `app`; the options they share are x2.cli.options'."""

from __future__ import annotations

from x2.cli.group_class import typer_group

app = typer_group(
    "export",
    help="Export finished episodes to what policy trainers read: LeRobot (v3.0), zarr (diffusion policy), "
         "robomimic / Isaac Lab HDF5. Every export is built beside its target, read back with the "
         "consumer's own reader and only then renamed into place.",
    examples="  x2 export lerobot\n\n  x2 export zarr --out exports/fruit.zarr --success-only\n\n"
             "  x2 export hdf5 fruit_in_microwave --out exports/fruit.hdf5 --part train",
)
