"""A robot's portrait: the robot at home in the empty green booth, from the front, the side and above, with each
of its cameras drawn as a frustum (apex at the camera, 0.25 m deep, the 4:3 picture it takes) and named."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from x2.base.arrays import Floats
from x2.envspec import load_env
from x2.sim import make_backend
from x2.sim.camera import FreeCamera, ImageSize, Viewpoint

# name, azimuth, elevation, distance (m): inside the booth's walls (1.6 m from its centre), which hide what is behind
VIEWS = (("front", 180.0, -12.0, 2.0), ("side", 120.0, -20.0, 1.7), ("above", 180.0, -75.0, 2.0))
FRUSTUM_DEPTH = 0.25  # m
ASPECT = 4 / 3  # the robot cameras' pictures (x2 renders 640x480 by default)
COLOURS = ((255, 80, 40), (40, 140, 255), (250, 210, 0), (220, 60, 220), (0, 200, 200))


def _project(points: Floats, view: Viewpoint, width: int, height: int) -> Floats:
    """Pixel coordinates of world points seen by a free camera (where the renderer placed it)."""
    pos, fwd, up = view.pos, view.forward, view.up
    right = np.cross(fwd, up)
    v = points - pos
    z = np.maximum(v @ fwd, 1e-6)
    f = 0.5 * height / np.tan(np.deg2rad(view.fovy_deg) / 2)
    return np.stack([width / 2 + f * (v @ right) / z, height / 2 - f * (v @ up) / z], axis=1)


def frustum(cam_pos: Floats, cam_rot: Floats, fovy: float) -> Floats:
    """Apex and the four far corners (world) of a MuJoCo camera's view (-z forward, +y up)."""
    ty = np.tan(np.deg2rad(fovy) / 2) * FRUSTUM_DEPTH
    tx = ty * ASPECT
    local = np.array([[0, 0, 0], [-tx, -ty, -FRUSTUM_DEPTH], [tx, -ty, -FRUSTUM_DEPTH], [tx, ty, -FRUSTUM_DEPTH],
                      [-tx, ty, -FRUSTUM_DEPTH]])
    return cam_pos + local @ cam_rot.T


def robot_picture(robot: str, out: Path, width: int = 480, height: int = 400) -> Path:
    """Write the portrait of `robot` to `out` (a PNG, written whole under a temporary name first)."""
    backend = make_backend(load_env(None, robot=robot))
    try:
        backend.reset(0)
        robot_cams = list(backend.env.robot.cameras)
        tcps = list(backend.robot_state().ee_pose[:, :3])
        base = np.array(backend.env.robot.base_pos) + np.array([0.0, 0.0, 0.9])
        lookat = (np.mean(tcps, axis=0) + base) / 2
        panels = []
        with backend.renderer(robot_cams, ImageSize(height, width)) as renderer:
            renderer.set_state(backend.get_state())
            for name, azimuth, elevation, distance in VIEWS:
                picture, view = renderer.render_free(FreeCamera(lookat, distance, azimuth, elevation))
                image = Image.fromarray(picture)
                draw = ImageDraw.Draw(image)
                for i, camera in enumerate(robot_cams):
                    cam_pos, cam_rot = renderer.camera_frame(camera)
                    corners = frustum(cam_pos, cam_rot, renderer.intrinsics(camera)["fovy_deg"])
                    px = [(float(u), float(v)) for u, v in _project(corners, view, width, height)]
                    colour = COLOURS[i % len(COLOURS)]
                    for k in range(1, 5):
                        draw.line([px[0], px[k]], fill=colour, width=2)
                        draw.line([px[k], px[1 + k % 4]], fill=colour, width=2)
                    draw.text((px[0][0] + 4, px[0][1] - 12), camera, fill=colour)
                draw.text((8, 8), f"{backend.env.robot.name}: {name}", fill=(255, 255, 255))
                panels.append(image)
    finally:
        backend.close()
    sheet = Image.new("RGB", (width * len(panels), height))
    for i, panel in enumerate(panels):
        sheet.paste(panel, (i * width, 0))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    sheet.save(tmp, format="PNG")
    os.replace(tmp, out)
    return out
