"""The prologue and reports every exporter shares (x2/export/sources.py, x2/export/request.py): default
targets, names from the manifest, progress as episodes and frames are written."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import h5py
import pytest
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

import x2.cli.progress as progress_module
import x2.export.sources as sources_module
from x2.base.errors import DatasetError, ExportError
from x2.cli.app import _mount, app
from x2.datasets import Dataset, Episode
from x2.datasets.index import write_index
from x2.export.hdf5 import export_hdf5
from x2.export.request import ExportProgress, ExportRequest, default_target
from x2.export.zarr import ZarrOptions, export_zarr
from x2.files.digest import DigestMismatch, file_digest
from x2.format import string_array
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.sim.camera import ImageSize

_mount()  # the root command, as `x2` builds it


@pytest.fixture(scope="module")
def booth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real 8-frame episodes."""
    root = tmp_path_factory.mktemp("sources") / "booth"
    record_short_dataset(root, episodes=2, ticks=8, seed=7)
    return root


def test_default_targets_are_named_after_the_dataset(booth: Path) -> None:
    ds = Dataset.open(booth)
    assert {k: str(default_target(ds, k)) for k in ("lerobot", "zarr", "zarr zip", "hdf5")} == {
        "lerobot": "exports/booth-lerobot", "zarr": "exports/booth.zarr", "zarr zip": "exports/booth.zarr.zip",
        "hdf5": "exports/booth.hdf5"}
    assert ExportRequest(ds, tuple(ds.episodes())).target_path("hdf5") == (Path("exports") / "booth.hdf5").absolute()


@pytest.mark.parametrize("exporter", [export_zarr, export_hdf5])
def test_progress_counts_every_episode_and_frame(booth: Path, tmp_path: Path, exporter) -> None:
    ds = Dataset.open(booth)
    steps: list[ExportProgress] = []
    exporter(ExportRequest(ds, tuple(ds.episodes()), tmp_path / "out", state_only=True), progress=steps.append)
    writing = [s for s in steps if s.phase == "writing"]
    assert [(s.episodes_done, s.frames_done) for s in writing][-1] == (2, 16)
    assert all(s.episodes == 2 and s.frames == 16 for s in steps)
    assert [s.frames_done for s in writing] == sorted(s.frames_done for s in writing)
    assert steps[-1].phase == "reading back"


def test_names_that_disagree_with_the_manifest_are_refused(booth: Path, tmp_path: Path) -> None:
    root = shutil.copytree(booth, tmp_path / "renamed")
    ds = Dataset.open(root)
    path = ds.episode_path(1)
    with h5py.File(path, "r+") as f:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f["observations/qpos"].attrs["names"]]
        f["observations/qpos"].attrs["names"] = string_array([*names[:-1], "elbow"])
    # restamp: the file is as committed, so the names check (not the checksum) is what refuses it
    write_index(ds.index_path, [replace(r, bytes=path.stat().st_size, digest=file_digest(path)) if r.index == 1
                                else r for r in ds.episodes()])
    with pytest.raises(ExportError) as caught:
        export_zarr(ExportRequest(ds, tuple(ds.episodes()), tmp_path / "z.zarr", state_only=True))
    message = str(caught.value)
    assert message.startswith(f"{path}: observations/qpos: names: found") and "'elbow'" in message
    assert "manifest.json joint_names" in message and "\n" not in message
    assert not (tmp_path / "z.zarr").exists()


