"""`x2 export`: the group, and the options every exporter shares. Each format's command lives in its
own module (export_lerobot, export_formats) and registers itself on `app`."""

from __future__ import annotations

from typing import Annotated

import typer

from x2.cli._common import typer_group
from x2.datasets.select import Selection, parse_episode_list

app = typer_group(
    "export",
    help="Export finished episodes to what policy trainers read: LeRobot (v3.0), zarr (diffusion policy), "
         "robomimic / Isaac Lab HDF5. Every export is built beside its target, read back with the "
         "consumer's own reader and only then renamed into place.",
    examples="  x2 export lerobot\n\n  x2 export zarr --out exports/fruit.zarr --success-only\n\n"
             "  x2 export hdf5 fruit_in_microwave --out exports/fruit.hdf5 --split train",
)

DatasetArg = Annotated[str | None, typer.Argument(
    help="Dataset path or name under ./data (default: the last one used).", show_default=False)]
SuccessOnly = Annotated[bool, typer.Option("--success-only", help="Only episodes whose task succeeded.")]
SourceOpt = Annotated[list[str] | None, typer.Option(
    "--source", help="Only episodes from this source (teleop, synth, augment, scripted); repeatable.",
    show_default=False)]
SplitOpt = Annotated[str | None, typer.Option("--split", help="Only episodes of this split (train, val, ...).",
                                              show_default=False)]
EpisodesOpt = Annotated[str | None, typer.Option(
    "--episodes", help="Only these episode indices, e.g. 0-9,12.", show_default=False)]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an existing target.")]


def selection(success_only: bool, source: list[str] | None, split: str | None,
              episodes: str | None) -> Selection:
    return Selection(success_only=success_only, sources=tuple(source or ()), split=split,
                     episodes=None if episodes is None else parse_episode_list(episodes))
