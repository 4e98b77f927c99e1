"""What a SIGKILL (or a refused write) may and may not leave behind, checked on the real files.

- A dataset the command writes into: every episode committed before the kill (the index read just before
  the signal) is still committed after `repair()`, with the same bytes unless the command rewrites
  episodes (render); `validate()` with digests finds nothing worse than "repairable", and after
  `repair()` nothing at all.
- A dataset the command only reads: byte-identical, every file of it.
- A new target (export, merge, filter): absent, or complete: it opens in its own reader and holds as
  many episodes as the target of a run never killed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from x2.datasets import repair, validate


def committed(root: Path) -> dict[int, str]:
    """Index -> digest of every episode the dataset's commit log lists (a torn last line is no commit)."""
    try:
        text = (root / "episodes.jsonl").read_text()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out: dict[int, str] = {}
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[int(entry["index"])] = str(entry.get("digest", ""))
    return out


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under `root`, hidden ones included."""
    out: dict[str, str] = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclass(frozen=True)
class Store:
    """A dataset the command writes into."""

    root: Path
    rewrites_episodes: bool = False  # render rebuilds episode files: new bytes, same episodes
    may_drop: frozenset[int] = frozenset()  # rm takes these out on purpose


@dataclass(frozen=True)
class Target:
    """A new output that must be absent or complete."""

    path: Path
    kind: str  # "dataset", "lerobot", "zarr", "hdf5"


@dataclass
class Verdict:
    episodes_checked: int = 0
    lost: list[str] = field(default_factory=list)  # committed episodes lost or corrupted, and why
    changed_sources: list[str] = field(default_factory=list)
    target_state: str = ""  # "complete", "absent", "" (no target), or "half-made: ..."
    repaired: int = 0  # stores that needed repair()

    @property
    def clean(self) -> bool:
        return not self.lost and not self.changed_sources and not self.target_state.startswith("half-made")


def check_store(store: Store, before: dict[int, str], verdict: Verdict) -> None:
    """`before`: the store's committed episodes just before the kill."""
    if not store.root.exists():
        if before:
            verdict.lost.append(f"{store.root}: the dataset is gone")
        return
    report = validate(store.root)
    errors = [p for p in report.problems if p.severity == "error"]
    verdict.lost += [f"{store.root}: {p.where}: {p.message}" for p in errors]
    if not report.valid:
        verdict.repaired += 1
        repair(store.root)
        again = validate(store.root)
        verdict.lost += [f"{store.root} after repair: {p.where}: {p.message}" for p in again.problems
                         if p.severity != "info"]
    after = committed(store.root)
    verdict.episodes_checked += len(after)
    for index, digest in before.items():
        if index in store.may_drop:
            continue
        if index not in after:
            verdict.lost.append(f"{store.root}: episode {index} was committed and is no longer")
        elif not store.rewrites_episodes and after[index] != digest:
            verdict.lost.append(f"{store.root}: episode {index} changed bytes ({digest} -> {after[index]})")


def check_sources(sources: dict[Path, dict[str, str]], verdict: Verdict) -> None:
    for root, digests in sources.items():
        now = tree_digest(root)
        if now != digests:
            diff = sorted(k for k in now.keys() | digests.keys() if now.get(k) != digests.get(k))
            verdict.changed_sources.append(f"{root}: {', '.join(diff[:5])}")


def check_target(target: Target, expected_episodes: int, verdict: Verdict) -> None:
    if not target.path.exists():
        verdict.target_state = "absent"
        return
    try:
        count = READERS[target.kind](target.path)
    except Exception as exc:  # any reader failure is a half-made target: that is what is being measured
        verdict.target_state = f"half-made: {target.kind} reader failed: {type(exc).__name__}: {exc}"[:300]
        return
    verdict.target_state = ("complete" if count == expected_episodes else
                            f"half-made: {count} episodes, {expected_episodes} expected")


def _dataset_episodes(path: Path) -> int:
    report = validate(path)
    if not report.valid:
        raise ValueError("; ".join(f"{p.where}: {p.message}" for p in report.problems)[:200])
    return len(committed(path))


def _lerobot_episodes(path: Path) -> int:
    os.environ["HF_HUB_OFFLINE"] = "1"  # read the local files; never ask the hub
    import datasets.config
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    # LeRobot copies its tables into HF's arrow cache: keep that beside the (throw-away) export.
    datasets.config.HF_DATASETS_CACHE = path.parent / ".reader-cache"
    meta = json.loads((path / "meta" / "info.json").read_text())
    dataset = LeRobotDataset(f"x2/{path.name}", root=path, video_backend="pyav")
    dataset[len(dataset) - 1]  # the last frame decodes: every file up to the end is there
    assert dataset.meta.total_episodes == meta["total_episodes"]
    return int(dataset.meta.total_episodes)


def _zarr_episodes(path: Path) -> int:
    import zarr

    store = zarr.storage.ZipStore(str(path), mode="r") if path.is_file() else str(path)
    group = zarr.open_group(store, mode="r")
    ends = group["meta/episode_ends"][:]
    for name in group["data"]:
        assert group["data"][name].shape[0] == ends[-1], f"data/{name} is not {ends[-1]} frames long"
    return len(ends)


def _hdf5_episodes(path: Path) -> int:
    import h5py

    with h5py.File(path, "r") as f:
        demos = [k for k in f["data"] if k.startswith("demo_")]
        for name in demos:
            f["data"][name]["actions"][-1]  # the last action reads back
        return len(demos)


READERS: dict[str, Callable[[Path], int]] = {"dataset": _dataset_episodes, "lerobot": _lerobot_episodes,
                                             "zarr": _zarr_episodes, "hdf5": _hdf5_episodes}
