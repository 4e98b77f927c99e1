"""Taking episodes out of a dataset without deleting anything (`x2 datasets rm`).

Every step is durable before the next, so a kill at any moment leaves a valid dataset:

1. the seed slots of the episodes are marked used in `slots.json` (they stay used: no collector redraws them);
2. the journal `.removed/removing.json` lists the episodes;
3. `episodes.jsonl` is replaced (atomically) by the log without them;
4. their files are renamed into `.removed/`;
5. the journal is removed.

Between 3 and 4 a finished file sits unlisted in `episodes/`. The journal says it is on its way out, so
`validate` reports it as information, and the next writer (`Dataset.lock` heals) or `validate --repair`
finishes the removal instead of listing the file again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets.index import read_index, write_index
from x2.datasets.untrusted import json_loads
from x2.files.atomic import write_text
from x2.files.staging import fsync_dir

Progress = Callable[[int, int], None]  # (done, total)


def journal_path(root: Path) -> Path:
    return Path(root) / fmt.REMOVED_DIR / fmt.REMOVAL_JOURNAL_FILE


def pending_removal(root: Path) -> tuple[int, ...]:
    """Indices an interrupted removal still has to move ((), when none is under way)."""
    path = journal_path(root)
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: journal: found unreadable JSON ({exc}); allowed: "
                           '{"episodes": [indices]} as written by x2 datasets rm') from None
    episodes = data.get("episodes") if isinstance(data, dict) else None
    if not isinstance(episodes, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                 for i in episodes):
        raise DatasetError(f"{path}: episodes: found {str(episodes)[:60]}; allowed: a list of episode indices")
    return tuple(sorted(set(episodes)))


def removed_files(root: Path, index: int) -> list[Path]:
    """Files of episode `index` that an earlier removal put into `.removed/`."""
    folder = Path(root) / fmt.REMOVED_DIR
    stem = fmt.episode_filename(index).removesuffix(".h5")
    return sorted(folder.glob(f"{stem}*.h5")) if folder.is_dir() else []


def begin_removal(root: Path, indices: Iterable[int]) -> None:
    """Write the journal (step 2); the caller holds the lock and has marked the slots used."""
    folder = Path(root) / fmt.REMOVED_DIR
    created = not folder.is_dir()
    folder.mkdir(exist_ok=True)
    if created:
        fsync_dir(folder.parent)
    write_text(journal_path(root), json.dumps({"episodes": sorted(set(indices))}) + "\n")


def _clear_stale_journals(root: Path) -> None:
    # A kill during step 2's atomic write leaves its temp file; under the lock no other writer is alive.
    folder = Path(root) / fmt.REMOVED_DIR
    mine = f".{fmt.REMOVAL_JOURNAL_FILE}.tmp-{os.getpid()}"
    for path in folder.glob(f".{fmt.REMOVAL_JOURNAL_FILE}.tmp-*") if folder.is_dir() else ():
        if path.name != mine:
            path.unlink(missing_ok=True)


def finish_removal(root: Path, progress: Progress | None = None) -> tuple[int, ...]:
    """Steps 3-5 of a journaled removal (the caller holds the lock); the indices it covered.

    Idempotent: a rerun after a kill at any point completes the same removal and moves nothing twice."""
    root = Path(root)
    _clear_stale_journals(root)
    indices = pending_removal(root)
    if not indices:
        return ()
    wanted = set(indices)
    records = read_index(root / fmt.INDEX_FILE)
    kept = [r for r in records if r.index not in wanted]
    if len(kept) != len(records):
        write_index(root / fmt.INDEX_FILE, kept)
    episodes, removed = root / fmt.EPISODES_DIR, root / fmt.REMOVED_DIR
    for done, index in enumerate(indices, 1):
        source = episodes / fmt.episode_filename(index)
        if source.exists():  # a rerun finds the ones moved before the kill gone already
            os.replace(source, _free_name(removed, source.name))
        if progress is not None:
            progress(done, len(indices))
    fsync_dir(removed)
    fsync_dir(episodes)
    journal_path(root).unlink()
    fsync_dir(removed)
    return indices


def _free_name(folder: Path, name: str) -> Path:
    # Indices are never reused (Dataset.next_index counts .removed/), so a clash means a file someone put here.
    target, n = folder / name, 0
    while target.exists():
        n += 1
        target = folder / f"{Path(name).stem}.{n}.h5"
    return target
