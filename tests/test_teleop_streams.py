"""`x2 collect teleop --streams`: each saved episode gets the streams `x2 render --streams` draws into it, the same
arrays, attrs and stored chunks as that render pass's own episode job (x2/render/episode_file.py) makes from the
saved states; bad stream requests (the saved episodes' or the preview's) end the command in one line before anything
is recorded. Driven by a recorded leader-arm stream played back (`--device replay:FILE`), the real session, loop,
writer and render pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.dataset_contents import file_contents
from helpers.stored_images import stored_chunks
from helpers.teleop_streams import home_stream
from helpers.x2_cli import run_x2
from typer.testing import CliRunner

from x2 import format as fmt
from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.render.episode_file import write_rendered
from x2.sim.camera import ImageSize

_mount()
runner = CliRunner()
ALL = ("rgb", "depth", "segmentation")
STREAM_PATHS = (fmt.image_path("head"), fmt.depth_path("head"), fmt.segmentation_path("head"))


@pytest.mark.realtime  # (the 30 Hz loop is paced by the wall clock: `make test` runs it with the others, alone)
@pytest.mark.timeout(120)
def test_a_teleop_episode_saved_with_streams_is_its_render(tmp_path: Path) -> None:
    stream = home_stream(tmp_path / "leader.h5", 0.3, wiggle=0.3)  # the stream's end ends the one episode
    run = run_x2(["collect", "teleop", "--task", "pick_place", "--device", f"replay:{stream}", "-n", "1",
                  "--dataset", "t", "--streams", "rgb,depth,segmentation", "--cameras", "head", "--size", "16x16"],
                 tmp_path)
    assert run.returncode == 0, run.stderr
    assert "rendered rgb+depth+segmentation of head at 16x16 into 1 episode(s)" in run.stdout, run.stdout
    ds = Dataset.open(tmp_path / "data" / "t")
    (record,) = ds.episodes()
    saved = ds.episode_path(record.index)
    with ds.load(record.index) as ep:
        assert all(path in ep for path in STREAM_PATHS) and fmt.camera_extrinsics_path("head") in ep
        assert ep.dataset(fmt.depth_path("head")).shape == (ep.frames, 16, 16)
    again = tmp_path / "again.h5"  # the render pass's own job, drawn afresh from the saved states
    write_rendered(saved, again, ("head",), ImageSize(16, 16), streams=ALL)
    assert file_contents(again) == file_contents(saved)
    assert stored_chunks(again, STREAM_PATHS) == stored_chunks(saved, STREAM_PATHS)


@pytest.mark.parametrize("args, message", [
    (["--streams", "rgb,normals"], "--streams: found 'rgb,normals'; allowed: distinct names of rgb, depth"),
    (["--streams", "depth", "--cameras", "nose"], "--cameras: found ['nose']; allowed: the world's cameras"),
    (["--size", "16x16"], "--size: found '16x16' without --streams"),
    (["--preview-stream", "normals"], "--preview-stream: found 'normals'; allowed: one of rgb, depth, segmentation"),
])
def test_bad_streams_are_one_line_and_record_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    stream = home_stream(tmp_path / "leader.h5", 0.3)
    result = runner.invoke(app, ["collect", "teleop", "--task", "pick_place", "--device", f"replay:{stream}", "-n",
                                 "1", "--no-preview", *args])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert message in out, out
    assert not (tmp_path / "data").exists()
