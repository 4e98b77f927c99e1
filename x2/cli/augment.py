"""`x2 augment replay`: recorded motion in new scenery, every label and state kept."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from x2.augment.augment import DEFAULT_PER_EPISODE, AugmentRequest, augment_dataset
from x2.augment.preview import draw_preview
from x2.base.errors import DatasetError
from x2.cli._common import console
from x2.cli.group_class import typer_group
from x2.cli.options import CpusPerWorkerOpt, RayOpt, one_spelling, ray_target
from x2.cli.progress import progress
from x2.datasets import Dataset, remember_dataset, resolve_dataset, resolve_output
from x2.datasets.select import Selection, parse_episode_list
from x2.format import AUGMENTATION_REPORT_FILE
from x2.recorded.frames import DEFAULT_SIZE, default_cameras, stored_cameras
from x2.render import render_dataset
from x2.sim.camera import ImageSize, parse_cameras

app = typer_group(
    "augment", "Enlarge a dataset: its recorded motion in new scenery, labels untouched.",
    examples="[cyan]x2 augment replay[/cyan]\n\n"
             "[cyan]x2 augment replay data/fruit_in_microwave --per-episode 4 --scenery studio --render[/cyan]")


@app.command("replay")
def augment_replay(
    dataset: Annotated[str | None, typer.Argument(
        help="Source dataset path or name under ./data (default: the last one used).", show_default=False)] = None,
    per_episode: Annotated[int | None, typer.Option(
        "--per-episode", "-k", min=1, help=f"Augmented episodes made of each source episode (default "
                                            f"{DEFAULT_PER_EPISODE}).", show_default=False)] = None,
    # The spellings --per-episode and --scenery had before (the word "variant" now means a scene's `variants:`
    # overlay only): still taken, so command lines typed before run as they did; hidden from --help.
    old_per_episode: Annotated[int | None, typer.Option("--variants", min=1, hidden=True)] = None,
    scenery: Annotated[list[str] | None, typer.Option(
        "--scenery", help="Scenery to use (repeat for several; default: every train scenery of the scene).",
        show_default=False)] = None,
    old_scenery: Annotated[list[str] | None, typer.Option("--scene-variant", hidden=True)] = None,
    objects: Annotated[int | None, typer.Option(
        "--objects", min=0, help="Distractors per augmented episode (default: the scenery's range).",
        show_default=False)] = None,
    clearance: Annotated[float, typer.Option("--clearance", help="Gap kept from anything that moves (m).")] = 0.02,
    eps: Annotated[float, typer.Option("--eps", help="Path compression tolerance (m).")] = 0.005,
    seed: Annotated[int, typer.Option("--seed", help="Master seed of the augmented episodes.")] = 0,
    out: Annotated[str | None, typer.Option(
        "--out", "-o", help="Output dataset (default: <dataset>-aug beside the source).", show_default=False)] = None,
    render: Annotated[bool, typer.Option("--render", help="Render the new episodes' cameras afterwards.")] = False,
    cameras: Annotated[str | None, typer.Option(
        "--cameras", help="Cameras for --render / --preview, comma-separated (default: the render defaults).",
        show_default=False)] = None,
    size: Annotated[str | None, typer.Option(
        "--size", help=f"Image size HxW for --render / --preview (default: the source's stored size, else "
                       f"{DEFAULT_SIZE}).", show_default=False)] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", "-w", min=1, help="Worker processes making the augmented episodes and rendering them (default 1; "
                                       "with --ray, as many as the cluster's CPUs hold).", show_default=False)] = None,
    ray: RayOpt = None,
    cpus_per_worker: CpusPerWorkerOpt = 1.0,
    preview: Annotated[Path | None, typer.Option(
        "--preview", help="PNG: a source episode and its first augmented episode at the same frame, and the "
                          "envelope from above.", show_default=False)] = None,
    episodes: Annotated[str | None, typer.Option(
        "--episodes", help="Only these source episodes, e.g. 0-3,7.", show_default=False)] = None,
    allow_eval: Annotated[bool, typer.Option(
        "--allow-eval", help="Allow eval scenery (held out for evaluation) in the output.")] = False,
) -> None:
    """Recompose each episode's static layer (distractors, table, lights, background) around its motion.

    The robot's and objects' recorded motion defines a swept envelope; distractors are placed on the
    table outside it and an independent checker measures true distances at every frame. States,
    actions, labels and camera poses are copied byte for byte; the new episodes go into their own
    dataset, which any x2 command (render, export) takes like another.

    Example: [cyan]x2 augment replay[/cyan]

    Example: [cyan]x2 augment replay data/demo --per-episode 3 --objects 4 --render --preview aug.png[/cyan]

    On a Ray cluster: [cyan]x2 augment replay data/demo --per-episode 20 --render --ray auto[/cyan]
    """
    given = one_spelling(per_episode, old_per_episode, "--per-episode", "--variants")
    count = DEFAULT_PER_EPISODE if given is None else given
    chosen = one_spelling(scenery or None, old_scenery or None, "--scenery", "--scene-variant")
    if preview is not None and preview.suffix.lower() != ".png":
        raise DatasetError(f"--preview: found {str(preview)!r}; allowed: a .png file")
    source = resolve_dataset(dataset)
    names, image_size = _pictures(source, parse_cameras(cameras), None if size is None else ImageSize.parse(size))
    target = resolve_output(out, "") if out else source.parent / f"{source.name}-aug"
    request = AugmentRequest(per_episode=count, scenery=tuple(chosen or ()), objects=objects,
                             clearance=clearance, eps=eps, seed=seed, allow_eval=allow_eval)
    selection = Selection(episodes=None if episodes is None else parse_episode_list(episodes))
    console.print(f"augmenting {source}" + ("" if dataset else " (last used)") + f" into {target}: "
                  f"{count} augmented episode(s) per episode, seed {seed}")
    target_ray = ray_target(ray, cpus_per_worker)
    with progress("augmenting", "episodes") as update:
        summary = augment_dataset(source, target, request, selection, progress=update,
                                  workers=workers or 1, ray=target_ray)
    remember_dataset(target)
    table = Table(title=f"scenery {', '.join(summary.scenery)}: {len(summary.written)} episode(s) written, "
                        f"{len(summary.rejected)} rejected, "
                        f"{sum(o.existed for o in summary.outcomes)} already there", title_justify="left")
    for column in ("source", "k", "scenery", "episode", "distractors", "closest (mm)", "note"):
        table.add_column(column, justify="left" if column in ("scenery", "note") else "right")
    for o in summary.outcomes:
        closest = "-" if o.min_distance_m is None else f"{o.min_distance_m * 1000:.1f}"
        note = "already there" if o.existed else ("; ".join(o.problems) if o.problems else "")
        table.add_row(str(o.parent), str(o.k), o.scenery, "-" if o.index is None else str(o.index),
                      str(o.distractors), closest, note)
    console.print(table)
    if summary.skipped_augmented:
        console.print(f"skipped {summary.skipped_augmented} episode(s) that are augmented already (source augment)")
    made = len(summary.written)
    if made:
        console.print(f"envelope + placement + check: {summary.geometry_s:.2f} s for {made} augmented episode(s); "
                      f"report: {summary.out / AUGMENTATION_REPORT_FILE}")
    if render:
        with progress("rendering", "frames") as update:
            rendered = render_dataset(target, names, image_size, workers or 1, allow_eval=allow_eval,
                                      progress=lambda p: update(p.frames_done, p.frames_total), ray=target_ray)
        console.print(f"rendered {rendered.frames_rendered} frames of {len(rendered.rendered)} episode(s) in "
                      f"{rendered.wall_s:.1f} s")
    if preview is not None:
        _preview(source, target, preview, names, image_size)


def _pictures(source: Path, cameras: tuple[str, ...] | None,
              size: ImageSize | None) -> tuple[tuple[str, ...], ImageSize]:
    """The cameras and size the new episodes are drawn with: as asked, else as the source stored them."""
    ds = Dataset.open(source)
    records = sorted(ds.episodes(), key=lambda r: r.index)
    stored: dict[str, ImageSize] = {}
    if records:
        with ds.load(records[0].index) as ep:
            stored = stored_cameras(ep)
    chosen = cameras or default_cameras([stored])[0]
    sizes = {stored[c] for c in chosen if c in stored}
    return chosen, size or (sizes.pop() if len(sizes) == 1 else DEFAULT_SIZE)


def _preview(source: Path, target: Path, out: Path, cameras: tuple[str, ...], size: ImageSize) -> None:
    ds, src = Dataset.open(target), Dataset.open(source)
    records = sorted(ds.episodes(), key=lambda r: r.index)
    if not records:
        raise DatasetError(f"{target}: episodes: found none; allowed: a dataset with augmented episodes to preview")
    with ds.load(records[0].index) as child:
        parent_index = child.parent_episode
        with src.load(parent_index) as parent:
            draw_preview(parent, child, out, camera=cameras[0], size=size)
    console.print(f"preview of episode {records[0].index} (augmented from source episode {parent_index}): {out}")