def test_off_a_terminal_the_command_prints_progress_lines(booth: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each phase of the export gets its line (an interval of 0 s: this small export is long enough)."""
    monkeypatch.setattr(progress_module, "LINE_EVERY_S", 0.0)
    run = CliRunner().invoke(app, ["export", "hdf5", str(booth), "--out", str(tmp_path / "h.hdf5"), "--state-only"])
    assert run.exit_code == 0, run.output
    assert "export: writing: 0/16 frames (0/2 episodes)" in run.stdout.splitlines()
    assert "export: reading back: 16/16 frames (2/2 episodes)" in run.stdout.splitlines()


class Opens:
    """Every open of an episode file by x2: a checked read (x2.datasets.verified) or an `Episode` on its path (a
    first look, any other reader)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[Path] = []
        self.looked: list[Path] = []
        real_read, real_init = sources_module.read_verified, Episode.__init__

        def counting_read(ds: Dataset, record):
            self.read.append(ds.episode_path(record.index))
            return real_read(ds, record)

        def counting_init(episode: Episode, path: Path, swmr: bool = False, image: bytes | None = None) -> None:
            if image is None:  # (one from memory is the checked read's own, counted above)
                self.looked.append(Path(path))
            real_init(episode, path, swmr, image)

        monkeypatch.setattr(sources_module, "read_verified", counting_read)
        monkeypatch.setattr(Episode, "__init__", counting_init)


@pytest.mark.parametrize("kind", ["zarr", "hdf5", "lerobot"])
@pytest.mark.parametrize("images", [False, True], ids=["state-only", "rendered"])
def test_each_episode_file_is_opened_once_per_export(booth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      kind: str, images: bool) -> None:
    """Every reader of the export (names, cameras, arrays, frames rendered on the fly, LeRobot's plan and
    read-back check) works from the one checked read of each file, in export order."""
    opens = Opens(monkeypatch)
    flags = ["--cameras", "head", "--size", "24x32"] if images else ["--state-only"]
    out = tmp_path / f"out.{kind}"
    run = CliRunner().invoke(app, ["export", kind, str(booth), "--out", str(out), *flags])
    assert run.exit_code == 0, run.output
    ds = Dataset.open(booth)
    assert opens.read == [ds.episode_path(r.index) for r in ds.episodes()] and opens.looked == []


@pytest.fixture(scope="module")
def half_rendered(booth: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The booth's two episodes, the first with a stored head stream, the second without (rendered in part)."""
    from helpers.stored_images import store_images

    root = shutil.copytree(booth, tmp_path_factory.mktemp("half") / "booth")
    store_images(root, ["head"], ImageSize(24, 32))
    ds = Dataset.open(root)
    path = ds.episode_path(1)
    with h5py.File(path, "r+") as f:
        del f["observations/images/head"]
    write_index(ds.index_path, [replace(r, bytes=path.stat().st_size, digest=file_digest(path)) if r.index == 1
                                else r for r in ds.episodes()])
    return root


@pytest.mark.parametrize("exporter", [export_zarr, export_hdf5])
def test_a_later_episode_that_unsettles_the_first_ones_choice_starts_again(
        half_rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exporter) -> None:
    """The first episode stores head, the second does not: the cameras every episode stores are none, so the
    export has the render pass's defaults, as a first look at every file decides; the first try's partial
    build is gone."""
    ds = Dataset.open(half_rendered)
    paths = [ds.episode_path(r.index) for r in ds.episodes()]
    opens = Opens(monkeypatch)
    steps: list[ExportProgress] = []
    out = tmp_path / "out"
    summary = exporter(ExportRequest(ds, tuple(ds.episodes()), out), progress=steps.append)
    assert sorted(summary.image_sizes) == sorted(DEFAULT_CAMERAS)
    assert all(size == DEFAULT_SIZE for size in summary.image_sizes.values())
    assert opens.read == [*paths, *paths] and opens.looked == paths  # the first try, the look, the second try
    assert [s.frames_done for s in steps if s.phase == "writing"][-1] == 16
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # given the cameras and a size, the first episode's streams settle nothing: one read of each file
    opens.read.clear(), opens.looked.clear()
    exporter(ExportRequest(ds, tuple(ds.episodes()), tmp_path / "again", cameras=("head",)),
             *([ZarrOptions(image_size=ImageSize(24, 32))] if exporter is export_zarr else []))
    if exporter is export_zarr:
        assert (opens.read, opens.looked) == (paths, [])
    else:  # HDF5 has no --image-size: a stream keeps its stored size only where every episode stores it alike
        assert opens.looked == paths


def test_a_damaged_later_episode_is_refused_before_it_is_written(booth: Path, tmp_path: Path) -> None:
    """Damage found by the read that feeds the export: the episodes before it were written, then the whole
    partial build goes."""
    root = shutil.copytree(booth, tmp_path / "damaged")
    ds = Dataset.open(root)
    path = ds.episode_path(1)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    path.write_bytes(bytes(raw))
    for exporter in (export_zarr, export_hdf5):
        with pytest.raises(DigestMismatch) as caught:
            exporter(ExportRequest(ds, tuple(ds.episodes()), tmp_path / "out", state_only=True))
        assert str(caught.value).startswith(f"{path}: sha256: found") and "\n" not in str(caught.value)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged"]


def test_a_later_episode_whose_headers_do_not_read_is_closed(booth: Path, tmp_path: Path) -> None:
    """The error from a file's headers comes through, and the file read for it is closed, not left to the
    garbage collector (an export holds one episode open at a time, failing or not)."""
    root = shutil.copytree(booth, tmp_path / "bad-attr")
    ds = Dataset.open(root)
    path = ds.episode_path(1)
    with h5py.File(path, "r+") as f:
        f["labels/arm_subtask_index"].attrs["arm_names"] = 7
    write_index(ds.index_path, [replace(r, bytes=path.stat().st_size, digest=file_digest(path)) if r.index == 1
                                else r for r in ds.episodes()])
    for exporter in (export_zarr, export_hdf5):
        with pytest.raises(DatasetError) as caught:
            exporter(ExportRequest(ds, tuple(ds.episodes()), tmp_path / "out", state_only=True))
        assert "arm_names: found 7" in str(caught.value)
        assert h5py.h5f.get_obj_ids(types=h5py.h5f.OBJ_FILE) == []
        assert not (tmp_path / "out").exists()
