"""Objects from real mesh files: each made by `x2 objects add`, put in a new scene, picked and placed by synthesis.

The meshes are pybullet_data's (PyPI `pybullet` 3.2.7: the wheel is downloaded with `pip download --no-deps` into
--cache, 100 MB, and only its mesh files and textures are unpacked there; nothing is copied into the repo). By
default ten: five textured OBJ files (the duck, a Jenga block, a domino, the textured cube and torus), two STL
files (a PR2 finger tip, an xArm finger) and three of its procedurally made `random_urdfs/NNN/NNN.obj`.

All are made in one temporary folder (./specs/objects), drawn together as a contact sheet (`x2 objects sheet`,
to --sheet), then each is put in a scene of its own made for the bench, `mesh_swap` (not pick_place's layout: the
object where pick_place's plate stands, the plate where its block lies, in smaller regions), and `x2 synth -n N`
runs pick_place on it (master seed 0). Per object: convex pieces, mass, inertia, texture, accepted share, deepest
contact, and whether plain MuJoCo rebuilds the first episode's world from the file alone (`model_xml` and
`/textures`, nothing else read).

    .venv/bin/python bench/bench_mesh_objects.py --n 10
    .venv/bin/python bench/bench_mesh_objects.py --n 5 --meshes random_urdfs/003/003.obj duck.obj:0.05:y:0.05

A mesh is PATH[:SCALE[:UP[:MASS]]] (default --scale, z up, density 500 kg/m^3; an open mesh needs a MASS).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import h5py
import mujoco
import yaml

from x2.datasets import Dataset
from x2.envspec import catalog
from x2.format import names
from x2.meshes.build import MeshOptions
from x2.recorded.replay import deepest_penetration
from x2.render.object_sheet import object_sheet
from x2.sim.camera import ImageSize
from x2.sim.mujoco.mesh_object import add_mesh_object
from x2.sim.mujoco.textures import png_size
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

WHEEL = "pybullet==3.2.7"
DEFAULT = ["duck.obj:0.05:y:0.05", "jenga/jenga.obj:0.04::0.04", "domino/domino.obj:1.5::0.03",
           "cube.obj:0.045::0.05", "torus/torus_textured.obj:0.04:y:0.04", "l_finger_tip.stl:1::0.03",
           "xarm/xarm_gripper/meshes/left_finger.STL:1", *(f"random_urdfs/{i:03d}/{i:03d}.obj" for i in range(3))]


def pybullet_data(cache: Path) -> Path:
    """pybullet_data's mesh files, unpacked from the wheel (downloaded once) under `cache`."""
    root = cache / "pybullet_data"
    if root.is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("pybullet-*.whl"))
    if not wheels:  # (pybullet has wheels for CPython <= 3.11 only: the files are all the bench wants of it)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", WHEEL, "--python-version", "3.11",
                        "--only-binary=:all:", "--platform", "manylinux_2_17_x86_64", "-d", str(cache)], check=True)
        wheels = sorted(cache.glob("pybullet-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        for member in wheel.namelist():
            if member.startswith("pybullet_data/") and member.lower().endswith((".obj", ".mtl", ".png", ".jpg", ".gif",
                                                                                 ".stl")):
                wheel.extract(member, cache)
    return root


def user_task(k: int, name: str) -> str:
    """./specs: scene `mesh_swap_K`, a layout of the bench's own (the object where pick_place's plate stands, the
    plate where its block lies, each region smaller), with object `name` as the block, and pick_place on it."""
    specs = Path("specs")
    (specs / "scenes").mkdir(parents=True, exist_ok=True)
    (specs / "tasks").mkdir(parents=True, exist_ok=True)
    scene = {"include": "green_booth.yaml", "name": f"mesh_swap_{k}",
             "description": "the bench's scene: an object from a mesh file, and a plate beyond it",
             "regions": {"block_area": {"center": [0.55, -0.07], "half_size": [0.04, 0.04]},
                         "plate_area": {"center": [0.48, -0.3], "half_size": [0.03, 0.04]}},
             "objects": {"block": {"asset": name, "tags": ["target_object"], "region": "block_area"},
                         "plate": {"asset": "plate", "region": "plate_area"}}}
    (specs / "scenes" / f"mesh_swap_{k}.yaml").write_text(yaml.safe_dump(scene, sort_keys=False))
    task = yaml.safe_load((catalog.BUILTIN_DIRS["tasks"] / "pick_place.yaml").read_text())
    task.update(name=f"pick_mesh_{k}", scene=f"mesh_swap_{k}")
    (specs / "tasks" / f"pick_mesh_{k}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return f"pick_mesh_{k}"


def rebuilt(episode: Path) -> str:
    """Plain MuJoCo on the episode file alone: its model_xml and /textures, and the first state set."""
    with h5py.File(episode, "r") as f:
        xml = f.attrs[names.MODEL_XML_ATTR]
        xml = xml.decode() if isinstance(xml, bytes) else str(xml)
        textures = {n: f[names.texture_path(n)][()].tobytes() for n in f[names.TEXTURES]} \
            if names.TEXTURES in f else {}
        state = f[names.STATES][0]
    model = mujoco.MjModel.from_xml_string(xml, textures)
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
    mujoco.mj_forward(model, data)
    kb = sum(len(b) for b in textures.values()) / 1024
    return f"yes ({model.ntex} textures, {len(textures)} carried, {kb:.0f} KB)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "x2-bench-pybullet")
    parser.add_argument("--sheet", type=Path, default=Path(tempfile.gettempdir()) / "x2-bench-mesh-objects.png")
    parser.add_argument("--meshes", nargs="*", default=DEFAULT,
                        help="paths under pybullet_data, each PATH[:SCALE[:UP[:MASS]]]")
    args = parser.parse_args()
    data = pybullet_data(args.cache)
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; pick_place with "
          f"each object as the block in the scene mesh_swap, n {args.n}, {args.workers} workers, master seed 0",
          flush=True)
    rows = []
    home = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            made = {}
            for k, entry in enumerate(args.meshes):
                file, scale, up, mass = (entry.split(":") + ["", "", ""])[:4]
                name = f"mesh_{k:02d}"
                t0 = time.perf_counter()
                try:
                    options = MeshOptions(name=name, scale=float(scale or args.scale), up=up or "z",
                                          mass=float(mass) if mass else None)
                    added = add_mesh_object(data / file, options)
                except Exception as exc:  # noqa: BLE001 - a bench reports every object, refused ones too
                    print(f"{file}: {type(exc).__name__}: {exc}", flush=True)
                    rows.append({"file": file, "error": str(exc)})
                    continue
                assert added.made is not None
                made[k] = (file, name, added.made, time.perf_counter() - t0)
            t0 = time.perf_counter()
            object_sheet([name for _, name, _, _ in made.values()], args.sheet.resolve(), ImageSize(200, 200))
            print(f"contact sheet of {len(made)} objects: {args.sheet} ({time.perf_counter() - t0:.1f} s)", flush=True)
            for k, (file, name, obj, made_s) in made.items():
                task = user_task(k, name)
                t0 = time.perf_counter()
                try:
                    progress = SynthRun(SynthConfig(SessionOptions(task), n=args.n, workers=args.workers),
                                        Path(f"data/{task}")).run()
                    wall = time.perf_counter() - t0
                    ds = Dataset.open(Path(f"data/{task}"))
                    depth, first = 0.0, None
                    for record in ds.episodes():
                        with ds.load(record.index) as ep:
                            depth = max(depth, deepest_penetration(ep).depth)
                            first = first or ep.path
                    rebuilds = rebuilt(first) if first is not None else "no episode"
                except Exception as exc:  # noqa: BLE001 - a bench reports every object, failed ones too
                    print(f"{file}: {type(exc).__name__}: {exc}", flush=True)
                    rows.append({"file": file, "error": str(exc)})
                    continue
                props, i = obj.props, obj.props.inertia
                size = png_size(obj.texture) if obj.texture is not None else None
                row = {"file": file, "pieces": len(obj.pieces), "mass": props.mass, "made_s": made_s,
                       "inertia": (i[0, 0], i[1, 1], i[2, 2]), "bbox_mm": tuple(1000 * obj.extents),
                       "texture": f"{size[0]}x{size[1]} {len(obj.texture or b'') / 1024:.0f} KB" if size else "none",
                       "accepted": progress.accepted, "attempts": progress.attempted, "wall_s": wall,
                       "depth_mm": 1e3 * depth, "rebuilds": rebuilds,
                       "rejected": {k: v for k, v in progress.reasons.items() if k != "accepted"}}
                rows.append(row)
                print(f"{file}: {row}", flush=True)
        finally:
            os.chdir(home)
    print("\n| mesh | pieces | mass | inertia diag (kg m^2) | bounding box (mm) | texture | made in | accepted / "
          "attempts | deepest contact | rebuilt from the file alone |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['file']} | refused or failed: {r['error']} | | | | | | | | |")
            continue
        inertia = " ".join(f"{v:.2e}" for v in r["inertia"])
        box = " x ".join(f"{v:.0f}" for v in r["bbox_mm"])
        print(f"| {r['file']} | {r['pieces']} | {1000 * r['mass']:.0f} g | {inertia} | {box} | {r['texture']} | "
              f"{r['made_s']:.1f} s | {r['accepted']} / {r['attempts']} "
              f"({100 * r['accepted'] / max(r['attempts'], 1):.0f} %) | {r['depth_mm']:.2f} mm | {r['rebuilds']} |")
    done = [r for r in rows if "error" not in r]
    accepted, attempts = sum(r["accepted"] for r in done), sum(r["attempts"] for r in done)
    print(f"\n{len(done)} of {len(rows)} objects made; accepted {accepted} / {attempts} attempts "
          f"({100 * accepted / max(attempts, 1):.0f} %)")


if __name__ == "__main__":
    main()
