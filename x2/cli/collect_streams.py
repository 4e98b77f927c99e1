"""The collectors' camera streams (`x2 collect waypoints | teleop`, `x2 synth`, each `--streams rgb,depth,...`): each
episode a collector saves gets the streams `x2 render --streams` would draw into it afterwards, drawn by that same
render pass (x2/render/dataset.py) once the recording ends, so the files are those the collector then `x2 render`
make.

Not per tick: collectors record states (docs/format.md, "Camera streams"), and a frame costs ~50 ms of CPU a camera
here, more than a 30 Hz teleop tick has. The request is checked against the world before anything is recorded."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from x2.base.errors import X2Error
from x2.cli._common import console
from x2.cli.progress import progress
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.render import render_dataset
from x2.sim.camera import ImageSize, StreamRequest, parse_cameras
from x2.sim.streams import STREAMS, parse_streams

StreamsOpt = Annotated[str | None, typer.Option(
    "--streams", help=f"Render these streams of each saved episode's cameras into it once recording ends, of "
                      f"{', '.join(STREAMS)}, comma-separated: the files `x2 render --streams` would make "
                      "(default: none; states only, as always).", show_default=False)]
CamerasOpt = Annotated[str | None, typer.Option(
    "--cameras", help=f"With --streams: the cameras, comma-separated (default: {','.join(DEFAULT_CAMERAS)}).",
    show_default=False)]
SizeOpt = Annotated[str | None, typer.Option(
    "--size", help=f"With --streams: the image size HxW (default: {DEFAULT_SIZE}).", show_default=False)]


def stream_request(streams: str | None, cameras: str | None, size: str | None) -> StreamRequest | None:
    """The options parsed (one line for a stream x2 does not have); None without --streams, which the other two
    need."""
    if streams is None:
        for option, given in (("--cameras", cameras), ("--size", size)):
            if given is not None:
                raise X2Error(f"{option}: found {given!r} without --streams; allowed: with --streams, the streams "
                              "to render into each saved episode (e.g. --streams rgb)")
        return None
    return StreamRequest(parse_streams(streams), parse_cameras(cameras) or DEFAULT_CAMERAS,
                         DEFAULT_SIZE if size is None else ImageSize.parse(size))


def render_saved(path: Path, request: StreamRequest, episodes: Sequence[int], allow_eval: bool) -> None:
    """Draw `request` into the saved `episodes` of the dataset at `path` (closed by its collector first)."""
    if not episodes:
        return
    # an episode a worker, up to the machine's cores: the recording is over, and the files are the same bytes
    # whatever the number of workers (x2 render's guarantee)
    workers = max(1, min(len(episodes), os.cpu_count() or 1))
    with progress("rendering", "frames") as update:
        summary = render_dataset(path, request.cameras, request.size, workers=workers, episodes=episodes,
                                 allow_eval=allow_eval, streams=request.streams,
                                 progress=lambda p: update(p.frames_done, p.frames_total))
    console.print(f"rendered {'+'.join(summary.streams)} of {', '.join(request.cameras)} at {request.size} into "
                  f"{len(summary.rendered)} episode(s) with {workers} worker(s): {summary.frames_rendered} frames in "
                  f"{summary.wall_s:.1f} s")
