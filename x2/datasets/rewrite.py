"""Replacing a finished episode file with a richer copy of itself (`x2 render` adds camera streams).

A finished file is never edited in place. Contract, all under the dataset's writer lock (x2.files.staging's,
taken from the dataset's ``.rendering/`` folder through x2.datasets.commit):

1. the new version is built complete under ``.rendering/episode_NNNNNN.h5`` and fsynced;
2. ``episodes.jsonl`` is rewritten atomically with the new version's ``bytes``;
3. the new version is renamed over ``episodes/episode_NNNNNN.h5``.

A kill before 2 leaves the old episode and a stray file in ``.rendering/`` (removed by the next lock
holder). A kill between 2 and 3 leaves an index that already describes the staged file: that file is
complete (it was fsynced before the index changed) and is exactly as large as the index says, while the
file in ``episodes/`` is not, so the next lock holder (or ``validate --repair``) finishes the rename. In
between, ``validate`` reports both as information, not as damage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets.commit import seal
from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord, write_index
from x2.files.staging import fsync_dir, move_into_place


def staged_path(root: Path, index: int) -> Path:
    """Where the new version of episode `index` is built."""
    return Path(root) / fmt.RENDERING_DIR / fmt.episode_filename(index)


def staged_files(root: Path) -> list[Path]:
    folder = Path(root) / fmt.RENDERING_DIR
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def interrupted_renames(root: Path, records: Sequence[EpisodeRecord]) -> dict[int, Path]:
    """Episodes whose index line already describes their staged file (a kill between steps 2 and 3)."""
    listed = {r.index: r for r in records}
    out: dict[int, Path] = {}
    for path in staged_files(root):
        index = fmt.parse_episode_filename(path.name)
        record = listed.get(index) if index is not None else None
        final = Path(root) / fmt.EPISODES_DIR / path.name
        if record is None or path.stat().st_size != record.bytes or \
                (final.exists() and final.stat().st_size == record.bytes):
            continue
        try:
            with Episode(path) as ep:
                if list(ep.problems()):
                    continue
                staged = replace(ep.record(root), file=record.file)
        except DatasetError:
            continue
        if staged == record:
            out[record.index] = path
    return out


def finish_interrupted(root: Path, records: Sequence[EpisodeRecord]) -> list[str]:
    """Complete interrupted renames and remove every other staged file; what was done, one line each.
    Only the lock holder may call this (nobody else is staging then)."""
    root = Path(root)
    actions: list[str] = []
    pending = interrupted_renames(root, records)
    for index, path in sorted(pending.items()):
        move_into_place(path, root / fmt.EPISODES_DIR / path.name)
        actions.append(f"finished the interrupted rewrite of episode {index} ({fmt.RENDERING_DIR}/{path.name} -> "
                       f"{fmt.EPISODES_DIR}/)")
    strays = staged_files(root)
    for path in strays:
        path.unlink()
        actions.append(f"removed {fmt.RENDERING_DIR}/{path.name} (left by an interrupted render)")
    if strays:
        fsync_dir(root / fmt.RENDERING_DIR)
    return actions


def commit_rewrite(root: Path, records: Sequence[EpisodeRecord], index: int) -> list[EpisodeRecord]:
    """Steps 2 and 3 for the complete staged file of episode `index`; the index's new records."""
    root = Path(root)
    staged = staged_path(root, index)
    digest = seal(staged)
    updated = [replace(r, bytes=staged.stat().st_size, digest=digest) if r.index == index else r for r in records]
    write_index(root / fmt.INDEX_FILE, updated)
    move_into_place(staged, root / fmt.EPISODES_DIR / staged.name)
    return updated
