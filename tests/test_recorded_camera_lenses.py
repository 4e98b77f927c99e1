"""What an export says of a recorded camera (x2/recorded/camera_lenses.py): a calibrated stream's K scaled to the
exported size, its distortion, and its first pose in OpenCV's optical frame."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from x2 import format as fmt
from x2.datasets import Episode
from x2.envspec.camera_calibration import CameraCalibration
from x2.recorded.camera_lenses import camera_lenses
from x2.sim.camera import ImageSize


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
