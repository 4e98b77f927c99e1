"""The textured lab look against today's green booth, and MuJoCo 4's Filament renderer against the classic one:
ms per frame, side by side in one run, on the same world and state.

One world: hook_pull's reset of slot 0 (master seed 0), the robot's head camera at --size. Its three looks are
the same state drawn in the booth as it is, in the built-in `lab_plain` look (wood, concrete and fabric images,
no shadows) and in `lab` (the same with the key light casting shadows): x2/assets/looks/lab_looks.yaml. Each is
drawn by x2's one renderer (x2/sim/mujoco/renderer.py) with the classic engine and, when an X display is there
(run under `xvfb-run -a`), with Filament. Rounds interleave the variants; medians are printed, with one frame of
each written to --pictures as PNG for the eye (docs/looks.md shows them).

Usage: xvfb-run -a python bench/bench_booth_look.py [--rounds 3] [--frames 20] [--size 240x320] [--pictures DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import time
from pathlib import Path

import mujoco
import numpy as np
from PIL import Image

from x2.base.seeding import slot_seed
from x2.envspec import load_env
from x2.envspec.scenery import find_look
from x2.sim import make_backend
from x2.sim.camera import RENDERER_ENV, ImageSize
from x2.sim.mujoco.renderer import MujocoRenderer

LOOKS = ("booth", "lab_plain", "lab")


def world(look: str) -> tuple[str, dict[str, bytes], np.ndarray]:
    env = load_env("hook_pull")
    if look != "booth":
        env = dataclasses.replace(env, appearance=(find_look(env.scene_name, look),))
    backend = make_backend(env)
    try:
        backend.reset(slot_seed(0, 0))
        return backend.model_xml(), backend.model_textures(), backend.get_state()
    finally:
        backend.close()


def draw(xml: str, textures: dict[str, bytes], state: np.ndarray, size: ImageSize, engine: str, frames: int
         ) -> tuple[float, np.ndarray]:
    """ms per frame over `frames` renders of the head camera (after one untimed), and the picture."""
    os.environ[RENDERER_ENV] = engine
    with MujocoRenderer.of_xml(xml, ["head"], size, textures) as renderer:
        renderer.set_state(state)
        image = renderer.render("head")  # (the first frame uploads meshes and textures)
        start = time.perf_counter()
        for _ in range(frames):
            image = renderer.render("head")
        return 1e3 * (time.perf_counter() - start) / frames, image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--size", default="240x320")
    parser.add_argument("--pictures", type=Path, default=None)
    args = parser.parse_args()
    size = ImageSize.parse(args.size)
    engines = ["classic"] + (["filament"] if os.environ.get("DISPLAY") else [])
    worlds = {look: world(look) for look in LOOKS}
    times: dict[tuple[str, str], list[float]] = {(look, e): [] for look in LOOKS for e in engines}
    pictures: dict[tuple[str, str], np.ndarray] = {}
    for _ in range(args.rounds):
        for engine in engines:
            for look in LOOKS:
                ms, image = draw(*worlds[look], size, engine, args.frames)
                times[(look, engine)].append(ms)
                pictures[(look, engine)] = image
    print(f"# {time.strftime('%Y-%m-%d')} · {platform.node()} · {platform.processor() or platform.machine()} · "
          f"{os.cpu_count()} CPUs · mujoco {mujoco.__version__} · MUJOCO_GL={os.environ.get('MUJOCO_GL')} · "
          f"hook_pull slot 0, head camera at {size}, {args.frames} frames x {args.rounds} rounds (median)")
    if "filament" not in engines:
        print("# filament: not measured (no X display: run under xvfb-run -a)")
    base = statistics.median(times[("booth", "classic")])
    print(f"{'look':<10} {'engine':<9} {'ms/frame':>9} {'x booth classic':>16}")
    for engine in engines:
        for look in LOOKS:
            ms = statistics.median(times[(look, engine)])
            print(f"{look:<10} {engine:<9} {ms:>9.1f} {ms / base:>16.2f}")
    if args.pictures is not None:
        args.pictures.mkdir(parents=True, exist_ok=True)
        row = [np.concatenate([pictures[(look, e)] for look in LOOKS], axis=1) for e in engines]
        Image.fromarray(np.concatenate(row, axis=0)).save(args.pictures / "booth_look_engines.png")
        print(f"# pictures: {args.pictures / 'booth_look_engines.png'} (rows: {', '.join(engines)}; "
              f"columns: {', '.join(LOOKS)})")


if __name__ == "__main__":
    main()
