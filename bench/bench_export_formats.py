"""Per-frame cost of `x2 export zarr` and `x2 export hdf5`, side by side with rendering alone.

Short real episodes (tests/helpers/real_dataset.py) have no stored images, so every image export renders
its frames; "render only" is that rendering without writing anything, the floor an image export sits on.
Rounds interleave the variants; medians of per-frame times are printed with ratios to "render only".
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.real_dataset import record_short_dataset  # noqa: E402

from x2.datasets import Dataset  # noqa: E402
from x2.export.hdf5 import Hdf5Options, export_hdf5  # noqa: E402
from x2.export.request import ExportRequest  # noqa: E402
from x2.export.zarr import ZarrOptions, export_zarr  # noqa: E402
from x2.recorded.frames import episode_frames  # noqa: E402
from x2.sim.camera import ImageSize  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--size", default="96x128")
    args = parser.parse_args()
    size = ImageSize.parse(args.size)
    work = Path(tempfile.mkdtemp(prefix="bench_export_"))
    try:
        record_short_dataset(work / "ds", episodes=args.episodes, ticks=args.ticks)
        ds = Dataset.open(work / "ds")
        records = ds.episodes()
        frames = sum(r.frames for r in records)

        def render_only() -> None:
            for r in records:
                with ds.load(r.index) as ep:
                    for _ in episode_frames(ep, ["head"], size):
                        pass

        def ask(target: Path, state_only: bool = False) -> ExportRequest:
            return ExportRequest(ds, tuple(records), target, state_only=state_only)

        variants: dict[str, Callable[[Path], object]] = {
            "render only (head)": lambda out: render_only(),
            "zarr, head camera": lambda out: export_zarr(ask(out / "a.zarr"), ZarrOptions(render_size=size)),
            "zarr zip, head camera": lambda out: export_zarr(ask(out / "a.zarr.zip"),
                                                             ZarrOptions(render_size=size, zip=True)),
            "hdf5, head camera": lambda out: export_hdf5(ask(out / "a.hdf5"), Hdf5Options(render_size=size)),
            "zarr, state only": lambda out: export_zarr(ask(out / "s.zarr", state_only=True)),
            "hdf5, state only": lambda out: export_hdf5(ask(out / "s.hdf5", state_only=True)),
        }
        times: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(args.rounds):
            for name, run in variants.items():
                out = work / "out"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                t0 = time.perf_counter()
                run(out)
                times[name].append((time.perf_counter() - t0) / frames)
        base = statistics.median(times["render only (head)"])
        print(f"machine: {platform.machine()} python {platform.python_version()}; {args.rounds} rounds x "
              f"{frames} frames ({args.episodes} episodes), images {size}, medians")
        print(f"{'what':40s} {'per frame':>10s} {'ratio':>8s}")
        for name, values in times.items():
            m = statistics.median(values)
            print(f"{name:40s} {m * 1e3:8.2f}ms {m / base:8.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
