"""`x2 calibrate camera` as typed: a D435-style camera_info and an easy_handeye file into a calibration file, and
its refusals: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from helpers.x2_cli import run_x2

D435 = """image_width: 640
image_height: 480
camera_name: head
camera_matrix: {rows: 3, cols: 3, data: [615.0, 0.0, 321.4, 0.0, 615.0, 238.7, 0.0, 0.0, 1.0]}
distortion_model: plumb_bob
distortion_coefficients: {rows: 1, cols: 5, data: [0.0, 0.0, 0.0, 0.0, 0.0]}
"""
HAND_EYE = """eye_on_hand: false
robot_base_frame: base_link
tracking_base_frame: camera_color_optical_frame
transformation: {x: 0.35, y: 0.0, z: 0.75, qx: -0.7071068, qy: 0.7071068, qz: 0.0, qw: 0.0}
"""


def test_calibrate_camera_writes_the_section_and_refuses_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "d435.yaml").write_text(D435)
    (tmp_path / "he.yaml").write_text(HAND_EYE)
    done = run_x2(["calibrate", "camera", "--robot", "aloha", "--camera", "head", "d435.yaml", "--hand-eye", "he.yaml",
                   "--name", "lab1"], tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "specs" / "calibrations" / "lab1.yaml"
    doc = yaml.safe_load(written.read_text())
    head = doc["cameras"]["head"]
    assert (doc["robot"], head["fx"], head["cx"], head["cy"]) == ("aloha", 615.0, 321.4, 238.7)
    assert head["pose"]["relative_to"] == "frame" and head["pose"]["mount"] == "eye-to-hand"
    before = written.read_bytes()

    (tmp_path / "nofx.yaml").write_text(D435.replace("data: [615.0, 0.0, 321.4, 0.0, 615.0, 238.7, 0.0, 0.0, 1.0]",
                                                     "data: []"))
    m = np.eye(4)
    m[0, 1] = 0.05
    np.savetxt(tmp_path / "skew.txt", m)
    for args, says in (
        (["nofx.yaml"], "nofx.yaml: camera_matrix.data[0] (fx): found 0 numbers"),
        (["d435.yaml", "--hand-eye", "skew.txt"], "skew.txt: <matrix> rotation: found a 3x3 block with max "
                                                  "|R^T R - I| = 0.05"),
    ):
        argv = ["calibrate", "camera", "--robot", "aloha", "--camera", "head", *args, "--name", "lab1"]
        bad = run_x2(argv, tmp_path)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and says in bad.stderr, bad.stderr
        assert written.read_bytes() == before
