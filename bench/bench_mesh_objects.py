"""Objects from real mesh files: each made by `x2 objects add`, put in pick_place's place of the block, synthesised.

The meshes are pybullet_data's (PyPI `pybullet` 3.2.7: the wheel is downloaded with `pip download --no-deps` into
--cache, 100 MB, and only its mesh files are unpacked there; nothing is copied into the repo): by default ten of its
procedurally made `random_urdfs/NNN/NNN.obj` objects (with their MTL), at --scale (their URDFs say 0.015, which
makes them 9-15 cm long; 0.01 fits the grippers x2 ships). Per object, in a fresh folder: the object made
(convex pieces, mass, inertia, bounding box, time), a copy of pick_place whose block is this object, and
`x2 synth -n N` on it (master seed 0), its accepted share and the deepest contact of its stored frames.

    .venv/bin/python bench/bench_mesh_objects.py --n 5
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

import yaml

from x2.datasets import Dataset
from x2.envspec import catalog
from x2.meshes.build import MeshOptions
from x2.recorded.replay import deepest_penetration
from x2.sim.mujoco.mesh_object import add_mesh_object
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

WHEEL = "pybullet==3.2.7"
DEFAULT = [f"random_urdfs/{i:03d}/{i:03d}.obj" for i in range(10)]


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
            if member.startswith("pybullet_data/") and member.endswith((".obj", ".mtl", ".png", ".jpg")):
                wheel.extract(member, cache)
    return root


def user_task(name: str) -> None:
    """./specs: a scene like tabletop_booth with object `name` as the block, and pick_place on it."""
    specs = Path("specs")
    (specs / "scenes").mkdir(parents=True, exist_ok=True)
    (specs / "tasks").mkdir(parents=True, exist_ok=True)
    scene = yaml.safe_load((catalog.BUILTIN_DIRS["scenes"] / "tabletop_booth.yaml").read_text())
    scene.pop("variants", None)
    scene["name"] = "mesh_booth"
    scene["objects"]["block"]["asset"] = name
    (specs / "scenes" / "mesh_booth.yaml").write_text(yaml.safe_dump(scene, sort_keys=False))
    task = yaml.safe_load((catalog.BUILTIN_DIRS["tasks"] / "pick_place.yaml").read_text())
    task.update(name="pick_mesh", scene="mesh_booth")
    (specs / "tasks" / "pick_mesh.yaml").write_text(yaml.safe_dump(task, sort_keys=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "x2-bench-pybullet")
    parser.add_argument("--meshes", nargs="*", default=DEFAULT,
                        help="paths under pybullet_data, each PATH[:SCALE[:UP[:MASS]]]")
    args = parser.parse_args()
    data = pybullet_data(args.cache)
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}; pick_place with "
          f"each object as the block, n {args.n}, {args.workers} workers, master seed 0", flush=True)
    rows = []
    home = Path.cwd()
    for k, entry in enumerate(args.meshes):
        file, scale, up, mass = (entry.split(":") + ["", "", ""])[:4]
        name = f"mesh_{k:02d}"
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)
            try:
                t0 = time.perf_counter()
                options = MeshOptions(name=name, scale=float(scale or args.scale), up=up or "z",
                                      mass=float(mass) if mass else None)
                added = add_mesh_object(data / file, options)
                made_s = time.perf_counter() - t0
                assert added.made is not None
                user_task(name)
                t0 = time.perf_counter()
                progress = SynthRun(SynthConfig(SessionOptions("pick_mesh"), n=args.n, workers=args.workers),
                                    Path("data/pick_mesh")).run()
                wall = time.perf_counter() - t0
                ds = Dataset.open(Path("data/pick_mesh"))
                depth = 0.0
                for record in ds.episodes():
                    with ds.load(record.index) as ep:
                        depth = max(depth, deepest_penetration(ep).depth)
            except Exception as exc:  # noqa: BLE001 - a bench reports every object, refused or failed ones too
                print(f"{file}: {type(exc).__name__}: {exc}", flush=True)
                rows.append({"file": file, "error": str(exc)})
                continue
            finally:
                os.chdir(home)
        made, props = added.made, added.made.props
        i = props.inertia
        row = {"file": file, "rgba": made.rgba, "pieces": len(made.pieces), "mass": props.mass, "made_s": made_s,
               "inertia": (i[0, 0], i[1, 1], i[2, 2]), "bbox_mm": tuple(1000 * made.extents),
               "accepted": progress.accepted, "attempts": progress.attempted, "wall_s": wall, "depth_mm": 1e3 * depth,
               "xml_kb": len(made.text.xml.encode()) / 1024}
        rows.append(row)
        print(f"{file}: {row}", flush=True)
    print("\n| mesh | pieces | mass | inertia diag (kg m^2) | bounding box (mm) | made in | accepted / attempts "
          "| deepest contact | object MJCF |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['file']} | refused or failed: {r['error']} | | | | | | | |")
            continue
        inertia = " ".join(f"{v:.2e}" for v in r["inertia"])
        box = " x ".join(f"{v:.0f}" for v in r["bbox_mm"])
        print(f"| {r['file']} | {r['pieces']} | {1000 * r['mass']:.0f} g | {inertia} | {box} | {r['made_s']:.1f} s | "
              f"{r['accepted']} / {r['attempts']} ({100 * r['accepted'] / max(r['attempts'], 1):.0f} %) | "
              f"{r['depth_mm']:.2f} mm | {r['xml_kb']:.0f} KB |")
    done = [r for r in rows if "error" not in r]
    accepted, attempts = sum(r["accepted"] for r in done), sum(r["attempts"] for r in done)
    print(f"\n{len(done)} of {len(rows)} objects made; accepted {accepted} / {attempts} attempts "
          f"({100 * accepted / max(attempts, 1):.0f} %)")


if __name__ == "__main__":
    main()
