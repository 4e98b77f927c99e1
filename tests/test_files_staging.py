"""x2.files.staging, the one primitive behind every file that appears whole or not at all: its contract's steps on
a real folder (the kill, full-disk and leftover tests of the commands that use it are test_refusals.py,
test_datasets_crash.py, test_chaos.py, test_export_*.py)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from x2.base.errors import DatasetError, ExportError, StorageError
from x2.datasets.building import building
from x2.files.atomic import replacing, write_text
from x2.files.staging import OLD, PARTIAL, TEMP, staged, staging


def _dead_pid() -> int:
    """A pid whose process has ended (its writer was killed, as far as a leftover knows)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_replaced_file_is_the_new_one_or_the_old_one_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "index.jsonl"
    write_text(target, "old\n")
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("the writer failed mid-way")
    assert target.read_text() == "old\n" and _hidden(tmp_path) == []
    write_text(target, "new\n")
    assert target.read_text() == "new\n" and _hidden(tmp_path) == []


def test_the_next_writer_removes_what_dead_writers_left_and_never_a_live_ones(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    dead, live = _dead_pid(), 1  # (pid 1 is always running)
    for kind in (TEMP, OLD):
        (tmp_path / f".a.txt{kind}{dead}").write_text("left by a killed writer")
    (tmp_path / f".a.txt{TEMP}{live}").write_text("another writer's, still running")
    (tmp_path / f".b.txt{TEMP}{dead}").write_text("another target's")
    write_text(target, "x")
    assert _hidden(tmp_path) == [f".a.txt{TEMP}{live}", f".b.txt{TEMP}{dead}"]


def test_a_file_in_the_way_of_a_replaced_file_is_an_error_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "state.json").mkdir()
    with pytest.raises(IsADirectoryError):
        write_text(tmp_path / "state.json", "{}")
    assert (tmp_path / "state.json").is_dir() and _hidden(tmp_path) == []


def test_an_overwritten_folder_stays_until_the_new_one_is_complete(tmp_path: Path) -> None:
    target = tmp_path / "out.zarr"
    with staged(target) as tmp:
        tmp.mkdir()
        (tmp / "v1").write_text("1")
    with pytest.raises(RuntimeError), staged(target, overwrite=True) as tmp:
        tmp.mkdir()
        (tmp / "v2").write_text("2")
        raise RuntimeError("the read-back did not match")
    assert sorted(p.name for p in target.iterdir()) == ["v1"] and _hidden(tmp_path) == []
    with staged(target, overwrite=True) as tmp:
        tmp.write_text("a file now")
    assert target.read_text() == "a file now" and _hidden(tmp_path) == []


def test_a_target_set_aside_is_put_back_when_the_rename_fails(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.lerobot"
    target.mkdir()
    (target / "v1").write_text("1")

    def failing_disk(src: object, dst: object) -> None:  # (the rename meets an I/O error)
        raise OSError(errno.EIO, "Input/output error", str(dst))

    with pytest.raises(StorageError, match="the previous export is still there"), \
            staged(target, overwrite=True) as tmp:
        tmp.mkdir()
        (tmp / "v2").write_text("2")
        monkeypatch.setattr(os, "replace", failing_disk)
    monkeypatch.undo()
    assert sorted(p.name for p in target.iterdir()) == ["v1"] and _hidden(tmp_path) == []


def test_an_export_refuses_an_existing_target_without_overwrite_and_one_made_meanwhile(tmp_path: Path) -> None:
    target = tmp_path / "x.hdf5"
    target.write_text("someone's")
    with pytest.raises(ExportError, match="target: found an existing file"), staged(target):
        pass
    target.unlink()
    with pytest.raises(ExportError, match="found one created meanwhile"), staged(target) as tmp:
        tmp.write_text("mine")
        target.write_text("someone's, made while this export ran")
    assert target.read_text() == "someone's, made while this export ran" and _hidden(tmp_path) == []


def test_a_refused_write_becomes_one_line_saying_what_is_safe(tmp_path: Path) -> None:
    target = tmp_path / "out" / "x.zarr"
    with pytest.raises(StorageError) as refused, staged(target) as tmp:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp / "chunk"))
    assert str(refused.value) == (f"disk full writing {tmp_path}/out/.x.zarr{PARTIAL}{os.getpid()}/chunk: "
                                  f"no export was written there ({target}; its partial build is removed), the "
                                  "dataset is untouched; free space and rerun")
    assert not target.exists() and _hidden(target.parent) == []


def test_a_store_file_lets_the_refusal_through_to_the_layer_that_knows_what_is_safe(tmp_path: Path) -> None:
    with pytest.raises(OSError) as raised, replacing(tmp_path / "episodes.jsonl"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert not isinstance(raised.value, StorageError) and _hidden(tmp_path) == []


def test_a_folder_deleted_under_the_store_is_not_made_again(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), replacing(tmp_path / "gone" / "episodes.jsonl") as tmp:
        tmp.write_text("{}")
    assert not (tmp_path / "gone").exists()


def test_a_new_dataset_is_built_under_its_own_name_in_a_hidden_box(tmp_path: Path) -> None:
    target = tmp_path / "merged"
    with building(target) as inner:
        assert inner.name == "merged" and inner.parent.name.startswith(".merged.building-")
        inner.mkdir()
        (inner / "manifest.json").write_text("{}")
    assert (target / "manifest.json").is_file() and _hidden(tmp_path) == []
    with pytest.raises(DatasetError, match="--out: found an existing folder"), building(target):
        pass


def test_a_nested_build_refuses_a_target_made_while_it_ran_and_leaves_theirs(tmp_path: Path) -> None:
    target = tmp_path / "d"

    def refuse(path: Path) -> None:
        if path.exists():
            raise DatasetError(f"{path}: found one")

    with pytest.raises(DatasetError, match="found one"), \
            staging(target, ".building-", existing="refuse", refuse=refuse, nested=True) as inner:
        inner.mkdir()
        (inner / "f").write_text("1")
        target.mkdir()
        (target / "theirs").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["theirs"] and _hidden(tmp_path) == []
