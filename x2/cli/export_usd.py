"""`x2 export usd`: parsing, progress and a summary; the work is x2.export.usd's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from x2.cli._common import console, fail, open_dataset_arg
from x2.cli.export import app
from x2.cli.export_progress import export_progress
from x2.cli.options import EpisodesOpt, OlderPartOpt, OverwriteOpt, PartOpt, SourceOpt, SuccessOnly, selection
from x2.datasets.select import require_some
from x2.export import usd as usd_export
from x2.export.request import ExportRequest
from x2.export.usd import FILE_FORMATS
from x2.recorded.frames import DEFAULT_SIZE
from x2.sim.camera import ImageSize, parse_cameras


@app.command("usd")
def usd_command(
    episode_or_dataset: Annotated[str | None, typer.Argument(
        metavar="[EPISODE|DATASET]", help="An episode file (<dataset>/episodes/episode_000003.h5), or a dataset path "
        "or name under ./data (default: the last one used).", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Target folder (default: ./exports/<dataset>-usd).",
                                             show_default=False)] = None,
    success_only: SuccessOnly = False,
    source: SourceOpt = None,
    part: PartOpt = None,
    older_part: OlderPartOpt = None,
    episodes: EpisodesOpt = None,
    cameras: Annotated[str | None, typer.Option(
        "--cameras", help="Cameras to write, comma-separated (default: every camera of the world).",
        show_default=False)] = None,
    size: Annotated[str, typer.Option(
        "--size", help="Picture size HxW the lens of a camera without a stored stream is given for (a stored "
                       "stream's own size otherwise).")] = str(DEFAULT_SIZE),
    file_format: Annotated[str, typer.Option(
        "--format", help=f"Stage file: {', '.join(FILE_FORMATS)} (usdc binary, usda text).")] = "usdc",
    overwrite: OverwriteOpt = False,
) -> None:
    """Export episodes as USD stages: the world, its motion at the episode's rate, the cameras' lenses.

    One stage per episode (docs/usd.md): MuJoCo's own USD exporter writes the geometry, materials, lights and the
    geoms' poses per frame; x2 adds every body's pose, the cameras with their focal lengths and apertures, and the
    episode's metadata (customLayerData and a JSON beside it). Frames are drawn from the recorded states; a real
    recording (no world) is refused.

    Examples: [cyan]x2 export usd data/pick_place/episodes/episode_000003.h5[/cyan]
    [cyan]x2 export usd pick_place --episodes 0-4 --out exports/pick_usd --format usda[/cyan]
    """
    from_file = usd_export.episode_file(episode_or_dataset) if episode_or_dataset else None
    if from_file is not None and episodes is not None:
        raise fail("--episodes: found both an episode file and --episodes; allowed: one of them")
    ds = open_dataset_arg(str(from_file[0]) if from_file is not None else episode_or_dataset)
    if from_file is not None:
        usd_export.refuse_unknown(ds, [from_file[1]])
        episodes = str(from_file[1])
    chosen = selection(success_only, source, part, older_part, episodes)
    records = chosen.apply(ds)
    require_some(records, ds, chosen)
    request = ExportRequest(ds, tuple(records), out, chosen.describe(), parse_cameras(cameras), overwrite=overwrite)
    options = usd_export.UsdOptions(render_size=ImageSize.parse(size), file_format=file_format)
    with export_progress() as progress:
        summary = usd_export.export_usd(request, options, progress)
    console.print(f"usd: {summary.path}", soft_wrap=True)
    console.print(f"  {len(summary.episodes)} episodes ({chosen.describe()}), {summary.frames} frames, "
                  f"{summary.bytes / 1e6:.1f} MB; read back and checked")
    for e in summary.episodes:
        console.print(f"  {e.file}: {e.frames} frames, {e.geoms} geoms, {e.bodies} bodies, cameras "
                      f"{', '.join(e.cameras) or 'none'}" + (f", {e.textures} textures" if e.textures else ""),
                      soft_wrap=True)
