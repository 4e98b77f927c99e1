"""`x2 datasets view EPISODE`: a rerun recording of one episode, opened in the viewer or written to a file."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from x2.cli._common import console, open_dataset_arg
from x2.cli.datasets import app
from x2.cli.options import DatasetOpt, EpisodeArg
from x2.cli.progress import progress
from x2.files.staging import staged
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.sim.camera import ImageSize, parse_cameras
from x2.view import (
    VIEWER_PORT,
    default_rrd_path,
    plan_cameras,
    record_rerun,
    wants_viewer,
)


@app.command("view", epilog="Examples: x2 datasets view 3\n\n"
             "  x2 datasets view 0 --dataset fruit_in_microwave --out ep0.rrd --cameras head,left_wrist --size 240x320")
def view_command(
    episode: EpisodeArg,
    dataset: DatasetOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write the recording here (default without a viewer: "
                            "exports/<dataset>-episode_N.rrd).", show_default=False)] = None,
    cameras: Annotated[str | None, typer.Option(
        "--cameras", help="Comma-separated cameras (default: the stored streams, else "
                          f"{','.join(DEFAULT_CAMERAS)}).", show_default=False)] = None,
    size: Annotated[str | None, typer.Option(
        "--size", help=f"HxW of rendered cameras (default: the stored size, else {DEFAULT_SIZE}).",
        show_default=False)] = None,
    spawn: Annotated[bool, typer.Option(
        "--spawn", help="Open the rerun viewer (where a display exists) even with --out.")] = False,
    port: Annotated[int, typer.Option(
        "--port", min=1, max=65535, help="The viewer's gRPC port (a viewer already listening there is reused).",
    )] = VIEWER_PORT,
) -> None:
    """A rerun recording of one episode: camera streams, qpos and action per joint, object and tcp poses,
    the current subtask and the DAG events, on frame and sim-time timelines.

    With a display (DISPLAY set) and no --out, or with --spawn, the rerun viewer opens. Otherwise the
    recording is written to a file, complete or not at all, and the line to open it is printed.
    """
    ds = open_dataset_arg(dataset)
    viewer = wants_viewer(spawn, out, os.environ)
    if spawn and not viewer:
        console.print("no display (DISPLAY is not set): writing a file instead of opening the viewer")
    target = out if out is not None else (None if viewer else default_rrd_path(ds.name, episode))
    wanted_size = ImageSize.parse(size) if size is not None else None
    wanted_cameras = parse_cameras(cameras)
    with ds.load(episode) as ep:
        plan = plan_cameras(ep, wanted_cameras, wanted_size)
        label = f"episode {ep.index}: " + (f"rendering {', '.join(plan.rendered)}" if plan.rendered else "logging")
        with progress(label, "frames") as update:
            def advance(done: int) -> None:
                update(done, ep.frames)

            if target is None:
                summary = record_rerun(ep, dataset=ds.name, plan=plan, spawn=True, port=port, on_frame=advance)
            else:
                with staged(target, overwrite=True) as tmp:  # a view is derived: a new one replaces the old
                    summary = record_rerun(ep, dataset=ds.name, plan=plan, path=tmp, spawn=viewer, port=port,
                                             on_frame=advance)
    table = Table(title=f"episode {episode}: {summary.frames} frames", title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("logged")
    table.add_row("cameras", ", ".join(f"{c} ({how})" for c, how in summary.cameras.items()) or "none")
    table.add_row("joint curves", str(summary.joints))
    table.add_row("poses", ", ".join(p.removeprefix("world/") for p in summary.poses) or "none")
    table.add_row("subtasks", ", ".join(summary.subtasks) or "no labels")
    table.add_row("events", str(summary.events))
    console.print(table)
    if viewer:
        console.print(f"sent to the rerun viewer on port {port}")
    if target is not None:
        console.print(f"wrote {target}; open it with: rerun {shlex.quote(str(target))}", soft_wrap=True)
