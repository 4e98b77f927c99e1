"""The cost of depth and segmentation beside the picture (`x2 render --streams`), side by side in one run:

1. x2's renderer (x2/sim/mujoco/renderer.py, StateRenderer.shot) drawing rgb+depth+segmentation of every camera,
   against the same renderer drawing rgb alone (`render`, what `x2 render` always drew);
2. against a bare `mujoco.Renderer` loop making the same outputs the way MuJoCo's documentation shows: per camera
   `update_scene`, `render()` for rgb, `enable_depth_rendering(); render()`, `enable_segmentation_rendering();
   render()`, then its (object id, type) made per-object ids with one numpy lookup (the issue's target: x2 / bare
   <= 1.15);
3. the whole render pass (`write_rendered`: states read, drawn, compressed, written) with `--streams rgb` and with
   all three, and the bytes each adds per frame.

Every figure is the median of `--repeats` interleaved runs over the same states, ms per frame (all cameras).
The episode is a real scripted one (the real loop, tests/helpers/real_dataset.py).

Usage: python bench/bench_render_streams.py [--ticks 60 --size 240x320 --repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.real_dataset import record_short_dataset  # noqa: E402

from x2 import format as fmt  # noqa: E402
from x2.datasets import Dataset, Episode  # noqa: E402
from x2.recorded.frames import DEFAULT_CAMERAS  # noqa: E402
from x2.recorded.world import open_world  # noqa: E402
from x2.render.episode_file import write_rendered  # noqa: E402
from x2.sim.camera import ImageSize  # noqa: E402
from x2.sim.mujoco.segments import WorldSegments  # noqa: E402
from x2.sim.mujoco.state import STATE_SPEC  # noqa: E402
from x2.sim.streams import STREAMS  # noqa: E402


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--size", default="240x320")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    size = ImageSize.parse(args.size)
    cameras = DEFAULT_CAMERAS
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        record_short_dataset(root / "ds", episodes=1, ticks=args.ticks)
        ds = Dataset.open(root / "ds")
        path = ds.episode_path(0)
        with Episode(path) as ep, open_world(ep) as world, world.backend.renderer(cameras, size) as renderer:
            states = np.asarray(ep.dataset(fmt.STATES)[:], np.float64)
            model = world.backend.model
            bare = mujoco.Renderer(model, size.height, size.width)
            data = mujoco.MjData(model)
            by_geom = WorldSegments(model).of_body[model.geom_bodyid]

            def x2_rgb() -> None:
                for s in states:
                    renderer.set_state(s)
                    for c in cameras:
                        renderer.render(c)

            def x2_all() -> None:
                for s in states:
                    renderer.set_state(s)
                    for c in cameras:
                        renderer.shot(c, STREAMS)

            def bare_all() -> None:
                for s in states:
                    mujoco.mj_setState(model, data, s, STATE_SPEC)
                    mujoco.mj_kinematics(model, data)
                    mujoco.mj_comPos(model, data)
                    mujoco.mj_camlight(model, data)
                    for c in cameras:
                        bare.update_scene(data, camera=c)
                        bare.render()
                        bare.enable_depth_rendering()
                        bare.render()
                        bare.enable_segmentation_rendering()
                        seg = bare.render()
                        bare.disable_segmentation_rendering()
                        ids = np.zeros(seg.shape[:2], np.uint16)
                        geom = seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)
                        ids[geom] = by_geom[seg[..., 0][geom]]

            runs: dict[str, list[float]] = {"x2 rgb": [], "x2 rgb+depth+seg": [], "bare mujoco.Renderer": []}
            x2_all()  # warm both
            bare_all()
            for _ in range(args.repeats):
                runs["x2 rgb"].append(timed(x2_rgb))
                runs["x2 rgb+depth+seg"].append(timed(x2_all))
                runs["bare mujoco.Renderer"].append(timed(bare_all))
            bare.close()
        passes: dict[str, list[float]] = {"rgb": [], "rgb,depth,segmentation": []}
        sizes: dict[str, int] = {}
        for i in range(max(1, args.repeats // 2)):
            for name in passes:
                out = root / f"out-{name}-{i}.h5"
                streams = tuple(name.split(","))
                started = time.perf_counter()
                write_rendered(path, out, cameras, size, streams=streams)
                passes[name].append(time.perf_counter() - started)
                sizes[name] = out.stat().st_size
        before = path.stat().st_size
    frames = len(states)
    ms = {k: 1000 * statistics.median(v) / frames for k, v in runs.items()}
    print(f"bench_render_streams: {frames} frames x {len(cameras)} cameras ({', '.join(cameras)}) at {size}, "
          f"median of {args.repeats}; mujoco {mujoco.__version__}, {platform.machine()}, "
          f"{platform.python_version()}, MUJOCO_GL egl")
    for k, v in ms.items():
        print(f"  {k:24s} {v:7.2f} ms/frame")
    print(f"  rgb+depth+seg / rgb alone      {ms['x2 rgb+depth+seg'] / ms['x2 rgb']:.3f}")
    print(f"  rgb+depth+seg / bare Renderer  {ms['x2 rgb+depth+seg'] / ms['bare mujoco.Renderer']:.3f} "
          "(target <= 1.15)")
    for name, v in passes.items():
        print(f"  write_rendered --streams {name:22s} {1000 * statistics.median(v) / frames:7.2f} ms/frame, "
              f"+{(sizes[name] - before) / frames / 1024:.1f} KiB/frame")


if __name__ == "__main__":
    main()
