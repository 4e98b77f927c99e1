"""An episode as an MP4 (x2.render.video, `x2 render --video`): decoded with PyAV it has one frame per recorded
frame at the painted size; the band under the cameras changes with the subtask and shows the failure from its
frame on; stored streams are read, not redrawn; a killed encode leaves nothing under the final name; bad input is
one line.

The episode is a short real recording (tests/helpers/real_dataset.py) whose labels are set here: its scripted
motion finishes no subtask, and the point is what the video says of labels that change.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import av
import h5py
import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from helpers.stored_images import store_images
from helpers.x2_cli import HEADLESS_ENV
from PIL import Image
from typer.testing import CliRunner

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.cli.app import _mount, app
from x2.datasets import Dataset, Episode
from x2.render.grid import Box
from x2.render.video import VideosProgress, dataset_videos, episode_video
from x2.render.video_frame import FrameLabels
from x2.sim.camera import ImageSize

TICKS = 8
SIZE = ImageSize(60, 80)
CAMERAS = ("head", "left_wrist")
FAIL_AT = 6
LONG = 40


def decode(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def region(picture: np.ndarray, box: Box) -> np.ndarray:
    return picture[box.y:box.y + box.height, box.x:box.x + box.width].astype(np.int16)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One episode: subtask open_door for frames 0-3, pick_fruit from 4 (the right arm the other way round), and
    pick_fruit failed at frame FAIL_AT."""
    root = tmp_path_factory.mktemp("video") / "short"
    record_short_dataset(root, episodes=1, ticks=TICKS)
    with h5py.File(episode_file(root), "r+") as f:
        whole = np.array([0] * 4 + [1] * (TICKS - 4), np.int16)
        f[fmt.SUBTASK_INDEX][...] = whole
        f[fmt.ARM_SUBTASK_INDEX][...] = np.stack([whole, 1 - whole], axis=1)
        f[fmt.DAG].attrs["failure"] = json.dumps(["pick_fruit", FAIL_AT, "timeout"])
    return root


def episode_file(root: Path) -> Path:
    return root / "episodes" / "episode_000000.h5"


def test_the_video_decodes_to_every_frame_and_says_the_labels_of_each(labelled: Path, tmp_path: Path) -> None:
    out = tmp_path / "v.mp4"
    with Episode(episode_file(labelled)) as ep:
        labels = FrameLabels.of(ep)
        summary = episode_video(ep, CAMERAS, SIZE, out)
        episode_video(ep, CAMERAS, SIZE, tmp_path / "again.mp4")
    frames = decode(out)
    assert len(frames) == TICKS == summary.frames
    assert {f.shape for f in frames} == {(summary.height, summary.width, 3)}
    assert summary.width % 2 == summary.height % 2 == 0 and summary.width >= 2 * SIZE.width
    # the same frames again decode to the same pixels (the bytes were once one apart under load: the note on
    # issue 43; the pictures a stranger sees are what must not move)
    assert all(np.array_equal(a, b) for a, b in zip(decode(tmp_path / "again.mp4"), frames, strict=True))
    # What the band says, per arm, as the file labels it:
    assert labels.lines(1)[1:3] == ["left: open_door", "right: pick_fruit"]
    assert labels.lines(5)[1:3] == ["left: pick_fruit", "right: open_door"]
    assert labels.lines(FAIL_AT - 1)[3] == "" and labels.lines(FAIL_AT)[3] == "FAILED: pick_fruit (timeout) at frame 6"
    # ... and what the decoded pictures show: the subtask line is the same picture while the subtask holds (only
    # the codec's noise apart), another picture when it changes; the failure line is blank paper until the failure.
    subtask, failure = summary.layout.band[1], summary.layout.band[3]
    same = np.abs(region(frames[1], subtask) - region(frames[2], subtask)).mean()
    changed = np.abs(region(frames[1], subtask) - region(frames[5], subtask)).mean()
    assert same < 1.0 and changed > 5 * max(same, 0.5), (same, changed)
    ink = [int((region(f, failure).max(axis=2) < 200).sum()) for f in frames]
    assert ink[:FAIL_AT] == [0] * FAIL_AT and min(ink[FAIL_AT:]) > 20, ink


def test_stored_streams_are_read_and_scaled_not_drawn_again(labelled: Path, tmp_path: Path) -> None:
    root = tmp_path / "stored"
    shutil.copytree(labelled, root)
    store_images(root, CAMERAS, ImageSize(30, 40), invert=True)  # (inverted: a redraw would show)
    with Episode(episode_file(root)) as ep:
        summary = episode_video(ep, None, SIZE, tmp_path / "v.mp4")
        stored = ep.dataset(f"{fmt.IMAGES}/head")[3]
    tile = summary.layout.tiles[0]
    assert summary.frames == TICKS
    shown = region(decode(tmp_path / "v.mp4")[3], tile)
    scaled = np.asarray(Image.fromarray(stored).resize((SIZE.width, SIZE.height), Image.Resampling.BILINEAR))
    assert np.abs(shown - scaled.astype(np.int16)).mean() < 12
    assert np.abs(shown - (255 - scaled).astype(np.int16)).mean() > 40


