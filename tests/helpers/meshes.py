"""Mesh files made in a test's folder with trimesh (no third-party files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh
from PIL import Image


def checker_box(path: Path) -> None:
    """A 40 x 40 x 50 mm box, each face mapped onto a red and blue checkerboard (OBJ + MTL + PNG)."""
    mesh = trimesh.creation.box((0.04, 0.04, 0.05))
    mesh.unmerge_vertices()
    vertices = np.asarray(mesh.vertices)
    axis = np.abs(np.repeat(mesh.face_normals, 3, axis=0)).argmax(axis=1)  # (unmerged: vertex 3i+k is face i's)
    t = (vertices - vertices.min(axis=0)) / np.ptp(vertices, axis=0)
    uv = np.take_along_axis(t, np.array([[1, 2], [0, 2], [0, 1]])[axis], axis=1)
    rows, cols = np.indices((64, 64)) // 16
    image = np.where(((rows + cols) % 2 == 0)[..., None], [220, 30, 30], [30, 30, 220]).astype(np.uint8)
    mesh.visual = trimesh.visual.TextureVisuals(uv=uv, image=Image.fromarray(image))
    mesh.export(path)
