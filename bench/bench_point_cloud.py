"""The cost of `x2 export zarr --point-cloud N` per frame (x2/export/point_cloud.py), one camera at 240x320:

1. drawing the camera's rgb+depth+segmentation from the recorded state (x2/recorded/shots.py);
2. lifting the depth to world points and dropping the pixels that see no geom (`frame_points`);
3. the crop, the 1 cm thinning and the farthest-point sampling to N (`sample_frame`);
4. the whole export (`export_zarr --state-only --point-cloud N`: states read, drawn, sampled, written, read back),
   against the same export without a point cloud.

Stages 1-3 are medians over the episode's frames; 4 is the median of `--repeats` runs, per frame. The episode is a
real scripted one (the real loop, tests/helpers/real_dataset.py).

Usage: python bench/bench_point_cloud.py [--ticks 20 --points 1024 --size 240x320 --camera head --repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.real_dataset import record_short_dataset  # noqa: E402

from x2.datasets import Dataset, Episode  # noqa: E402
from x2.export.point_cloud import VOXEL, Crop, PointCloudOptions, frame_points, sample_frame, voxel_firsts  # noqa: E402
from x2.export.request import ExportRequest  # noqa: E402
from x2.export.zarr import ZarrOptions, export_zarr  # noqa: E402
from x2.recorded.shots import drawn_shots  # noqa: E402
from x2.recorded.world import recorded_env  # noqa: E402
from x2.sim.camera import ImageSize  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--size", default="240x320")
    parser.add_argument("--camera", default="head")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    size = ImageSize.parse(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "short"
        record_short_dataset(root, episodes=1, ticks=args.ticks)
        ds = Dataset.open(root)
        draw, lift, sample, seen, kept, thinned = [], [], [], [], [], []
        with Episode(ds.episode_path(0)) as ep:
            crop = Crop.table_top(recorded_env(ep).booth)
            shots = iter(drawn_shots(ep, (args.camera,), size))
            for t in range(ep.frames):
                t0 = time.perf_counter()
                frame, _ = next(shots)
                t1 = time.perf_counter()
                xyz, rgb = frame_points([frame[args.camera]])
                t2 = time.perf_counter()
                sample_frame(xyz, rgb, crop, args.points, (0, t), "bench")
                t3 = time.perf_counter()
                draw.append(t1 - t0)
                lift.append(t2 - t1)
                sample.append(t3 - t2)
                seen.append(len(xyz))
                inside = crop.inside(xyz)
                kept.append(int(inside.sum()))
                thinned.append(len(voxel_firsts(xyz[inside], VOXEL)))
        frames = args.ticks

        def export(point_cloud: bool, n: int) -> float:
            target = Path(tmp) / f"out{n}-{point_cloud}.zarr"
            options = ZarrOptions(point_cloud=PointCloudOptions(args.points, (args.camera,), None, size)
                                  if point_cloud else None)
            started = time.perf_counter()
            export_zarr(ExportRequest(ds, tuple(ds.episodes()), target, state_only=True), options)
            return (time.perf_counter() - started) / frames

        runs: dict[bool, list[float]] = {True: [], False: []}
        for n in range(args.repeats):
            for pc in (False, True):
                runs[pc].append(export(pc, n))

    def ms(values: list[float]) -> str:
        return f"{1000 * statistics.median(values):7.1f}"

    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}; one episode of "
          f"{frames} frames, camera {args.camera} at {size}, N={args.points}")
    print(f"pixels seeing a geom: median {statistics.median(seen):.0f}; inside the table-top crop: median "
          f"{statistics.median(kept):.0f}; one per {VOXEL * 1000:g} mm cube: median {statistics.median(thinned):.0f}")
    print(f"draw rgb+depth+segmentation   {ms(draw)} ms/frame")
    print(f"lift + fuse (frame_points)    {ms(lift)} ms/frame")
    print(f"crop + FPS to N (sample_frame){ms(sample)} ms/frame")
    print(f"export --state-only           {ms(runs[False])} ms/frame")
    print(f"export --state-only --point-cloud {args.points} {ms(runs[True])} ms/frame "
          f"(+{1000 * (statistics.median(runs[True]) - statistics.median(runs[False])):.1f})")


if __name__ == "__main__":
    main()
