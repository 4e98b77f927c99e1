"""When the machine says no (a full disk, a failing one, a read-only folder), every writing command ends in one
line naming the path, the cause and what is safe, exits 2 (not a signal), and loses nothing committed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.machine_says_no import (
    fault_library,
    one_error_line,
    run_failing_disk,
    run_read_only,
    run_tiny_tmpfs,
    run_without_permission,
)
from helpers.real_dataset import record_short_dataset
from helpers.teleop_streams import home_stream

from x2.datasets import Dataset, validate
from x2.files.digest import file_digest


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    return fault_library(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def short(tmp_path_factory) -> Path:
    """Two real 24-frame fruit_in_microwave episodes."""
    path = tmp_path_factory.mktemp("refusals") / "short"
    record_short_dataset(path, episodes=2, ticks=24)
    return path


@pytest.fixture(scope="module")
def other(tmp_path_factory) -> Path:
    """Two more, from another master seed (a merge refuses repeated seeds)."""
    path = tmp_path_factory.mktemp("refusals") / "other"
    record_short_dataset(path, episodes=2, ticks=24, seed=5)
    return path


def committed(root: Path) -> dict[int, str]:
    """episode -> digest of its file, after checking the file still matches its index line."""
    ds = Dataset.open(root)
    files = {r.index: file_digest(ds.episode_path(r.index)) for r in ds.episodes()}
    assert files == {r.index: r.digest for r in ds.episodes()}
    return files


def intact(root: Path, before: dict[int, str]) -> None:
    """Everything committed before is there, byte for byte, and the dataset validates."""
    report = validate(root)
    assert report.valid, report.problems
    now = committed(root)
    assert {i: now.get(i) for i in before} == before
    assert not list((root / ".inprogress").glob("*.h5")), "a half-written episode was left"


def leftovers(folder: Path, name: str) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(f".{name}.")]


# ---- collectors -----------------------------------------------------------------------------------
def test_synth_into_a_tiny_disk(tmp_path: Path) -> None:
    """x2 synth into a 3 MB tmpfs: the first episode fits, the second does not."""
    (tmp_path / "data").mkdir()
    kept = tmp_path / "kept"
    run = run_tiny_tmpfs(["synth", "--task", "fruit_in_microwave", "-n", "3", "--workers", "1",
                          "--dataset", "data/x"], tmp_path, tmp_path / "data", 3072, kept)
    line = one_error_line(run, "disk full")
    ds = Dataset.open(kept / "x")
    indices = [r.index for r in ds.episodes()]
    assert line.startswith(f"error: disk full writing data/x/.inprogress/episode_{len(indices):06d}.h5: "
                           "the episode in progress was discarded, ")
    said = f"episode {indices[0]} is committed and intact" if len(indices) == 1 else \
        "no episode of this dataset was committed yet" if not indices else "episodes "
    assert said in line and line.endswith("; free space and rerun")
    intact(kept / "x", committed(kept / "x"))


def test_synth_into_a_read_only_folder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    run = run_read_only(["synth", "--task", "fruit_in_microwave", "-n", "1", "--dataset", "data/x"], tmp_path,
                        tmp_path / "data")
    line = one_error_line(run, "read-only file system")
    assert "data/x" in line and "no dataset was created at data/x" in line
    assert not (tmp_path / "data" / "x").exists() and not list((tmp_path / "data").iterdir())


def test_synth_into_a_folder_it_may_not_write(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    run = run_without_permission(["synth", "--task", "fruit_in_microwave", "-n", "1", "--dataset", "data/x"],
                                 tmp_path, tmp_path / "data")
    line = one_error_line(run, "permission denied")
    assert "no dataset was created at data/x" in line
    assert not list((tmp_path / "data").iterdir())


def test_synth_into_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder")
    run = run_read_only(["synth", "--task", "fruit_in_microwave", "-n", "1", "--dataset", "data/x"], tmp_path,
                        tmp_path)
    line = one_error_line(run, "a file is in the way (something already exists where a folder must go)")
    assert "data" in line and (tmp_path / "data").read_text() == "not a folder"


def test_teleop_when_the_disk_fails_mid_episode(tmp_path: Path, library: Path) -> None:
    """A replayed leader arm records episode 0, then every write of episode 1 fails with EIO."""
    stream = home_stream(tmp_path / "keys.h5", 4.0, [(1.0, "next", -1), (3.5, "quit", -1)])
    root = tmp_path / "data" / "k"
    run = run_failing_disk(["collect", "teleop", "--task", "pick_place", "--device", f"replay:{stream}",
                            "--dataset", "k"], tmp_path, library, root / ".inprogress" / "episode_000001.h5",
                           errno="EIO")
    line = one_error_line(run, r"I/O error (a failing disk or a lost network mount)")
    assert "data/k/.inprogress/episode_000001.h5: the episode in progress was discarded, episode 0 is committed " \
           "and intact" in line
    assert [r.index for r in Dataset.open(root).episodes()] == [0]
    intact(root, committed(root))


def test_teleop_into_a_read_only_folder(tmp_path: Path) -> None:
    stream = home_stream(tmp_path / "keys.h5", 1.0)
    (tmp_path / "data").mkdir()
    run = run_read_only(["collect", "teleop", "--task", "pick_place", "--device", f"replay:{stream}",
                         "--dataset", "k"], tmp_path, tmp_path / "data")
    one_error_line(run, "read-only file system")
    assert not list((tmp_path / "data").iterdir())


# ---- commands that rewrite or make datasets ---------------------------------------------------------
def test_render_on_a_full_disk_keeps_the_old_versions(short: Path, tmp_path: Path, library: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    run = run_failing_disk(["render", str(root), "--cameras", "head", "--size", "48x64", "--workers", "1"],
                           tmp_path, library, root / ".rendering")
    line = one_error_line(run, "disk full")
    assert ".rendering/episode_000000.h5" in line and "episode 0 keeps its previous version" in line
    intact(root, before)
    assert not list((root / ".rendering").glob("*")) if (root / ".rendering").exists() else True


def test_render_of_a_read_only_dataset(short: Path, tmp_path: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    run = run_read_only(["render", str(root), "--cameras", "head", "--size", "48x64"], tmp_path, root)
    one_error_line(run, "read-only file system")
    intact(root, before)


def test_augment_on_a_full_disk(short: Path, tmp_path: Path, library: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    out = tmp_path / "aug"
    run = run_failing_disk(["augment", "replay", str(root), "--out", str(out)], tmp_path, library, out / ".staging")
    line = one_error_line(run, "disk full")
    assert f"{out}/.staging/episode_000000.h5: this episode was discarded, no episode of this dataset was " \
           "committed yet" in line
    intact(root, before)
    assert Dataset.open(out).episodes() == [] and validate(out).valid


@pytest.mark.parametrize("kind", ["lerobot", "zarr", "hdf5"])
def test_every_export_on_a_full_disk_leaves_no_export(kind: str, short: Path, tmp_path: Path,
                                                       library: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    target = tmp_path / "out" / f"x.{kind}"
    target.parent.mkdir()
    run = run_failing_disk(["export", kind, str(root), "--out", str(target), "--state-only"], tmp_path, library,
                           target.parent / f".{target.name}.partial", after=3)
    line = one_error_line(run, "disk full")
    assert f"no export was written there ({target}; its partial build is removed), the dataset is untouched" in line
    assert not target.exists() and not leftovers(target.parent, target.name)
    intact(root, before)


# (lerobot meets the read-only folder in the same staging code as these; its own writer is tested above)
@pytest.mark.parametrize("kind", ["zarr", "hdf5"])
def test_every_export_into_a_read_only_folder(kind: str, short: Path, tmp_path: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    target = tmp_path / "out" / f"x.{kind}"
    target.parent.mkdir()
    run = run_read_only(["export", kind, str(root), "--out", str(target), "--state-only"], tmp_path, target.parent)
    one_error_line(run, "read-only file system")
    assert not list(target.parent.iterdir())


@pytest.mark.parametrize("command", ["merge", "filter"])
def test_merge_and_filter_on_a_full_disk(command: str, short: Path, other: Path, tmp_path: Path,
                                        library: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    out = tmp_path / "made"
    args = ["datasets", "merge", str(root), str(other), "--out", str(out)] if command == "merge" else \
        ["datasets", "filter", str(root), "--out", str(out)]
    run = run_failing_disk(args, tmp_path, library, tmp_path / ".made.building", after=5)
    line = one_error_line(run, "disk full")
    assert f"no dataset was made at {out} (its partial build is removed); the sources are untouched" in line
    assert not out.exists() and not leftovers(tmp_path, "made")
    intact(root, before)


@pytest.mark.parametrize("command", ["partition", "rm"])
def test_partition_and_rm_of_a_read_only_dataset(command: str, short: Path, tmp_path: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    args = ["datasets", "partition", str(root), "--val", "0.5"] if command == "partition" else \
        ["datasets", "rm", str(root), "1", "--yes"]
    run = run_read_only(args, tmp_path, root)
    one_error_line(run, "read-only file system")
    intact(root, before)
    assert not (root / "partition.json").exists()


def test_rm_on_a_full_disk_removes_nothing(short: Path, tmp_path: Path, library: Path) -> None:
    root = shutil.copytree(short, tmp_path / "ds")
    before = committed(root)
    run = run_failing_disk(["datasets", "rm", str(root), "1", "--yes"], tmp_path, library, root)
    one_error_line(run, "disk full")
    intact(root, before)


def test_synth_whose_dataset_is_deleted_under_it(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from helpers.x2_cli import HEADLESS_ENV

    root = tmp_path / "data" / "x"
    proc = subprocess.Popen([sys.executable, "-m", "x2", "synth", "--task", "fruit_in_microwave", "-n", "3",
                             "--workers", "1", "--dataset", "data/x"], cwd=tmp_path, env=HEADLESS_ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    index = root / "episodes.jsonl"
    while proc.poll() is None and not (index.exists() and index.read_text()):  # the first episode committed
        time.sleep(0.1)
    # Renaming is the deletion the writer sees, done in one step: rmtree while synth still writes can meet a
    # file created between its listing and its rmdir.
    root.rename(tmp_path / "deleted")
    out, err = proc.communicate(timeout=240)
    run = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    line = one_error_line(run, "folder gone")
    assert "data/x" in line and "the dataset folder data/x was deleted while x2 wrote it, nothing of it is left" in line
    assert not root.exists()


def test_lerobot_export_with_video_on_a_failing_disk(short: Path, tmp_path: Path, library: Path) -> None:
    """The image threads and the video encoder meet the failing disk too: still one line, no export."""
    root = shutil.copytree(short, tmp_path / "ds")
    target = tmp_path / "out" / "x.lerobot"
    target.parent.mkdir()
    run = run_failing_disk(["export", "lerobot", str(root), "--out", str(target), "--cameras", "head", "--size",
                            "48x64"], tmp_path, library, target.parent / ".x.lerobot.partial", errno="EIO", after=3)
    one_error_line(run, r"I/O error (a failing disk or a lost network mount)")
    assert not target.exists() and not leftovers(target.parent, target.name)
