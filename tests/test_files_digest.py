"""Episode checksums: recorded at commit, verified by validate, quarantined by --repair, carried by exports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import pytest
import zarr
from helpers.real_dataset import record_short_dataset
from helpers.write_episodes import MANIFEST, write_one
from helpers.x2_cli import run_x2

from x2.base.errors import X2Error
from x2.datasets import Dataset, Episode, repair, validate
from x2.datasets.index import write_index
from x2.datasets.manage import merge
from x2.export.hdf5 import export_hdf5
from x2.export.request import ExportRequest
from x2.export.zarr import export_zarr
from x2.files.digest import DigestMismatch, file_digest


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """Two real 24-frame episodes (a world readers rebuild, so exports work)."""
    path = tmp_path_factory.mktemp("checksums") / "real"
    record_short_dataset(path, episodes=2, ticks=24)
    return path


def small(path: Path, episodes: int = 3) -> Dataset:
    ds = Dataset.create(path, MANIFEST)
    for _ in range(episodes):
        write_one(ds)
    ds.close()
    return ds


def flip_bit(path: Path, offset: int | None = None) -> int:
    """Flip one bit in the middle of the file (where the arrays are: HDF5 still opens it)."""
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if offset is None else offset
    data[at] ^= 0x10
    path.write_bytes(bytes(data))
    return at


def test_every_commit_records_the_files_digest(tmp_path: Path) -> None:
    ds = small(tmp_path / "d")
    for record in ds.episodes():
        assert record.digest == file_digest(ds.episode_path(record.index))
    line = json.loads((ds.root / "episodes.jsonl").read_text().splitlines()[0])
    assert line["digest"].startswith("sha256:") and len(line["digest"]) == 7 + 64


def test_a_bit_flip_is_found_and_quarantined_never_deleted(tmp_path: Path) -> None:
    ds = small(tmp_path / "d")
    victim = ds.episode_path(1)
    flip_bit(victim)
    with Episode(victim) as ep:  # the damage is invisible to HDF5: only the checksum sees it
        assert not list(ep.problems())
    damaged = victim.read_bytes()
    report = validate(ds.root)
    assert not report.valid and report.episodes == 2
    [problem] = [p for p in report.problems if p.severity == "error"]
    assert problem.where == str(victim) and "episode 1: sha256: found" in problem.message
    assert validate(ds.root, quick=True).valid  # --quick reads structure only

    result = repair(ds.root)
    assert any(a.startswith("quarantined episode_000001.h5 -> .quarantine/episode_000001.h5") for a in result.actions)
    assert (ds.root / ".quarantine" / "episode_000001.h5").read_bytes() == damaged
    assert [r.index for r in ds.episodes()] == [0, 2]
    after = validate(ds.root)
    assert after.valid and after.episodes == 2
    assert repair(ds.root).actions == []  # twice changes nothing


def test_zeroed_block_and_cli(tmp_path: Path) -> None:
    """50 KB zeroed inside an episode with images: the CLI names it, --repair quarantines it."""
    ds = Dataset.create(tmp_path / "d", MANIFEST)
    for _ in range(4):
        write_one(ds, images=True)
    ds.close()
    victim = ds.episode_path(2)
    data = bytearray(victim.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 50_000] = bytes(min(50_000, len(data) - mid))
    victim.write_bytes(bytes(data))
    bad = run_x2(["datasets", "validate", str(ds.root)], tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"error {victim}: " in bad.stdout
    assert "invalid: 3 episodes checked, checksums verified (try --repair)" in bad.stdout
    quick = run_x2(["datasets", "validate", str(ds.root), "--quick"], tmp_path)
    assert "checksums not checked (--quick)" in quick.stdout
    fixed = run_x2(["datasets", "validate", str(ds.root), "--repair"], tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "repaired: quarantined episode_000002.h5 -> .quarantine/episode_000002.h5" in fixed.stdout
    assert "valid: 3 episodes checked, checksums verified" in fixed.stdout


def test_a_log_without_digests_is_valid_and_repair_records_them(tmp_path: Path) -> None:
    from dataclasses import replace

    ds = small(tmp_path / "d", episodes=2)
    write_index(ds.index_path, [replace(r, digest=None) for r in ds.episodes()])
    report = validate(ds.root)
    assert report.valid and sum("no checksum" in p.message for p in report.problems) == 2
    repair(ds.root)
    assert all(r.digest == file_digest(ds.episode_path(r.index)) for r in ds.episodes())


def test_a_malformed_digest_in_the_log_is_one_line(tmp_path: Path) -> None:
    ds = small(tmp_path / "d", episodes=2)
    lines = ds.index_path.read_text().splitlines()
    lines[0] = lines[0].replace('"digest":"sha256:', '"digest":"md5:')
    ds.index_path.write_text("\n".join(lines) + "\n")
    [problem] = [p for p in validate(ds.root).problems if p.severity == "error"]
    assert "digest: found 'md5:" in problem.message and "\n" not in problem.message


def test_exports_carry_the_digests_and_refuse_a_damaged_source(real: Path, tmp_path: Path) -> None:
    root = shutil.copytree(real, tmp_path / "real")
    ds = Dataset.open(root)
    records = ds.episodes()
    digests = [r.digest for r in records]
    assert all(d and d.startswith("sha256:") for d in digests)
    export_zarr(ExportRequest(ds, tuple(records), tmp_path / "z.zarr", state_only=True))
    meta = zarr.open_group(str(tmp_path / "z.zarr"), mode="r").attrs["x2_provenance"]
    assert [e["digest"] for e in meta["episodes"]] == digests
    export_hdf5(ExportRequest(ds, tuple(records), tmp_path / "r.hdf5", state_only=True))
    with h5py.File(tmp_path / "r.hdf5", "r") as f:
        meta = json.loads(f.attrs["x2_provenance"])
    assert [e["digest"] for e in meta["episodes"]] == digests

    flip_bit(ds.episode_path(1))
    with pytest.raises(DigestMismatch) as caught:
        export_zarr(ExportRequest(ds, tuple(records), tmp_path / "z2.zarr", state_only=True))
    assert str(ds.episode_path(1)) in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "z2.zarr").exists()
    with pytest.raises(X2Error):
        merge([root, real], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()
