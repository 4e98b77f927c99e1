"""`x2 export zarr` and `x2 export hdf5`: parsing, progress and a summary; the work is x2.export's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from x2.cli._common import console, open_dataset_arg
from x2.cli.export import app
from x2.cli.export_progress import export_progress
from x2.cli.options import (
    ActionKindOpt,
    DatasetArg,
    EpisodesOpt,
    OlderPartOpt,
    OverwriteOpt,
    PartOpt,
    SourceOpt,
    SuccessOnly,
    selection,
)
from x2.datasets.select import require_some
from x2.export import hdf5 as hdf5_export
from x2.export import point_cloud as pc
from x2.export.episode_arrays import RESIZE_DESCRIPTION
from x2.export.request import ExportRequest, parse_action_kind
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.sim.camera import ImageSize, parse_cameras

OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Target path (default: ./exports/<dataset>.<ext>).",
                                             show_default=False)]
CamerasOpt = Annotated[str | None, typer.Option(
    "--cameras", help="Cameras to export, comma-separated (default: the stored ones, else "
                     f"{','.join(DEFAULT_CAMERAS)}).",
    show_default=False)]
SizeOpt = Annotated[str, typer.Option("--size", help="Render size HxW for episodes without stored images.")]
StateOnlyOpt = Annotated[bool, typer.Option("--state-only", help="No images: low-dimensional arrays only.")]


@app.command("zarr")
def zarr_command(
    dataset: DatasetArg = None,
    out: OutOpt = None,
    success_only: SuccessOnly = False,
    source: SourceOpt = None,
    part: PartOpt = None,
    older_part: OlderPartOpt = None,
    episodes: EpisodesOpt = None,
    cameras: CamerasOpt = None,
    size: SizeOpt = str(DEFAULT_SIZE),
    image_size: Annotated[str | None, typer.Option(
        "--image-size", help=f"Resize every image stream to HxW ({RESIZE_DESCRIPTION}).", show_default=False)] = None,
    state_only: StateOnlyOpt = False,
    zarr_format: Annotated[int, typer.Option("--zarr-format", help="2 (diffusion_policy, UMI: zarr 2.x) or 3.")] = 2,
    zip_: Annotated[bool, typer.Option("--zip", help="Pack the finished store into one .zip (ZIP_STORED).")] = False,
    point_cloud: Annotated[int | None, typer.Option(
        "--point-cloud", min=1, help="Add data/point_cloud (T, N, 6): DP3's fused xyz + rgb clouds of N points, drawn "
                                     "from the recorded states.", show_default=False)] = None,
    point_cloud_cameras: Annotated[str, typer.Option(
        "--point-cloud-cameras", help="Cameras fused into the point cloud, comma-separated.")]
        = ",".join(pc.DEFAULT_POINT_CLOUD_CAMERAS),
    point_cloud_crop: Annotated[str | None, typer.Option(
        "--point-cloud-crop", help="Workspace box x0,y0,z0,x1,y1,z1 (m, world frame; default: the booth's table top "
                                   "to 0.6 m above it).", show_default=False)] = None,
    point_cloud_size: Annotated[str, typer.Option(
        "--point-cloud-size", help="Depth drawn at HxW for the point cloud.")] = str(DEFAULT_SIZE),
    point_cloud_frame: Annotated[str, typer.Option(
        "--point-cloud-frame", help="The points' frame: world, or base (the robot's mount; axes the world's).")]
        = "world",
    point_cloud_seed: Annotated[int, typer.Option(
        "--point-cloud-seed", help="Seeds the point cloud's farthest-point sampling.")] = 0,
    overwrite: OverwriteOpt = False,
    action: ActionKindOpt = "joint",
) -> None:
    """Export episodes as a diffusion-policy replay buffer (data/<key> concatenated, meta/episode_ends).

    Examples: [cyan]x2 export zarr --success-only[/cyan]
    [cyan]x2 export zarr fruit_in_microwave --cameras head --image-size 96x128 --zip[/cyan]
    [cyan]x2 export zarr --state-only --action ee_delta[/cyan]
    [cyan]x2 export zarr pick_place --state-only --point-cloud 1024 --point-cloud-cameras head[/cyan]
    """
    from x2.export import zarr as zarr_export  # (zarr is ~0.15 s of imports: only the command that writes one)

    ds = open_dataset_arg(dataset)
    chosen = selection(success_only, source, part, older_part, episodes)
    records = chosen.apply(ds)
    require_some(records, ds, chosen)
    request = ExportRequest(ds, tuple(records), out, chosen.describe(), parse_cameras(cameras), state_only, overwrite,
                            parse_action_kind(action))
    options = zarr_export.ZarrOptions(
        render_size=ImageSize.parse(size),
        image_size=None if image_size is None else ImageSize.parse(image_size, "--image-size"),
        zarr_format=zarr_format, zip=zip_,
        point_cloud=None if point_cloud is None else pc.PointCloudOptions(
            point_cloud, parse_cameras(point_cloud_cameras, "--point-cloud-cameras") or pc.DEFAULT_POINT_CLOUD_CAMERAS,
            None if point_cloud_crop is None else pc.Crop.parse(point_cloud_crop),
            ImageSize.parse(point_cloud_size, "--point-cloud-size"), point_cloud_seed, point_cloud_frame))
    with export_progress() as progress:
        summary = zarr_export.export_zarr(request, options, progress)
    console.print(f"zarr {options.zarr_format}{' (zip)' if zip_ else ''}: {summary.path}", soft_wrap=True)
    console.print(f"  {summary.episodes} episodes ({chosen.describe()}), {summary.frames} frames, "
                  f"{summary.bytes / 1e6:.1f} MB; read back and checked")
    for key, (shape, dtype) in summary.arrays.items():
        console.print(f"  data/{key} {tuple(shape)} {_dtype(dtype)}")
    console.print(f"  meta/episode_ends ({summary.episodes},) int64")


@app.command("hdf5")
def hdf5_command(
    dataset: DatasetArg = None,
    out: OutOpt = None,
    success_only: SuccessOnly = False,
    source: SourceOpt = None,
    part: PartOpt = None,
    older_part: OlderPartOpt = None,
    episodes: EpisodesOpt = None,
    cameras: CamerasOpt = None,
    size: SizeOpt = str(DEFAULT_SIZE),
    state_only: StateOnlyOpt = False,
    overwrite: OverwriteOpt = False,
    action: ActionKindOpt = "joint",
) -> None:
    """Export episodes as one robomimic HDF5 file with Isaac Lab Mimic datagen_info (subtask signals).

    Examples: [cyan]x2 export hdf5 --part train[/cyan]
    [cyan]x2 export hdf5 fruit_in_microwave --out exports/fruit.hdf5 --state-only[/cyan]
    [cyan]x2 export hdf5 --action ee_pose[/cyan]
    """
    ds = open_dataset_arg(dataset)
    chosen = selection(success_only, source, part, older_part, episodes)
    records = chosen.apply(ds)
    require_some(records, ds, chosen)
    request = ExportRequest(ds, tuple(records), out, chosen.describe(), parse_cameras(cameras), state_only, overwrite,
                            parse_action_kind(action))
    options = hdf5_export.Hdf5Options(render_size=ImageSize.parse(size))
    with export_progress() as progress:
        summary = hdf5_export.export_hdf5(request, options, progress)
    console.print(f"hdf5: {summary.path}", soft_wrap=True)
    console.print(f"  {len(summary.demos)} demos ({chosen.describe()}), {summary.frames} frames, "
                  f"{summary.bytes / 1e6:.1f} MB; read back and checked")
    console.print("  masks: " + ", ".join(f"{k} {n}" for k, n in summary.masks.items()))
    if summary.image_sizes:
        console.print("  images: " + ", ".join(f"obs/{c}_image {s}" for c, s in summary.image_sizes.items()))


def _dtype(text: str) -> str:
    import numpy as np

    return str(np.dtype(text))
