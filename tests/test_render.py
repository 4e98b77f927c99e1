"""The render pass (x2.render.dataset, `x2 render`): where the pixels land, that they are the pixels and
poses of the recorded states, resume, worker-count independence, refusals, and the interrupted rename.

Episodes are short real recordings (tests/helpers/real_dataset.py) rendered at 96x128.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import h5py
import hdf5plugin
import mujoco
import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import run_x2

from x2.base.errors import DatasetError
from x2.datasets import Dataset, Episode, validate
from x2.datasets.index import write_index
from x2.datasets.rewrite import staged_path
from x2.files.digest import file_digest
from x2.format import CAMERA_POSES, IMAGES
from x2.recorded.world import open_world
from x2.render import render_dataset
from x2.render.episode_file import write_rendered
from x2.sim.camera import ImageSize
from x2.sim.mujoco.state import STATE_SPEC

SIZE = ImageSize(96, 128)
CAMERAS = ("head", "left_wrist")
TICKS = 12


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("render") / "short"
    record_short_dataset(root, episodes=2, ticks=TICKS)
    return root


@pytest.fixture(scope="module")
def rendered(pristine: Path) -> Path:
    """The pristine dataset rendered once with one worker."""
    root = pristine.parent / "rendered"
    shutil.copytree(pristine, root)
    summary = render_dataset(root, CAMERAS, SIZE, workers=1)
    assert [e.drawn for e in summary.episodes] == [CAMERAS, CAMERAS]
    return root


def _copy(src: Path, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _episode_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "episodes").glob("*.h5"))}


def test_images_and_poses_land_where_the_format_says(rendered: Path) -> None:
    ds = Dataset.open(rendered)
    for record in ds.episodes():
        with h5py.File(ds.episode_path(record.index), "r") as f:
            for cam in CAMERAS:
                images = f[f"{IMAGES}/{cam}"]
                assert images.shape == (record.frames, 96, 128, 3) and images.dtype == np.uint8
                assert images.chunks == (1, 96, 128, 3)
                assert images.id.get_create_plist().get_filter(0)[0] == hdf5plugin.ZSTD_ID
                k = images.attrs["intrinsics"]
                fovy = float(images.attrs["fovy_deg"])
                assert k.shape == (3, 3) and k[0, 2] == 64 and k[1, 2] == 48
                assert k[1, 1] == pytest.approx(48 / np.tan(np.deg2rad(fovy) / 2))
                assert (images.attrs["height"], images.attrs["width"]) == (96, 128)
                poses = f[f"{CAMERA_POSES}/{cam}"]
                assert poses.shape == (record.frames, 7) and poses.dtype == np.float64
            assert f[f"{IMAGES}/head"].attrs["body"] == "torso"
            assert f[f"{IMAGES}/left_wrist"].attrs["body"] == "left_gripper"
    report = validate(rendered)
    assert report.valid and report.episodes == 2, report.problems


def test_poses_are_the_kinematics_and_pixels_a_direct_render(rendered: Path) -> None:
    with Dataset.open(rendered).load(1) as ep, open_world(ep) as world:
        model = world.backend.model
        data = mujoco.MjData(model)
        renderer = mujoco.Renderer(model, 96, 128)
        states = ep["states"]
        for t in (0, TICKS // 2, TICKS - 1):
            mujoco.mj_setState(model, data, states[t], STATE_SPEC)
            mujoco.mj_forward(model, data)  # the full pipeline: poses and pixels need no more than this
            for cam in CAMERAS:
                cid = model.camera(cam).id
                quat = np.empty(4)
                mujoco.mju_mat2Quat(quat, data.cam_xmat[cid])
                pose = np.concatenate([data.cam_xpos[cid], quat])
                np.testing.assert_array_equal(ep[f"{CAMERA_POSES}/{cam}"][t], pose)
                renderer.update_scene(data, camera=cid)
                np.testing.assert_array_equal(ep.dataset(f"{IMAGES}/{cam}")[t], renderer.render())
        renderer.close()


def test_everything_else_in_the_file_is_unchanged(pristine: Path, rendered: Path) -> None:
    with h5py.File(pristine / "episodes/episode_000000.h5") as old, \
            h5py.File(rendered / "episodes/episode_000000.h5") as new:
        seen: list[str] = []

        def same(name: str, obj: h5py.HLObject) -> None:
            seen.append(name)
            if isinstance(obj, h5py.Dataset):
                np.testing.assert_array_equal(obj[()], new[name][()])
                assert obj.dtype == new[name].dtype and obj.chunks == new[name].chunks
            for key in obj.attrs:
                assert obj.attrs.get_id(key).dtype == new[name].attrs.get_id(key).dtype, (name, key)
                np.testing.assert_array_equal(obj.attrs[key], new[name].attrs[key])

        old.visititems(same)
        same("/", old)
        assert "states" in seen and "labels/subtask_index" in seen
    listed = {r.index: r.bytes for r in Dataset.open(rendered).episodes()}
    assert listed == {i: (rendered / f"episodes/episode_{i:06d}.h5").stat().st_size for i in (0, 1)}


def test_resume_skips_done_episodes_and_cameras(pristine: Path, tmp_path: Path) -> None:
    root = _copy(pristine, tmp_path, "resume")
    first = render_dataset(root, CAMERAS, SIZE, episodes=[0])
    assert [(e.index, e.drawn) for e in first.episodes] == [(0, CAMERAS)]
    done = (root / "episodes/episode_000000.h5").read_bytes()
    second = render_dataset(root, CAMERAS, SIZE, workers=2)
    assert [(e.index, e.drawn) for e in second.episodes] == [(0, ()), (1, CAMERAS)]
    assert (root / "episodes/episode_000000.h5").read_bytes() == done
    more = render_dataset(root, ("head", "right_wrist"), SIZE)  # only the new camera is drawn
    assert [e.drawn for e in more.episodes] == [("right_wrist",), ("right_wrist",)]
    with Episode(root / "episodes/episode_000000.h5") as ep:
        assert ep.cameras == ["head", "left_wrist", "right_wrist"]
    assert validate(root).valid


def test_same_bytes_with_one_and_two_workers(pristine: Path, rendered: Path, tmp_path: Path) -> None:
    root = _copy(pristine, tmp_path, "two")
    summary = render_dataset(root, CAMERAS, SIZE, workers=2)
    assert summary.workers == 2
    assert _episode_files(root) == _episode_files(rendered)
    assert (root / "episodes.jsonl").read_bytes() == (rendered / "episodes.jsonl").read_bytes()


def test_another_size_is_refused_unless_overwrite(rendered: Path, tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path, "resize")
    before = _episode_files(root)
    with pytest.raises(DatasetError, match=r"images/head: found 96x128; allowed: 48x64 as asked"):
        render_dataset(root, ("head",), ImageSize(48, 64))
    assert _episode_files(root) == before
    summary = render_dataset(root, ("head",), ImageSize(48, 64), overwrite=True)
    assert [e.drawn for e in summary.episodes] == [("head",), ("head",)]
    with Episode(root / "episodes/episode_000000.h5") as ep:
        assert ep.dataset(f"{IMAGES}/head").shape[1:] == (48, 64, 3)
        assert ep.dataset(f"{IMAGES}/left_wrist").shape[1:] == (96, 128, 3)  # untouched
    assert all(e.bytes_after < e.bytes_before for e in summary.episodes)  # the old stream's space is gone
    assert validate(root).valid


def test_a_render_killed_between_log_and_rename_is_finished_by_the_next_writer(pristine: Path,
                                                                               tmp_path: Path) -> None:
    # The state a kill between the two commit steps leaves: staged file complete, log already new.
    root = _copy(pristine, tmp_path, "between")
    staged = staged_path(root, 1)
    write_rendered(root / "episodes/episode_000001.h5", staged, CAMERAS, SIZE)
    old = Dataset.open(root).episodes()
    write_index(root / "episodes.jsonl", [replace(r, bytes=staged.stat().st_size, digest=file_digest(staged))
                                          if r.index == 1 else r for r in old])
    stray = staged_path(root, 0)
    stray.write_bytes(b"half a file")
    report = validate(root)
    assert report.valid, report.problems
    assert {p.severity for p in report.problems} == {"info"} and len(report.problems) == 2
    staged_bytes = staged.read_bytes()
    summary = render_dataset(root, CAMERAS, SIZE)  # its lock finishes the rename, removes the stray
    assert [e.drawn for e in summary.episodes] == [CAMERAS, ()]
    assert (root / "episodes/episode_000001.h5").read_bytes() == staged_bytes
    assert not list((root / ".rendering").iterdir())
    assert validate(root).valid and not validate(root).problems


def test_cli_renders_the_last_dataset_and_names_it(rendered: Path, tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path, "cli")
    (tmp_path / ".x2").mkdir()
    (tmp_path / ".x2/state.json").write_text(f'{{"last_dataset": "{root}"}}')
    out = run_x2(["render", "--cameras", "head,left_wrist", "--size", "96x128"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"dataset: {root} (last used)"
    assert "nothing to render" in out.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--size", "96by128"], "error: --size: found '96by128'; allowed: HxW, e.g. 480x640"),
    (["--size", "2000x2000"], "error: --size: found 2000x2000; allowed: up to 960x1280"),
    (["--cameras", "head,nose"], "error: --cameras: found ['nose']; allowed: the world's cameras"),
    (["--streams", "rgb,depth", "--video", "videos"], "error: --streams: found 'rgb,depth' with --video; allowed: "
                                                      "--streams only when rendering into the episode files"),
    (["--streams", "depth,heat", "--contact-sheet", "s.png"], "error: --streams: found 'depth,heat'; allowed: "
                                                              "distinct names of rgb, depth, segmentation"),
])
def test_cli_bad_size_or_cameras_is_one_line(pristine: Path, tmp_path: Path, args: list[str], message: str) -> None:
    root = _copy(pristine, tmp_path, "bad")
    before = _episode_files(root)
    out = run_x2(["render", str(root), *args], cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith(message), out.stderr
    assert _episode_files(root) == before and not (tmp_path / "videos").exists() and not (tmp_path / "s.png").exists()


def test_more_refused_requests_name_what_is_allowed(pristine: Path) -> None:
    with pytest.raises(DatasetError, match=r"^--size: found '8x8'; allowed: 16\.\.2160 x 16\.\.3840 pixels$"):
        ImageSize.parse("8x8")
    for cameras in ((), ("head", "head")):
        with pytest.raises(DatasetError, match=r"^--cameras: found .*; allowed: one or more distinct camera names$"):
            render_dataset(pristine, cameras, SIZE)
    with pytest.raises(DatasetError, match=r"--episodes: found 7; allowed: 0-1"):
        render_dataset(pristine, CAMERAS, SIZE, episodes=[7])
    assert not (pristine / ".rendering").exists() or not list((pristine / ".rendering").iterdir())


def test_contact_sheet_is_written_from_the_episode(rendered: Path, tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "sheet.png"
    result = run_x2(["render", str(rendered), "--contact-sheet", str(out), "--episode", "1",
                     "--cameras", "head,left_wrist", "--size", "96x128"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    image = np.asarray(Image.open(out).convert("RGB"))
    # Two rows of 96-pixel tiles and (short episode, no events) two columns of 128: start and end.
    assert image.shape[0] > 2 * 96 and image.shape[1] > 2 * 128
    with Episode(rendered / "episodes/episode_000001.h5") as ep:
        tile = ep.dataset(f"{IMAGES}/head")[0]
    found = [(y, x) for y in range(image.shape[0] - 95) for x in range(image.shape[1] - 127)
             if image[y, x, 0] == tile[0, 0, 0] and np.array_equal(image[y:y + 96, x:x + 128], tile)]
    assert found, "the start frame of the head camera is on the sheet"
    assert not list(tmp_path.glob(".sheet.png*"))  # no temp file left beside it
