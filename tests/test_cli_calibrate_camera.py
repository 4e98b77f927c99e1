"""`x2 calibrate camera` as typed (in process): a D435-style camera_info and an easy_handeye file into a calibration
file, and its refusals: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from x2.cli.app import _mount, app

if not app.registered_groups:  # (another test module may have mounted the groups already)
    _mount()

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


def test_calibrate_camera_writes_the_section_and_refuses_in_one_line(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    (tmp_path / "d435.yaml").write_text(D435)
    (tmp_path / "he.yaml").write_text(HAND_EYE)
    done = runner.invoke(app, ["calibrate", "camera", "--robot", "aloha", "--camera", "head", "d435.yaml", "--hand-eye",
                               "he.yaml", "--name", "lab1"])
    assert done.exit_code == 0, done.output
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
    cv2.imwrite(str(tmp_path / "wall.png"), np.full((480, 640, 3), 90, np.uint8))
    for args, says in (
        (["nofx.yaml"], "nofx.yaml: camera_matrix.data[0] (fx): found 0 numbers"),
        (["d435.yaml", "--hand-eye", "skew.txt"], "skew.txt: <matrix> rotation: found a 3x3 block with max "
                                                  "|R^T R - I| = 0.05"),
        (["d435.yaml", "--camera", "top"], "--camera: found 'top'; allowed: a camera of robot 'aloha': head"),
        (["d435.yaml", "--frame", "wall.png", "--state", "episode_000000.h5:0", "--board",
          "checkerboard:9x6:0.025"], "wall.png: --board: found no checkerboard:9x6:0.025 in the picture"),
    ):
        argv = ["calibrate", "camera", "--robot", "aloha", *args, "--name", "lab1"]
        if "--camera" not in args:
            argv[4:4] = ["--camera", "head"]
        bad = runner.invoke(app, argv)
        assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1 and says in bad.stderr, bad.output
        assert written.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d435.yaml", "he.yaml", "nofx.yaml", "skew.txt", "specs",
                                                          "wall.png"]  # no overlay, nothing half-written