_KILLED = """
import os, signal, sys
from pathlib import Path
from x2.datasets import Episode
from x2.render.video import episode_video
from x2.sim.camera import ImageSize

def die(done, total):
    # killed once the encoder has written into its temporary file (the muxer starts it at the first packet, after
    # the encoder's lookahead)
    if any(p.name.startswith(".v.mp4.tmp-") and p.stat().st_size > 0 for p in Path(sys.argv[2]).parent.iterdir()):
        os.kill(os.getpid(), signal.SIGKILL)

with Episode(Path(sys.argv[1])) as ep:
    episode_video(ep, ("head",), ImageSize(60, 80), Path(sys.argv[2]), die)
"""


def test_a_killed_encode_leaves_the_old_file_and_the_next_one_clears_its_leftover(tmp_path: Path) -> None:
    record_short_dataset(tmp_path / "long", episodes=1, ticks=LONG)  # (longer than the encoder's lookahead)
    out = tmp_path / "v.mp4"
    out.write_bytes(b"the video before")
    done = subprocess.run([sys.executable, "-c", _KILLED, str(episode_file(tmp_path / "long")), str(out)],
                          env=HEADLESS_ENV, capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr
    assert out.read_bytes() == b"the video before"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".v.mp4.tmp-")]
    assert len(leftovers) == 1 and (tmp_path / leftovers[0]).stat().st_size > 0  # the encode had begun
    with Episode(episode_file(tmp_path / "long")) as ep:
        episode_video(ep, ("head",), SIZE, out)
    assert len(decode(out)) == LONG and sorted(p.name for p in tmp_path.iterdir()) == ["long", "v.mp4"]


def test_an_encode_that_fails_leaves_no_file(labelled: Path, tmp_path: Path) -> None:
    def interrupted(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with Episode(episode_file(labelled)) as ep, pytest.raises(KeyboardInterrupt):
        episode_video(ep, ("head",), SIZE, tmp_path / "v.mp4", interrupted)
    assert list(tmp_path.iterdir()) == []


def test_an_episode_without_states_or_stored_frames_is_one_line(labelled: Path, tmp_path: Path) -> None:
    root = tmp_path / "bare"
    shutil.copytree(labelled, root)
    with h5py.File(episode_file(root), "r+") as f:  # (a real recording without images: no states, no streams)
        del f[fmt.STATES]
        f.attrs[fmt.SOURCE_ATTR] = "real"
    with Episode(episode_file(root)) as ep, pytest.raises(DatasetError, match="no stored camera streams and no "
                                                                            "/states to draw them from .*a real"):
        episode_video(ep, None, SIZE, tmp_path / "v.mp4")
    with pytest.raises(DatasetError, match="--episodes: found 3; allowed"):
        dataset_videos(Dataset.open(labelled), [3], None, SIZE, tmp_path / "videos")
    assert not (tmp_path / "v.mp4").exists() and not (tmp_path / "videos").exists()


def test_x2_render_video_writes_one_mp4_per_episode_the_same_bytes_with_two_workers(tmp_path: Path) -> None:
    record_short_dataset(tmp_path / "pair", episodes=2, ticks=4)
    _mount()
    done = CliRunner().invoke(app, ["render", str(tmp_path / "pair"), "--video", str(tmp_path / "videos"),
                                    "--size", "60x80", "--cameras", "head", "--workers", "2"])
    assert done.exit_code == 0, done.output
    names = sorted(p.name for p in (tmp_path / "videos").iterdir())
    assert names == ["episode_000000.mp4", "episode_000001.mp4"]
    assert "encoding" in done.stdout and "ms/frame" in done.stdout
    seen: list[VideosProgress] = []
    here = dataset_videos(Dataset.open(tmp_path / "pair"), [0, 1], ("head",), SIZE, tmp_path / "here", seen.append)
    assert seen[-1] == VideosProgress(8, 8, 2, 2) and max(p.episodes_done for p in seen) == 2  # (never "3/2")
    assert [v.frames for v in here] == [len(decode(tmp_path / "videos" / n)) for n in names] == [4, 4]
    for n in names:  # two workers draw what one process draws (decoded: see the test above)
        pairs = zip(decode(tmp_path / "here" / n), decode(tmp_path / "videos" / n), strict=True)
        assert all(np.array_equal(a, b) for a, b in pairs), n


def test_a_file_in_the_way_of_the_video_folder_is_one_line(labelled: Path, tmp_path: Path) -> None:
    _mount()
    (tmp_path / "afile").write_text("")
    refused = CliRunner().invoke(app, ["render", str(labelled), "--video", str(tmp_path / "afile" / "videos")])
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.exit_code == 2 and len(lines) == 1, refused.output
    assert "video folder: found it cannot be made" in lines[0] and lines[0].startswith("error: ")
