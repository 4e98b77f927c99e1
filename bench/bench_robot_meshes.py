"""The Panda drawn with Menagerie's visual meshes, decimated (x2/sim/mujoco/visual_meshes.py), against its collision
meshes (what x2 drew before): side by side in one run, on the same world and state.

Measured: the faces of the arm's 49 visual pieces before and after decimation to --budget faces a piece; the time to
decimate them with a cold cache and to read them from a warm one; the world's text (`model_xml`, which every episode
file carries) and its compile time (every reset compiles the world); ms per frame at --size from the head and wrist
cameras (x2's one renderer, median of --rounds interleaved rounds of --frames frames); the size of an episode file
(one `pick_place` demonstration synthesised in this process with each look, same seed: the states are compared
too); and a picture of both looks (--picture, the arm at home from the front and the side).

Usage: python bench/bench_robot_meshes.py [--budget 500] [--rounds 3] [--frames 20] [--size 240x320]
       [--picture docs/images/panda_visual_meshes.png]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import h5py
import mujoco
import numpy as np
from PIL import Image, ImageDraw

import x2.synth.options
from x2.base.seeding import slot_seed
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.envspec.env import EnvSpec
from x2.meshes import decimated
from x2.sim import make_backend
from x2.sim.camera import FreeCamera, ImageSize
from x2.sim.mujoco.parts import vendor_spec
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.visual_meshes import decimated_mesh, is_visual_only
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

ROBOT, TASK = "franka-panda", "pick_place"
LOOKS = ("collision", "visual")
VIEWS = (("front", 160.0, -15.0, 1.5), ("side", 100.0, -20.0, 1.5))


def with_look(env: EnvSpec, look: str, budget: int) -> EnvSpec:
    arm = env.robot.arms[0]
    assert arm.part is not None
    part = dataclasses.replace(arm.part, visual_faces=budget if look == "visual" else 0)
    robot = dataclasses.replace(env.robot, arms=(dataclasses.replace(arm, part=part),))
    return dataclasses.replace(env, robot=robot)


def visual_pieces(env: EnvSpec) -> list[tuple[Path, tuple[float, ...]]]:
    """The arm's visual mesh files (the vendor's gripper dropped), as the part builder reads them."""
    part = env.robot.arms[0].part
    assert part is not None
    spec = vendor_spec(part.source.file, "arm")
    for name in part.drop_bodies:
        spec.delete(spec.body(name))
    names = sorted({g.meshname for g in spec.geoms if is_visual_only(g) and g.type == mujoco.mjtGeom.mjGEOM_MESH})
    return [(Path(spec.mesh(n).file), tuple(float(s) for s in spec.mesh(n).scale)) for n in names]


def faces_of(file: Path, scale: tuple[float, ...]) -> int:
    lone = mujoco.MjSpec()
    lone.add_mesh(name="mesh", file=str(file), scale=list(scale))
    return int(lone.compile().mesh_facenum[0])


def decimation(env: EnvSpec, budget: int) -> None:
    pieces = visual_pieces(env)
    before = sum(faces_of(f, s) for f, s in pieces)
    megabytes = sum(f.stat().st_size for f, _ in pieces) / 1e6
    with tempfile.TemporaryDirectory() as cache:
        os.environ[decimated.CACHE_ENV] = cache
        start = time.perf_counter()
        surfaces = [decimated_mesh(f, s, budget) for f, s in pieces]
        cold = time.perf_counter() - start
        start = time.perf_counter()
        again = [decimated_mesh(f, s, budget) for f, s in pieces]
        warm = time.perf_counter() - start
        del os.environ[decimated.CACHE_ENV]
    same = all(a.vertices.tobytes() == b.vertices.tobytes() and a.faces.tobytes() == b.faces.tobytes()
               for a, b in zip(surfaces, again, strict=True))
    after = sum(len(s.faces) for s in surfaces)
    print(f"visual pieces: {len(pieces)} files, {megabytes:.1f} MB; faces {before:,} -> {after:,} "
          f"(<= {budget} a piece, largest {max(len(s.faces) for s in surfaces)}); decimate {cold:.2f} s cold, "
          f"{warm:.2f} s from the cache (same bytes: {same})")


def world(env: EnvSpec) -> tuple[str, dict[str, bytes], np.ndarray]:
    backend = make_backend(env)
    try:
        backend.reset(slot_seed(0, 0))
        return backend.model_xml(), backend.model_textures(), backend.get_state()
    finally:
        backend.close()


def median_of(rounds: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(rounds))


def compile_s(xml: str, textures: dict[str, bytes]) -> float:
    """CPU seconds of one compile (this process's, every thread: steadier than the wall clock on a shared machine)."""
    start = time.process_time()
    mujoco.MjModel.from_xml_string(xml, textures)
    return time.process_time() - start


def frame_ms(xml: str, textures: dict[str, bytes], state: np.ndarray, camera: str, size: ImageSize,
             frames: int) -> tuple[float, float]:
    """(wall, CPU) ms per frame: the CPU time counts every thread of this process, the software renderer's too."""
    with MujocoRenderer.of_xml(xml, [camera], size, textures) as renderer:
        renderer.set_state(state)
        renderer.render(camera)  # (the first frame uploads the meshes)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(frames):
            renderer.render(camera)
        return 1e3 * (time.perf_counter() - wall) / frames, 1e3 * (time.process_time() - cpu) / frames


def episode(look: str, budget: int, out: Path) -> tuple[int, np.ndarray]:
    """One pick_place demonstration synthesised in this process with `look`: (file bytes, states)."""
    plain_load = x2.synth.options.load_env

    def load(*args: object, **kwargs: object) -> EnvSpec:
        return with_look(plain_load(*args, **kwargs), look, budget)  # type: ignore[arg-type]

    x2.synth.options.load_env = load  # type: ignore[assignment]  # (the bench's switch between the two looks)
    try:
        run = SynthRun(SynthConfig(SessionOptions(TASK, robot=ROBOT), n=1, workers=1, seed=0, max_attempts=3),
                       out).run()
    finally:
        x2.synth.options.load_env = plain_load
    assert run.accepted == 1
    ds = Dataset.open(out)
    record = next(iter(ds.episodes()))
    path = out / "episodes" / f"episode_{record.index:06d}.h5"
    with h5py.File(path, "r") as f:
        states = np.asarray(f["states"])
    return path.stat().st_size, states


def picture(envs: dict[str, EnvSpec], out: Path, width: int = 400, height: int = 400) -> None:
    panels = []
    for look in LOOKS:
        backend = make_backend(envs[look])
        try:
            backend.reset(0)
            lookat = np.array(backend.env.robot.base_pos) + np.array([0.25, 0.0, 1.1])
            with backend.renderer([], ImageSize(height, width)) as renderer:
                renderer.set_state(backend.get_state())
                for name, azimuth, elevation, distance in VIEWS:
                    image = Image.fromarray(renderer.render_free(FreeCamera(lookat, distance, azimuth, elevation))[0])
                    label = "before: collision meshes" if look == "collision" else "after: visual meshes, decimated"
                    ImageDraw.Draw(image).text((8, 8), f"{label} ({name})", fill=(255, 255, 255))
                    panels.append(image)
        finally:
            backend.close()
    sheet = Image.new("RGB", (width * len(VIEWS), height * len(LOOKS)))
    for i, panel in enumerate(panels):
        sheet.paste(panel, ((i % len(VIEWS)) * width, (i // len(VIEWS)) * height))
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out, format="PNG")
    print(f"picture: {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--size", default="240x320")
    parser.add_argument("--picture", type=Path, default=None)
    args = parser.parse_args()
    size = ImageSize.parse(args.size)
    env = load_env(TASK, robot=ROBOT)
    envs = {look: with_look(env, look, args.budget) for look in LOOKS}
    print(f"{ROBOT}, {TASK}; {platform.node()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, mujoco {mujoco.__version__}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    decimation(env, args.budget)
    worlds = {look: world(e) for look, e in envs.items()}
    for look, (xml, textures, _) in worlds.items():
        model = mujoco.MjModel.from_xml_string(xml, textures)
        print(f"{look:9s}: model_xml {len(xml):,} bytes, {model.nmeshface:,} mesh faces in the world, compile "
              f"{1e3 * median_of(args.rounds, lambda: compile_s(xml, textures)):.0f} ms CPU")  # noqa: B023
    for camera in envs["visual"].robot.cameras:
        times: dict[str, list[tuple[float, float]]] = {look: [] for look in LOOKS}
        for _ in range(args.rounds):
            for look in LOOKS:
                times[look].append(frame_ms(*worlds[look], camera, size, args.frames))
        print(f"render {camera} {args.size} (ms/frame, wall / CPU): " + ", ".join(
            f"{look} {statistics.median(w for w, _ in t):.1f} / {statistics.median(c for _, c in t):.1f}"
            for look, t in times.items()))
    with tempfile.TemporaryDirectory() as scratch:
        files = {look: episode(look, args.budget, Path(scratch) / look) for look in LOOKS}
    (before, states_before), (after, states_after) = files["collision"], files["visual"]
    print(f"episode file ({len(states_after)} frames): {before:,} -> {after:,} bytes "
          f"(+{after - before:,}, {100 * (after - before) / before:+.0f} %); states the same bytes: "
          f"{states_before.tobytes() == states_after.tobytes()}")
    if args.picture is not None:
        picture(envs, args.picture)


if __name__ == "__main__":
    main()
