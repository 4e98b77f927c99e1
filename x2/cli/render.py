"""`x2 render`: camera streams from recorded states into the episode files, one episode's contact sheet, or
episodes as videos."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from x2.base.errors import DatasetError
from x2.cli._common import console, open_dataset_arg
from x2.cli.options import CpusPerWorkerOpt, DatasetArg, RayOpt, RendererOpt, ray_target
from x2.cli.progress import progress
from x2.datasets import Dataset
from x2.datasets.select import parse_episode_list
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.render import RenderProgress, contact_sheet, render_dataset
from x2.render.video import VideosProgress, dataset_videos
from x2.sim.camera import ImageSize, choose_renderer, parse_cameras
from x2.sim.streams import DEFAULT_STREAMS, STREAMS, parse_streams


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


def render(
    dataset: DatasetArg = None,
    cameras: Annotated[str | None, typer.Option(
        "--cameras", help=f"Cameras, comma-separated (default: {','.join(DEFAULT_CAMERAS)}).",
        show_default=False)] = None,
    size: Annotated[str, typer.Option("--size", help="Image size HxW.")] = str(DEFAULT_SIZE),
    streams: Annotated[str | None, typer.Option(
        "--streams", help=f"Streams per camera, comma-separated, of {', '.join(STREAMS)} (default: "
                          f"{','.join(DEFAULT_STREAMS)}): depth in metres and per-object segmentation ids, with "
                          "each camera's intrinsics and per-frame extrinsics.", show_default=False)] = None,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="Worker processes.")] = 1,
    episodes: Annotated[str | None, typer.Option(
        "--episodes", help="Only these episode indices, e.g. 0-3,7.", show_default=False)] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Render again a camera stored at another size.")] = False,
    sheet: Annotated[Path | None, typer.Option(
        "--contact-sheet", help="Instead of rendering the dataset, draw one episode's cameras at its start, "
                                "subtask completions and end into this PNG (with --streams: a row per camera and "
                                "stream).",
        show_default=False)] = None,
    episode: Annotated[int | None, typer.Option(
        "--episode", help="The episode of --contact-sheet (default: the first one).", show_default=False)] = None,
    video: Annotated[Path | None, typer.Option(
        "--video", help="Instead of rendering into the files, write one MP4 per episode (of --episodes, default all) "
                        "into this folder as episode_NNNNNN.mp4: the cameras side by side (stored streams, else drawn "
                        "from the states; default: the stored ones, else the robot's) at --size, with the frame "
                        "number, the active subtask (per arm) and the failure written under them; --workers "
                        "episodes at once (not on --ray).",
        show_default=False)] = None,
    allow_eval: Annotated[bool, typer.Option(
        "--allow-eval", help="Also render episodes made in a configuration held out for evaluation.")] = False,
    ray: RayOpt = None,
    cpus_per_worker: CpusPerWorkerOpt = 1.0,
    renderer: RendererOpt = "classic",
) -> None:
    """Render camera streams from the recorded states into the episode files (state first, pixels later).

    Every episode file is rebuilt beside itself with the new streams and renamed into place; a killed
    run leaves each episode as it was or fully rendered, and running again finishes the job (episodes
    that already have the cameras at that size are skipped).

    Example: [cyan]x2 render --cameras head,left_wrist,right_wrist --size 240x320 --workers 2[/cyan]

    Depth and segmentation beside the pictures (docs/format.md, "Camera streams"):
    [cyan]x2 render --streams rgb,depth,segmentation --size 96x128[/cyan]

    Example: [cyan]x2 render --contact-sheet sheet.png --episode 0[/cyan]

    Each camera's depth and segmentation beside its pictures on the sheet, with a legend:
    [cyan]x2 render --contact-sheet sheet.png --streams rgb,depth,segmentation[/cyan]

    A video of episodes 0 and 1: [cyan]x2 render --video videos --episodes 0,1 --size 120x160[/cyan]

    On a Ray cluster, 8 renderers of one CPU each: [cyan]x2 render --workers 8 --ray auto[/cyan]

    MuJoCo 4's Filament renderer, under an X server:
    [cyan]xvfb-run -a x2 render --contact-sheet f.png --renderer filament[/cyan]
    """
    choose_renderer(renderer)
    names, image_size = parse_cameras(cameras) or DEFAULT_CAMERAS, ImageSize.parse(size)
    kinds = parse_streams(streams)
    if streams is not None and video is not None:  # (a video draws RGB only: not ignored silently)
        raise DatasetError(f"--streams: found {streams!r} with --video; allowed: --streams only when rendering into "
                           "the episode files or with --contact-sheet")
    selected = None if episodes is None else parse_episode_list(episodes)
    ds = open_dataset_arg(dataset)
    path = ds.root
    if video is not None:
        if sheet is not None:
            raise DatasetError("--video: found --contact-sheet too; allowed: one of them per run")
        _videos(ds, parse_cameras(cameras) or None, image_size, video, selected, workers)
        return
    if sheet is not None:
        _sheet(ds, names, image_size, sheet, episode, selected, kinds)
        return
    with progress("rendering", "frames") as update:
        def advance(p: RenderProgress) -> None:
            alive = "" if p.workers_alive is None else f", {p.workers_alive} workers alive"
            update(p.frames_done, p.frames_total,
                   f"{p.frames_per_s:.1f} frames/s, episode {p.episodes_done}/{p.episodes_total}{alive}")

        summary = render_dataset(path, names, image_size, workers, overwrite, progress=advance, episodes=selected,
                                 allow_eval=allow_eval, ray=ray_target(ray, cpus_per_worker), streams=kinds)
    what = "" if kinds == DEFAULT_STREAMS else f" ({'+'.join(kinds)})"
    table = Table(title=f"{', '.join(names)}{what} at {image_size}: {len(summary.rendered)} episode(s) rendered, "
                        f"{len(summary.skipped)} already done", title_justify="left")
    for column in ("episode", "frames", "cameras drawn", "MB before", "MB after"):
        table.add_column(column, justify="left" if column == "cameras drawn" else "right")
    for e in summary.episodes:
        table.add_row(str(e.index), str(e.frames), ", ".join(e.drawn) or "- (done)", _mb(e.bytes_before),
                      _mb(e.bytes_after))
    console.print(table)
    if not summary.rendered:
        console.print("nothing to render: every selected episode has these cameras at this size")
        return
    rate = summary.frames_rendered / summary.wall_s if summary.wall_s > 0 else 0.0
    console.print(f"{summary.frames_rendered} frames in {summary.wall_s:.1f} s ({rate:.1f} frames/s, "
                  f"{summary.workers} worker(s))")


def _videos(ds: Dataset, cameras: tuple[str, ...] | None, size: ImageSize, folder: Path,
            selected: tuple[int, ...] | None, workers: int) -> None:
    listed = sorted(r.index for r in ds.episodes())
    chosen = listed if selected is None else list(selected)
    if not chosen:
        raise DatasetError(f"{ds.root}: episodes: found none; allowed: a dataset with committed episodes")
    with progress("video", "frames") as update:
        def advance(p: VideosProgress) -> None:
            update(p.frames_done, p.frames_total, f"episode {p.episodes_done}/{p.episodes_total}")

        made = dataset_videos(ds, chosen, cameras, size, folder, advance, workers)
    for v in made:
        console.print(f"episode {v.episode}: {v.path} ({v.frames} frames, {v.width}x{v.height}, {v.codec}, "
                      f"{v.bytes / 1e3:.0f} kB)")
    frames = sum(v.frames for v in made)
    draw, encode = sum(v.draw_s for v in made), sum(v.encode_s for v in made)
    console.print(f"{len(made)} video(s), {frames} frames: drawing {1e3 * draw / frames:.1f} ms/frame, encoding "
                  f"{1e3 * encode / frames:.1f} ms/frame")


def _sheet(ds: Dataset, cameras: tuple[str, ...], size: ImageSize, out: Path, episode: int | None,
           selected: tuple[int, ...] | None, streams: tuple[str, ...]) -> None:
    if out.suffix.lower() != ".png":
        raise DatasetError(f"--contact-sheet: found {str(out)!r}; allowed: a .png file")
    if episode is None:
        listed = sorted(r.index for r in ds.episodes())
        pool = [i for i in listed if selected is None or i in selected]
        if not pool:
            raise DatasetError(f"{ds.root}: episodes: found none; allowed: a dataset with committed episodes")
        episode = pool[0]
    with ds.load(episode) as ep:
        contact_sheet(ep, cameras, size, out, streams)
    what = "" if streams == DEFAULT_STREAMS else f" ({'+'.join(streams)})"
    console.print(f"contact sheet of episode {episode} ({', '.join(cameras)}{what} at {size}): {out}")
