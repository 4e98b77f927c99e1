"""docs/objects_sheet.png: five objects made from meshes drawn here (trimesh, PIL; no third-party files) by
`x2 objects add`, then drawn by `x2 objects sheet`: a checkerboard box, a labelled can, a ring with a gradient,
an L-shaped bracket (an STL: no texture, its mean colour) and a wedge of stripes.

    .venv/bin/python bench/object_sheet_example.py docs/objects_sheet.png

It works in a temporary folder (./specs/objects there) and writes only the picture.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import trimesh
from PIL import Image, ImageDraw


def textured(mesh: trimesh.Trimesh, uv_of: Callable[[np.ndarray], np.ndarray], image: Image.Image, path: Path,
             seam: bool = False) -> None:
    """`mesh` with UVs `uv_of(vertices)` per face corner (with `seam`, u is an angle: unwrapped across the seam of
    the turn) written as OBJ, in
    a folder of its own (trimesh names every OBJ's material files alike: material.mtl, material_0.png)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mesh = mesh.copy()
    mesh.unmerge_vertices()
    uv = uv_of(np.asarray(mesh.vertices)).reshape(-1, 3, 2)
    u = uv[..., 0]
    wraps = seam & (u.max(axis=1) - u.min(axis=1) > 0.5)  # (a face across u = 0/1: its small u's belong past 1)
    u[wraps] = np.where(u[wraps] < 0.5, u[wraps] + 1.0, u[wraps])
    mesh.visual = trimesh.visual.TextureVisuals(uv=uv.reshape(-1, 2), image=image)
    mesh.export(path)


def turn(v: np.ndarray) -> np.ndarray:
    return (np.arctan2(v[:, 1], v[:, 0]) / (2 * np.pi)) % 1.0


def checker(px: int, cells: int, a: tuple[int, int, int], b: tuple[int, int, int]) -> Image.Image:
    rows, cols = np.indices((px, px)) * cells // px
    return Image.fromarray(np.where(((rows + cols) % 2 == 0)[..., None], a, b).astype(np.uint8))


def label(px: int) -> Image.Image:
    image = Image.new("RGB", (px, px), (240, 200, 40))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, px // 3, px, 2 * px // 3], fill=(200, 30, 40))
    for k in range(4):
        draw.text((k * px // 4 + 6, px // 2 - 6), "x2", fill=(255, 255, 255))
    return image


def gradient(px: int) -> Image.Image:
    u = np.linspace(0, 1, px)[None, :, None]
    v = np.linspace(0, 1, px)[:, None, None]
    rgb = np.concatenate([np.broadcast_to(255 * u, (px, px, 1)), np.broadcast_to(255 * (1 - v), (px, px, 1)),
                          np.full((px, px, 1), 180.0)], axis=2)
    return Image.fromarray(rgb.astype(np.uint8))


def stripes(px: int) -> Image.Image:
    rows = np.indices((px, px))[0] * 8 // px
    return Image.fromarray(np.where((rows % 2 == 0)[..., None], (30, 120, 60), (235, 235, 225)).astype(np.uint8))


def make(folder: Path) -> list[tuple[str, str]]:
    """The mesh files, and the name each object gets."""
    box = trimesh.creation.box((0.05, 0.05, 0.06))
    lo, hi = box.bounds

    def box_uv(v: np.ndarray) -> np.ndarray:  # (each face corner of an unmerged box: its face's two other axes)
        n = np.repeat(box_faces_normals(v), 3, axis=0)
        axis = np.abs(n).argmax(axis=1)
        t = (v - lo) / (hi - lo)
        return np.take_along_axis(t, np.array([[1, 2], [0, 2], [0, 1]])[axis], axis=1)

    def box_faces_normals(v: np.ndarray) -> np.ndarray:
        tri = v.reshape(-1, 3, 3)
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        return n / np.linalg.norm(n, axis=1, keepdims=True)

    textured(box, box_uv, checker(128, 4, (220, 40, 40), (250, 240, 230)), folder / "checker" / "checker.obj")
    can = trimesh.creation.cylinder(radius=0.03, height=0.09, sections=48)
    textured(can, lambda v: np.column_stack([turn(v), (v[:, 2] + 0.045) / 0.09]), label(128),
             folder / "can" / "can.obj", seam=True)
    ring = trimesh.creation.torus(major_radius=0.035, minor_radius=0.012)
    textured(ring, lambda v: np.column_stack([turn(v), (v[:, 2] + 0.012) / 0.024]), gradient(128),
             folder / "ring" / "ring.obj", seam=True)
    pts = np.array([[0, 0], [0.06, 0], [0.06, 0.02], [0.02, 0.02], [0.02, 0.05], [0, 0.05]])
    n = len(pts)
    vertices = np.vstack([np.c_[pts, np.zeros(n)], np.c_[pts, np.full(n, 0.03)]])
    faces = [f for a, b, c in [(0, 1, 2), (0, 2, 3), (0, 3, 5), (3, 4, 5)] for f in ([a, c, b], [a + n, b + n, c + n])]
    faces += [f for i in range(n) for f in ([i, (i + 1) % n, (i + 1) % n + n], [i, (i + 1) % n + n, i + n])]
    trimesh.Trimesh(vertices, faces).export(folder / "bracket.stl")
    wedge = trimesh.convex.convex_hull([[x, y, z] for x, y in ((0, 0), (0.07, 0), (0, 0.04)) for z in (0, 0.04)])
    textured(wedge, lambda v: np.column_stack([v[:, 0] / 0.07, v[:, 2] / 0.04]), stripes(128),
             folder / "wedge" / "wedge.obj")
    return [("checker/checker.obj", "checker_box"), ("can/can.obj", "label_can"), ("ring/ring.obj", "gradient_ring"),
            ("bracket.stl", "bracket"), ("wedge/wedge.obj", "striped_wedge")]


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/objects_sheet.png").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        for file, name in make(folder):
            subprocess.run([sys.executable, "-m", "x2", "objects", "add", file, "--name", name], cwd=folder, env=env,
                           check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "x2", "objects", "sheet", "--out", str(out), "--size", "180"],
                       cwd=folder, env=env, check=True)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
