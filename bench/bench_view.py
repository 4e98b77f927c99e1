"""`x2 datasets view` figures, measured side by side in one run on one real episode:

1. .rrd size with the camera frames as JPEG (what x2.view writes) and as raw pixels (rr.Image, which
   rerun stores LZ4-compressed), same frames, same everything else; the ratio raw / JPEG.
2. The time of a rendered view per frame next to rendering alone (StateRenderer), and of a view
   without cameras (joints, poses, timeline): the pictures are the cost.

The episode is a real scripted one (the real loop, `tests/helpers/real_dataset.py`), or episode 0 of
`--dataset` (e.g. one `x2 synth -n 1` made), rendered at the view's default size.

Usage: python bench/bench_view.py [--ticks 150 | --dataset data/fruit_in_microwave]
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rerun as rr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.real_dataset import record_short_dataset  # noqa: E402

from x2.datasets import Dataset  # noqa: E402
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE  # noqa: E402
from x2.recorded.world import open_world  # noqa: E402
from x2.view import plan_cameras, record_rerun  # noqa: E402


def raw_rrd(path: Path, frames: np.ndarray, camera: str) -> None:
    """The same frames as uncompressed rr.Image rows, on the same frame timeline."""
    rec = rr.RecordingStream("x2-bench", recording_id="bench", send_properties=False)
    rec.save(str(path))
    n, h, w, _ = frames.shape
    rec.log(f"cameras/{camera}", rr.Image.from_fields(format=rr.components.ImageFormat(
        width=w, height=h, color_model="RGB", channel_datatype="U8")), static=True)
    for start in range(0, n, 32):
        stop = min(start + 32, n)
        rec.send_columns(f"cameras/{camera}", indexes=[rr.TimeColumn("frame", sequence=np.arange(start, stop))],
                         columns=rr.Image.columns(buffer=frames[start:stop].reshape(stop - start, -1)))
    rec.flush()
    rec.disconnect()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=150)
    parser.add_argument("--dataset", type=Path, help="use episode 0 of this dataset instead (e.g. a synth one)")
    args = parser.parse_args()
    camera = DEFAULT_CAMERAS[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.dataset is None:
            record_short_dataset(root / "ds", episodes=1, ticks=args.ticks)
        ds = Dataset.open(args.dataset or root / "ds")
        with ds.load(0) as ep:
            t0 = time.perf_counter()
            with open_world(ep) as world, world.backend.renderer([camera], DEFAULT_SIZE) as renderer:
                frames = np.stack([renderer.frame(s)[camera] for s in ep["states"]])
            render_s = time.perf_counter() - t0

            t0 = time.perf_counter()
            record_rerun(ep, dataset="bench", plan=plan_cameras(ep, [camera], DEFAULT_SIZE), path=root / "jpeg.rrd")
            view_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            record_rerun(ep, dataset="bench", plan=plan_cameras(ep, [], None), path=root / "none.rrd")
            no_camera_s = time.perf_counter() - t0
            raw_rrd(root / "raw.rrd", frames, camera)
            raw_bytes = (root / "raw.rrd").stat().st_size + (root / "none.rrd").stat().st_size
            jpeg_bytes = (root / "jpeg.rrd").stat().st_size
            n = ep.frames
    print(f"machine: {platform.machine()}, python {platform.python_version()}, rerun {rr.__version__}")
    print(f"episode: {n} frames, camera {camera} at {DEFAULT_SIZE}")
    print(f"rrd size  jpeg (x2.view): {jpeg_bytes / 1e6:8.2f} MB   {jpeg_bytes / n / 1e3:6.1f} kB/frame")
    print(f"rrd size  raw rr.Image:   {raw_bytes / 1e6:8.2f} MB   {raw_bytes / n / 1e3:6.1f} kB/frame")
    print(f"size raw / jpeg: {raw_bytes / jpeg_bytes:.1f}")
    print(f"view of the episode: {view_s:.2f} s ({view_s / n * 1e3:.1f} ms/frame); "
          f"rendering alone {render_s / n * 1e3:.1f} ms/frame, everything but the camera {no_camera_s:.2f} s")


if __name__ == "__main__":
    main()
