"""x2/sim/mujoco/usd.py's lens: the USD camera attributes written for a K put every point where K puts it, by usd-core's
own camera model (Gf.Camera's frustum), for a calibrated K (fx != fy, principal point off the centre) and for a
field-of-view camera's; a world with unnamed bodies is written and read back body by body."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from pxr import Gf

from x2.sim.camera import ImageSize
from x2.sim.mujoco.state import STATE_SPEC, state_size
from x2.sim.mujoco.usd import Aperture, Lens, read_back, write_stage

SIZE = ImageSize(240, 320)
POINTS = np.array([[0.0, 0.0, 2.0], [0.3, -0.2, 1.5], [-0.5, 0.4, 3.0], [0.1, 0.25, 0.8]])  # OpenCV optical frame


def _pixels_usd(ap: Aperture, points: np.ndarray) -> np.ndarray:
    cam = Gf.Camera()
    cam.focalLength, cam.horizontalAperture, cam.verticalAperture = ap.focal_length, ap.horizontal, ap.vertical
    cam.horizontalApertureOffset, cam.verticalApertureOffset = ap.horizontal_offset, ap.vertical_offset
    proj = np.array(cam.frustum.ComputeProjectionMatrix())  # row-vector convention
    out = []
    for x, y, z in points:
        clip = np.array([x, -y, -z, 1.0]) @ proj  # OpenCV's optical frame -> USD's camera axes (y up, looking -z)
        ndc = clip[:2] / clip[3]
        out.append([(ndc[0] + 1) / 2 * SIZE.width - 0.5, (1 - ndc[1]) / 2 * SIZE.height - 0.5])
    return np.array(out)


def _pixels_k(k: np.ndarray, points: np.ndarray) -> np.ndarray:
    uvw = points @ k.T
    return uvw[:, :2] / uvw[:, 2:]


@pytest.mark.parametrize("k", [
    [[300.0, 0.0, 170.2], [0.0, 280.0, 110.7], [0.0, 0.0, 1.0]],  # calibrated: fx != fy, off centre
    [[207.846097, 0.0, 159.5], [0.0, 207.846097, 119.5], [0.0, 0.0, 1.0]],  # fovy 60, centred
])
def test_usd_lens_projects_like_k(k: list[list[float]]) -> None:
    lens = Lens("cam", SIZE, np.array(k), 60.0, None, "world")
    ap = Aperture.of(lens)
    assert np.abs(_pixels_usd(ap, POINTS) - _pixels_k(np.array(k), POINTS)).max() < 1e-3  # pixels (float32 attrs)


def test_unnamed_bodies_keep_their_own_prims_and_are_read_back_as_themselves(tmp_path: Path) -> None:
    """Two unnamed bodies (user MJCF may have them) get a prim each, and the read-back compares each with its own
    body (keyed by name they were one entry, and the check compared the wrong bodies)."""
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body pos='0 0 1'><geom size='.1'/></body>"
        "<body pos='0.5 0 2'><freejoint/><geom size='.1'/></body></worldbody></mujoco>")
    data = mujoco.MjData(model)
    states = np.empty((2, state_size(model)))
    for t in range(2):
        data.qpos[:3] = [0.5, 0.1 * t, 2.0]
        mujoco.mj_getState(model, data, states[t], STATE_SPEC)
    written = write_stage(model, states, 30.0, tmp_path, "two", {}, {}, "usda")
    assert [(b.id, b.name) for b in written.bodies] == [(0, "world"), (1, ""), (2, "")]
    assert [b.path for b in written.bodies][1:] == ["/World/Bodies/body_id1", "/World/Bodies/body_id2"]
    read_back(written, model, states)
