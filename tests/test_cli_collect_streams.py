"""`x2 collect waypoints --streams rgb,depth,segmentation` (and `x2 synth --streams`): the episodes it saves are the
files the same collector then `x2 render --streams` make of the same seed (every array and attr but the wall
clock's /timing, each stream's stored chunks byte for byte); without --streams nothing is drawn; a stream x2 does
not have, a camera the robot lacks, --cameras or --size without --streams: one line, exit 2, nothing written.

A task whose horizon ends a waypoint episode after 6 frames, one camera at 16x16.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.dataset_contents import deterministic_contents
from helpers.stored_images import stored_chunks
from typer.testing import CliRunner

from x2 import format as fmt
from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.render import render_dataset
from x2.sim.camera import ImageSize

_mount()
runner = CliRunner()

QUICK = "include: pick_place.yaml\nname: quick_pick\nhorizon_s: 0.2\n"  # 6 frames at 30 Hz
ALL = ("rgb", "depth", "segmentation")
STREAM_PATHS = (fmt.image_path("head"), fmt.depth_path("head"), fmt.segmentation_path("head"))


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs" / "tasks").mkdir(parents=True)
    (tmp_path / "specs" / "tasks" / "quick_pick.yaml").write_text(QUICK)
    return tmp_path


def _collect(*extra: str, n: int = 1) -> str:
    result = runner.invoke(app, ["collect", "waypoints", "--task", "quick_pick", "-n", str(n), *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_streams_while_collecting_are_the_render_afterwards(workspace: Path) -> None:
    # two episodes: the saved ones are rendered by two workers, the plain ones below by one
    said = _collect("--dataset", "live", "--streams", "rgb,depth,segmentation", "--cameras", "head", "--size", "16x16",
                    n=2)
    assert "into 2 episode(s) with 2 worker(s)" in " ".join(said.split()) or os.cpu_count() == 1, said
    _collect("--dataset", "plain", n=2)
    plain = workspace / "data" / "plain"
    with Dataset.open(plain) as ds, ds.load(0) as ep:  # the default: states only, as before
        assert ep.frames == 6 and fmt.IMAGES not in ep and fmt.DEPTH not in ep and fmt.CAMERA_POSES not in ep
    render_dataset(plain, ("head",), ImageSize(16, 16), streams=ALL)
    live = workspace / "data" / "live"
    assert deterministic_contents(live) == deterministic_contents(plain)
    for name in ("episodes/episode_000000.h5", "episodes/episode_000001.h5"):
        assert stored_chunks(live / name, STREAM_PATHS) == stored_chunks(plain / name, STREAM_PATHS)


@pytest.mark.parametrize("args, message", [
    (["--streams", "rgb,normals"], "--streams: found 'rgb,normals'; allowed: distinct names of rgb, depth, "
                                   "segmentation"),
    (["--streams", "depth", "--cameras", "nose"], "--cameras: found ['nose']; allowed: the world's cameras"),
    (["--streams", "depth", "--size", "9000x16"], "--size: found '9000x16'; allowed: 16..2160"),
    (["--cameras", "head"], "--cameras: found 'head' without --streams; allowed: with --streams"),
    (["--size", "16x16"], "--size: found '16x16' without --streams"),
])
def test_bad_streams_are_one_line_and_write_nothing(workspace: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["collect", "waypoints", "--task", "quick_pick", "-n", "1", *args])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert message in out, out
    assert not (workspace / "data").exists()


def test_synth_streams_are_the_render_afterwards(workspace: Path) -> None:
    """A pool's run: the camera check takes the world from a worker (the inline run's from its own simulator)."""
    synth = ["synth", "--task", "pick_place", "-n", "1", "--workers", "2"]
    live = runner.invoke(app, [*synth, "--dataset", "live", "--streams", "rgb,depth", "--cameras", "head", "--size",
                               "16x16"])
    assert live.exit_code == 0, live.output
    plain = runner.invoke(app, [*synth, "--dataset", "plain"])
    assert plain.exit_code == 0, plain.output
    with Dataset.open(workspace / "data" / "plain") as ds, ds.load(0) as ep:
        assert fmt.IMAGES not in ep and fmt.DEPTH not in ep
    render_dataset(workspace / "data" / "plain", ("head",), ImageSize(16, 16), streams=("rgb", "depth"))
    assert deterministic_contents(workspace / "data" / "live") == deterministic_contents(workspace / "data" / "plain")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_synth_refuses_a_camera_the_robot_lacks_before_anything_is_written(workspace: Path, workers: str) -> None:
    result = runner.invoke(app, ["synth", "--task", "pick_place", "-n", "1", "--workers", workers, "--streams", "rgb",
                                 "--cameras", "nose"])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert "--cameras: found ['nose']; allowed: the world's cameras" in out, out
    assert not (workspace / "data").exists()


def test_help_shows_the_streams_example() -> None:
    for command in ("waypoints", "teleop"):
        result = runner.invoke(app, ["collect", command, "--help"], env={"COLUMNS": "200"})
        said = " ".join(result.output.split())  # (wrapped wherever the terminal's width puts it)
        assert result.exit_code == 0 and "--streams rgb,depth,segmentation" in said, result.output
    result = runner.invoke(app, ["synth", "--help"], env={"COLUMNS": "200"})
    said = " ".join(result.output.split())  # (wrapped wherever the terminal's width puts it)
    assert result.exit_code == 0 and "--streams rgb --cameras head,right_wrist --size 72x96" in said, result.output
