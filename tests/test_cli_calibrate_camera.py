"""`x2 calibrate camera` as typed (in process): a D435-style camera_info and an easy_handeye file into a calibration
file, and its refusals: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import cv2
import h5py
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.envspec.robot import load_robot

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
    assert "hand-eye: he.yaml: transformation from base_link to camera_color_optical_frame" in done.output
    assert "warning:" not in done.output
    before = written.read_bytes()
    # easy_handeye tracking camera_link (x forward): written as asked, with one warning line naming the frame
    (tmp_path / "link.yaml").write_text(HAND_EYE.replace("camera_color_optical_frame", "camera_link"))
    linked = runner.invoke(app, ["calibrate", "camera", "--robot", "aloha", "--camera", "head", "d435.yaml",
                                 "--hand-eye", "link.yaml", "--name", "link"])
    assert linked.exit_code == 0, linked.output
    warnings = [line for line in linked.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "tracking_base_frame 'camera_link' is not named as an optical frame" in warnings[0]
    (tmp_path / "specs" / "calibrations" / "link.yaml").unlink()
    (tmp_path / "link.yaml").unlink()

    (tmp_path / "nofx.yaml").write_text(D435.replace("data: [615.0, 0.0, 321.4, 0.0, 615.0, 238.7, 0.0, 0.0, 1.0]",
                                                     "data: []"))
    m = np.eye(4)
    m[0, 1] = 0.05
    np.savetxt(tmp_path / "skew.txt", m)
    cv2.imwrite(str(tmp_path / "wall.png"), np.full((480, 640, 3), 90, np.uint8))
    # an uncalibrated camera's camera_info: K all zeros
    (tmp_path / "zero.yaml").write_text(D435.replace("615.0, 0.0, 321.4, 0.0, 615.0, 238.7, 0.0, 0.0, 1.0",
                                                     "0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0"))
    (tmp_path / "nanfy.yaml").write_text(D435.replace("0.0, 615.0, 238.7", "0.0, .nan, 238.7"))
    (tmp_path / "far.yaml").write_text(D435.replace("321.4", "700.0"))
    for args, says in (
        (["nofx.yaml"], "nofx.yaml: camera_matrix.data[0] (fx): found 0 numbers"),
        (["zero.yaml"], "zero.yaml: fx: found 0; allowed: a focal length in pixels > 0"),
        (["nanfy.yaml"], "nanfy.yaml: camera_matrix.data: found"),
        (["far.yaml"], "far.yaml: cx: found 700; allowed: a principal point inside the 640x480 image"),
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d435.yaml", "far.yaml", "he.yaml", "nanfy.yaml",
                                                          "nofx.yaml", "skew.txt", "specs", "wall.png", "zero.yaml"]
    # (no overlay, nothing half-written)


def test_a_refused_calibration_file_leaves_no_overlay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d435.yaml").write_text(D435)
    names = list(load_robot("aloha").model.action_names)
    with h5py.File(tmp_path / "episode_000000.h5", "w") as f:
        f.create_dataset("observations/qpos", data=np.zeros((1, len(names)), np.float32)).attrs["names"] = names
    cv2.imwrite(str(tmp_path / "real.png"), np.full((120, 160, 3), 90, np.uint8))
    other = tmp_path / "other.yaml"
    other.write_text("name: other\nrobot: arx-r5\n")
    bad = CliRunner().invoke(app, ["calibrate", "camera", "--robot", "aloha", "--camera", "head", "d435.yaml",
                                   "--frame", "real.png", "--state", "episode_000000.h5:0", "--name", str(other)])
    assert bad.exit_code == 2 and "other.yaml: robot: found 'arx-r5'" in bad.stderr, bad.output
    assert not (tmp_path / "real_overlay.png").exists() and other.read_text() == "name: other\nrobot: arx-r5\n"
