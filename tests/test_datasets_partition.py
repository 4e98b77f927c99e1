"""x2.datasets.partition: a dataset's partition into train / val / test parts, under its file's name
(`partition.json`) and its older one (`splits.json`), and the command's and option's older spellings
(`x2 datasets split`, `--split`), on real short episodes through the real CLI (in process)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import h5py
import pytest
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

from x2 import format as fmt
from x2.cli.app import _mount
from x2.cli.app import app as x2_app
from x2.datasets import Dataset, validate
from x2.datasets.manage import Filter, filter_dataset
from x2.datasets.partition import episode_parts, read_partition
from x2.datasets.select import Selection
from x2.datasets.stratified_partition import part_counts

runner = CliRunner()
_mount()  # the root command, as `x2` builds it


@pytest.fixture(scope="module")
def older(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three real 8-frame episodes (split train) whose partition is in an older `splits.json`: episode 1 val."""
    root = tmp_path_factory.mktemp("older") / "booth"
    record_short_dataset(root, episodes=3, ticks=8)
    (root / fmt.OLDER_PARTITION_FILE).write_text('{\n "1": "val"\n}\n', encoding="utf-8")  # as x2 wrote it then
    return root


def _copy(src: Path, dst: Path) -> Path:
    return Path(shutil.copytree(src, dst))


def x2(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    result = runner.invoke(x2_app, args)
    return result.exit_code, result.stdout, result.stderr


def _masks(path: Path) -> dict[str, list[int]]:
    """An HDF5 export's robomimic masks, as the x2 episode indices of their demos."""
    with h5py.File(path, "r") as f:
        return {key: sorted(int(f["data"][name.decode()].attrs["x2_episode"]) for name in f["mask"][key][:])
                for key in f["mask"]}


def test_an_older_splits_json_is_read_filtered_and_exported(older: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(older, tmp_path / "booth")
    assert read_partition(root) == {1: "val"}
    # Episodes 0 and 2 have no entry: they are in the part their split names.
    assert episode_parts(Dataset.open(root), [0, 1, 2]) == {0: "train", 1: "val", 2: "train"}
    assert validate(root).valid, validate(root).problems
    filter_dataset(root, tmp_path / "val", Filter(Selection(part="val")))
    out = Dataset.open(tmp_path / "val")
    assert [r.index for r in out.episodes()] == [1]
    assert read_partition(out.root) == {1: "val"} and (out.root / fmt.PARTITION_FILE).is_file()
    assert not (out.root / fmt.OLDER_PARTITION_FILE).exists()
    code, _, err = x2(["export", "hdf5", str(root), "--state-only", "--out", "all.hdf5"], tmp_path, monkeypatch)
    assert code == 0, err
    assert _masks(tmp_path / "all.hdf5") == {"train": [0, 2], "valid": [1]}
    code, _, err = x2(["export", "hdf5", str(root), "--state-only", "--part", "val", "--out", "val.hdf5"], tmp_path,
                      monkeypatch)
    assert code == 0, err
    assert _masks(tmp_path / "val.hdf5") == {"train": [], "valid": [1]}  # robomimic always has a train mask
    # Reading changed nothing: the dataset still holds its older file alone.
    assert sorted(p.name for p in root.glob("*.json")) == [fmt.MANIFEST_FILE, fmt.SLOTS_FILE, fmt.OLDER_PARTITION_FILE]


def test_partitioning_replaces_an_older_splits_json(older: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(older, tmp_path / "booth")
    code, out, err = x2(["datasets", "partition", str(root), "--val", "0.5", "--seed", "2"], tmp_path, monkeypatch)
    assert code == 0, err
    assert f"wrote {root / fmt.PARTITION_FILE}" in out.replace("\n", "")
    assert (root / fmt.PARTITION_FILE).is_file() and not (root / fmt.OLDER_PARTITION_FILE).exists()
    parts = read_partition(root)
    assert sorted(parts) == [0, 1, 2] and list(parts.values()).count("val") == part_counts(3, 0.5, 0.0)[0]
    assert validate(root).valid, validate(root).problems


def test_a_write_stopped_before_the_older_file_went_reads_the_new_one(older: Path, tmp_path: Path) -> None:
    root = _copy(older, tmp_path / "booth")
    (root / fmt.PARTITION_FILE).write_text(json.dumps({"0": "test"}), encoding="utf-8")
    assert read_partition(root) == {0: "test"}
    report = validate(root)
    assert report.valid, report.problems
    assert any(p.where == str(root / fmt.OLDER_PARTITION_FILE) and p.severity == "info" for p in report.problems)
    (root / fmt.PARTITION_FILE).write_text("[1, 2]", encoding="utf-8")  # validate checks the file that is read
    assert [Path(p.where).name for p in validate(root).problems if p.severity == "error"] == [fmt.PARTITION_FILE]


def test_the_older_command_and_option_do_what_the_new_ones_do(older: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    new, old = _copy(older, tmp_path / "new"), _copy(older, tmp_path / "old")
    for command, root in (("partition", new), ("split", old)):
        code, _, err = x2(["datasets", command, str(root), "--val", "0.5", "--seed", "1"], tmp_path, monkeypatch)
        assert code == 0, err
    assert (old / fmt.PARTITION_FILE).read_bytes() == (new / fmt.PARTITION_FILE).read_bytes()
    assert not (old / fmt.OLDER_PARTITION_FILE).exists()
    for option, out in (("--part", "by_part"), ("--split", "by_split")):
        code, _, err = x2(["datasets", "filter", str(new), option, "val", "--out", str(tmp_path / out)], tmp_path,
                          monkeypatch)
        assert code == 0, err
    by_part, by_split = Dataset.open(tmp_path / "by_part"), Dataset.open(tmp_path / "by_split")
    assert [r.index for r in by_part.episodes()] == [r.index for r in by_split.episodes()] == \
        [i for i, v in sorted(read_partition(new).items()) if v == "val"]
    assert (by_part.root / fmt.PARTITION_FILE).read_bytes() == (by_split.root / fmt.PARTITION_FILE).read_bytes()
    # Both are kept for older command lines, out of --help.
    _, listed, _ = x2(["datasets", "--help"], tmp_path, monkeypatch)
    assert re.search(r"^│ partition ", listed, re.M) and not re.search(r"^│ split ", listed, re.M)
    _, flags, _ = x2(["datasets", "stats", "--help"], tmp_path, monkeypatch)
    assert "--part" in flags and "--split" not in flags


@pytest.mark.parametrize("command", [["datasets", "stats"], ["datasets", "filter", "--out", "picked"],
                                     ["export", "zarr", "--state-only"]], ids=" ".join)
def test_part_and_split_together_is_one_error_line(command: list[str], older: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = x2([*command[:2], str(older), *command[2:], "--part", "val", "--split", "val"], tmp_path,
                      monkeypatch)
    assert code == 2
    assert [line for line in err.splitlines() if line.strip()] == [
        "error: --part: found both --part and --split (its old spelling); allowed: one of them"]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == []
