"""`x2 calibrate dynamics` (x2/recorded/dynamics.py, x2/sim/mujoco/dynamics_fit.py): a perturbed twin's gain and
latency recovered from short recordings, and bad input refused in one line with nothing written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
import yaml
from helpers.calibration_files import record_swings, write_calibration
from helpers.x2_cli import HEADLESS_ENV
from typer.testing import CliRunner

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.cli.app import _mount, app
from x2.recorded.dynamics import calibrate_dynamics, split_episodes

# the twin to recover: the left waist's servo 30 % stiffer (kv alike), commands 2 ticks late
TRUTH = {"robot": "aloha", "dynamics": {"latency_ticks": 2, "arms": {"left": {"joints": {
    "left_waist": {"kp": 1040.0, "kv": 52.0}}}}}}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 2-second swing recordings of the perturbed twin (an x2 dataset)."""
    root = tmp_path_factory.mktemp("calibrate")
    write_calibration(root, "truth", TRUTH)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        record_swings(root / "data" / "truth", "aloha@truth", episodes=2, ticks=60)
    return root / "data" / "truth"


def test_the_fit_recovers_a_perturbed_gain_and_the_latency(recordings: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = calibrate_dynamics(recordings, "aloha", 0.5, "lab1", 0, lambda _: None, max_iter=6, arms=("left",))
    result = run.result
    assert result.latency_ticks == 2
    scale = {p.name: p.value for p in result.params}["left_waist.scale"]
    assert abs(scale - 1.3) < 0.08  # (the robot's own is 1: 23 % off)
    before, after = run.summary["before"], run.summary["after"]
    assert after["held_out_tcp_median_mm"] < before["held_out_tcp_median_mm"] / 5
    data = yaml.safe_load((tmp_path / "specs" / "calibrations" / "lab1.yaml").read_text())
    assert data["robot"] == "aloha" and data["dynamics"]["latency_ticks"] == 2
    assert abs(data["dynamics"]["arms"]["left"]["joints"]["left_waist"]["kp"] - 1040.0) < 0.08 * 800
    assert run.report.is_file() and run.picture.is_file()


def test_the_held_out_split_is_by_episode_and_seeded() -> None:
    fitted, held = split_episodes(range(10), 0.2, 0)
    assert len(held) == 2 and sorted(fitted + held) == list(range(10))
    assert split_episodes(range(10), 0.2, 0) == (fitted, held)
    assert split_episodes(range(10), 0.2, 1) != (fitted, held)


def _refused(dataset: Path, robot: str, cwd: Path, match: str) -> None:
    with pytest.raises(DatasetError, match=match) as err:
        calibrate_dynamics(dataset, robot, 0.0, "bad", 0, lambda _: None, max_iter=1)
    assert "\n" not in str(err.value)
    assert not (cwd / "specs" / "calibrations").exists()


def test_bad_recordings_are_refused_with_nothing_written(recordings: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _refused(recordings, "artixon-g", tmp_path, r"robot: found 'aloha@truth'; allowed: 'artixon-g'")
    lacking = shutil.copytree(recordings, tmp_path / "lacking")
    with h5py.File(lacking / "episodes" / "episode_000001.h5", "r+") as f:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f[fmt.QPOS].attrs[fmt.NAMES_ATTR]]
        f[fmt.QPOS].attrs[fmt.NAMES_ATTR] = [n.replace("left_elbow", "left_knee") for n in names]
    _refused(lacking, "aloha", tmp_path, r"observations/qpos: found joints .*left_knee.*left_elbow missing\)")
    short = tmp_path / "short"
    record_swings(short, "aloha", episodes=1, ticks=5)
    _refused(short, "aloha", tmp_path, r"action: found 5 ticks .*allowed: at least 10 ticks")
    _mount()
    done = CliRunner().invoke(app, ["calibrate", "dynamics", str(short), "--robot", "aloha"])
    assert done.exit_code == 2
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "found 5 ticks" in errors[0], errors


def test_the_cli_starts_without_the_fitting_toolbox() -> None:
    # mujoco.sysid loads plotly, jinja2 and scipy: a second every x2 command would pay; it loads when a fit starts
    code = ("import sys, x2.cli.app; x2.cli.app._mount(); "
            "print(sorted(m for m in ('mujoco.sysid', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=HEADLESS_ENV, check=True)
    assert out.stdout.strip() == "[]"


def test_the_default_name_is_made_from_any_dataset_folder(recordings: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """No --name: the calibration is named after the robot and the dataset's folder, made a name (a folder may
    hold spaces or a `+`, which a given --name may not)."""
    monkeypatch.chdir(tmp_path)
    odd = shutil.copytree(recordings, tmp_path / "lab run+1")
    run = calibrate_dynamics(odd, "aloha", 0.5, None, 0, lambda _: None, max_iter=1, arms=("left",))
    assert run.path == tmp_path / "specs" / "calibrations" / "aloha-lab-run-1.yaml" and run.path.is_file()
