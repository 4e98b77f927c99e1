"""What an export says of a recorded camera (x2/recorded/camera_lenses.py): a calibrated stream's K scaled to the
exported size, its distortion, and its first pose in OpenCV's optical frame."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
from helpers.real_dataset import record_short_dataset

from x2 import format as fmt
from x2.datasets import Dataset, Episode
from x2.envspec.camera_calibration import CameraCalibration
from x2.recorded.camera_lenses import camera_lenses
from x2.sim.camera import ImageSize, pinhole


def test_a_calibrated_streams_lens_at_the_exported_size(tmp_path: Path) -> None:
    cal = CameraCalibration("head", 640, 480, 615.0, 614.0, 321.4, 238.7, (0.1, -0.2, 0.001, 0.0, 0.05))
    path = tmp_path / "episode_000000.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset(fmt.TIMESTAMPS, data=np.array([0.0, 0.05]))
        ds = f.create_dataset(fmt.image_path("head"), data=np.zeros((2, 480, 640, 3), np.uint8))
        ds.attrs["fovy_deg"], ds.attrs["intrinsics"] = 42.6, cal.matrix()
        ds.attrs["height"], ds.attrs["width"], ds.attrs["body"] = 480, 640, "world"
        ds.attrs["distortion"] = [*cal.distortion, 0.0, 0.0, 0.0]
        # MuJoCo's camera axes turned half a turn about x: the optical frame is the world's
        f.create_dataset(fmt.camera_pose_path("head"), data=np.array([[0.1, 0.2, 0.3, 0.0, 1.0, 0.0, 0.0]] * 2))
    with Episode(path) as ep:
        lens = camera_lenses(ep, ["head"], {"head": ImageSize(240, 320)})["head"]
    np.testing.assert_allclose(lens["K"], cal.matrix(240, 320), atol=1e-9)
    assert lens["K"][0][2] == (321.4 + 0.5) / 2 - 0.5 and (lens["height"], lens["width"]) == (240, 320)
    assert lens["distortion"] == [0.1, -0.2, 0.001, 0.0, 0.05, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(lens["pose"], [[1, 0, 0, 0.1], [0, 1, 0, 0.2], [0, 0, 1, 0.3], [0, 0, 0, 1]], atol=1e-9)
    assert lens["body"] == "world"


def test_a_field_of_view_streams_lens_stretched_to_another_aspect(tmp_path: Path) -> None:
    # stored 240x320, exported 224x224: the exporters stretch the frames per axis (x2/export/episode_arrays.py)
    path = tmp_path / "episode_000000.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset(fmt.TIMESTAMPS, data=np.array([0.0, 0.05]))
        ds = f.create_dataset(fmt.image_path("head"), data=np.zeros((2, 240, 320, 3), np.uint8))
        ds.attrs["fovy_deg"], ds.attrs["intrinsics"] = 45.0, pinhole(45.0, 240, 320)
        ds.attrs["height"], ds.attrs["width"] = 240, 320
    with Episode(path) as ep:
        lens = camera_lenses(ep, ["head"], {"head": ImageSize(224, 224)})["head"]
    f = 120 / np.tan(np.deg2rad(22.5))
    # OpenCV's convention (pixel centres at integers): a centred camera's principal point is ((W-1)/2, (H-1)/2)
    np.testing.assert_allclose(lens["K"], [[f * 0.7, 0, 111.5], [0, f * 224 / 240, 111.5], [0, 0, 1]], atol=1e-9)
    assert lens["pixel_origin"] == "centre" and (lens["height"], lens["width"]) == (224, 224)
    # at its own size the stored K moves half a pixel, to OpenCV's convention
    with Episode(path) as ep:
        same = camera_lenses(ep, ["head"], {})["head"]
    np.testing.assert_allclose(same["K"], [[f, 0, 159.5], [0, f, 119.5], [0, 0, 1]], atol=1e-9)


def test_a_camera_drawn_at_export_time_is_described_at_the_size_it_was_drawn_at(tmp_path: Path) -> None:
    record_short_dataset(tmp_path / "short", episodes=1, ticks=2)  # no stored streams: drawn from its world
    with Dataset.open(tmp_path / "short").load(0) as ep:
        lens = camera_lenses(ep, ["head"], {"head": ImageSize(48, 64)}, ImageSize(96, 96))["head"]
    f = 48 / np.tan(np.deg2rad(lens["fovy_deg"]) / 2)  # drawn at 96x96, stretched to 48x64
    np.testing.assert_allclose(lens["K"], [[f * 64 / 96, 0, 31.5], [0, f * 0.5, 23.5], [0, 0, 1]], atol=1e-9)
    assert lens["body"]


def test_a_calibration_equal_to_the_centred_pinhole_keeps_its_principal_point(tmp_path: Path) -> None:
    # A hand-written calibration with cx = W/2, cy = H/2 and fx = fy equals the field-of-view pinhole number for
    # number; only the stored convention tells them apart (before it was stored, x2 moved it half a pixel).
    import mujoco

    from x2.sim.camera import opencv_matrix
    from x2.sim.mujoco.camera_calibration import apply_camera_calibration
    from x2.sim.mujoco.renderer import MujocoRenderer

    f = 60.0 / np.tan(np.deg2rad(30.0))  # the pinhole of fovy 60 at 120 rows
    cal = CameraCalibration("cam", 160, 120, f, f, 80.0, 60.0, (0.0, 0.0, 0.0, 0.0, 0.0))
    np.testing.assert_allclose(cal.matrix(), pinhole(60.0, 120, 160), atol=1e-12)
    spec = mujoco.MjSpec()
    spec.visual.global_.offwidth, spec.visual.global_.offheight = 160, 120
    spec.worldbody.add_camera(name="cam", fovy=60)
    spec.worldbody.add_camera(name="plain", fovy=60)
    apply_camera_calibration(spec, {"cam": cal})
    with MujocoRenderer(spec.compile(), ["cam", "plain"], ImageSize(120, 160)) as renderer:
        calibrated, plain = renderer.intrinsics("cam"), renderer.intrinsics("plain")
    assert calibrated["pixel_origin"] == "centre" and "pixel_origin" not in plain  # (a pinhole's bytes unchanged)
    np.testing.assert_allclose(opencv_matrix(calibrated), cal.matrix(), atol=1e-9)
    np.testing.assert_allclose(opencv_matrix(plain)[:2, 2], [79.5, 59.5], atol=1e-9)

    def stored(path: Path, origin: str | None) -> list[list[float]]:
        with h5py.File(path, "w") as h5:
            h5.create_dataset(fmt.TIMESTAMPS, data=np.array([0.0]))
            ds = h5.create_dataset(fmt.image_path("cam"), data=np.zeros((1, 120, 160, 3), np.uint8))
            ds.attrs["fovy_deg"], ds.attrs["intrinsics"], ds.attrs["height"], ds.attrs["width"] = 60.0, \
                cal.matrix(), 120, 160
            if origin is not None:
                ds.attrs["pixel_origin"] = origin
        with Episode(path) as ep:
            return camera_lenses(ep, ["cam"], {})["cam"]["K"]

    assert stored(tmp_path / "new.h5", "centre")[0][2] == 80.0
    assert stored(tmp_path / "old.h5", None)[0][2] == 79.5  # a stream from before: the old reading, as it was
