"""Check a dataset against its on-disk contract, and repair what a crash can leave behind.

``validate`` only reads and returns a report. ``repair`` takes the writer lock, moves unreadable
finished files to ``.quarantine/`` (never deletes user data), rebuilds ``episodes.jsonl`` from the
episode files' own attrs, and empties ``.inprogress/``: a file with at least one frame goes to
``.salvaged/`` (kept, but not an episode), an empty one is removed. A render killed mid-way
(``.rendering/``, see x2.datasets.rewrite) is finished or its strays removed first: they are pixels
that can be rendered again, never the only copy of an episode. Running it twice changes nothing.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import h5py

from x2.base.errors import DatasetError
from x2.datasets.episode import Episode
from x2.datasets.index import FILE_FACTS, EpisodeRecord, format_indices, scan_index, write_index
from x2.datasets.partition import partition_path, read_partition
from x2.datasets.removal import finish_removal, journal_path, pending_removal
from x2.datasets.rewrite import finish_interrupted, interrupted_renames, staged_files
from x2.datasets.store import Dataset, lock_holder
from x2.datasets.untrusted import json_loads
from x2.files.digest import ALGORITHM
from x2.files.staging import fsync_dir
from x2.format import (
    EPISODES_DIR,
    INDEX_FILE,
    INPROGRESS_DIR,
    MANIFEST_FILE,
    OLDER_PARTITION_FILE,
    PARTITION_FILE,
    QUARANTINE_DIR,
    REMOVED_DIR,
    SALVAGED_DIR,
    SLOTS_FILE,
    TIMESTAMPS,
    episode_filename,
    parse_episode_filename,
)

Severity = Literal["error", "repairable", "info"]


@dataclass(frozen=True)
class Problem:
    severity: Severity  # "repairable": --repair fixes it without losing a finished episode
    where: str
    message: str


@dataclass
class Report:
    root: Path
    problems: list[Problem] = field(default_factory=list)
    episodes: int = 0  # finished episodes that are listed and check out
    quick: bool = False  # digests were not checked

    @property
    def valid(self) -> bool:
        return not any(p.severity != "info" for p in self.problems)

    def add(self, severity: Severity, where: Path | str, message: str) -> None:
        self.problems.append(Problem(severity, str(where), message))


@dataclass
class RepairResult:
    root: Path
    actions: list[str] = field(default_factory=list)  # what was changed, one line each


def validate(path: str | Path, quick: bool = False, progress: Callable[[int, int], None] | None = None) -> Report:
    """Every problem of the dataset at ``path``; raises NotFoundError only when there is no folder.
    Every listed file is hashed and compared with its index line's digest unless ``quick``; ``progress``
    hears (episodes checked, episodes listed) before each one."""
    root = Path(path)
    report = Report(root)
    report.quick = quick
    try:
        Dataset.open(root)  # NotFoundError (no folder) propagates: there is nothing to report on
    except DatasetError as exc:
        report.add("error", root / MANIFEST_FILE, str(exc))
    scan = scan_index(root / INDEX_FILE)
    if scan.torn_tail:
        report.add("repairable", root / INDEX_FILE, f"{scan.torn_tail} (a crash during an append)")
    for _, message in scan.bad_lines:
        report.add("error", root / INDEX_FILE, message)
    counts = Counter(r.index for r in scan.records)
    for index, n in sorted(counts.items()):
        if n > 1:
            report.add("error", root / INDEX_FILE, f"episode {index} is listed {n} times")
    starts: dict[str, int] = {}  # initial-state digest -> first episode starting there
    holder = lock_holder(root)
    renames = interrupted_renames(root, scan.records) if holder is None else {}
    listed = {r.index: r for r in sorted(scan.records, key=lambda r: r.index)}
    for done, record in enumerate(listed.values()):
        if progress is not None:
            progress(done, len(listed))
        digest = _check_listed(root, record, report, renames.get(record.index), quick)
        if digest is None:
            continue
        if digest in starts:
            report.add("error", root / EPISODES_DIR / episode_filename(record.index),
                       f"episode {record.index} starts from the same world and state as episode {starts[digest]} "
                       f"(seed {record.seed}): a repeated demonstration")
        else:
            starts[digest] = record.index
    _check_slots(root, report)
    _check_partition(root, report)
    leaving = _check_removal(root, report)
    finished = _h5(root / EPISODES_DIR)
    for path in finished:
        named = parse_episode_filename(path.name)
        if named is None:
            report.add("info", path, "not an episode file name (ignored)")
        elif named in leaving and named not in counts:
            report.add("info", path, f"on its way to {REMOVED_DIR}/ (an interrupted x2 datasets rm; the next "
                                     "writer or --repair finishes it)")
        elif named not in counts:
            problems, _, _ = _examine(path, root, quick)
            severity: Severity = "error" if problems else "repairable"
            report.add(severity, path, problems[0] if problems else f"finished but missing from {INDEX_FILE}")
    for path in staged_files(root):
        if holder is not None:
            report.add("info", path, f"being rendered by pid {holder}")
        elif path not in renames.values():
            report.add("info", path, "left by an interrupted render (not an episode; the next x2 render, "
                                     "writer or --repair removes it)")
    for path in _h5(root / INPROGRESS_DIR):
        if holder is not None:
            report.add("info", path, f"being written by pid {holder}")
        else:
            report.add("repairable", path, "left by an interrupted writer (repair salvages or removes it)")
    for sub in (QUARANTINE_DIR, SALVAGED_DIR, REMOVED_DIR):
        kept = _h5(root / sub)
        if kept:
            why = "taken out by x2 datasets rm" if sub == REMOVED_DIR else "kept aside"
            report.add("info", root / sub, f"{len(kept)} file(s) {why} (not episodes)")
    return report


def _check_partition(root: Path, report: Report) -> None:
    """The partition file that is read: `partition.json`, else an older `splits.json`."""
    try:
        read_partition(root)
    except DatasetError as exc:
        report.add("error", partition_path(root), str(exc))
    if (root / PARTITION_FILE).exists() and (root / OLDER_PARTITION_FILE).exists():
        report.add("info", root / OLDER_PARTITION_FILE, f"the partition's older file, not read beside {PARTITION_FILE} "
                                                        "(a partition write stopped before removing it; the next one "
                                                        "removes it)")


def _check_removal(root: Path, report: Report) -> set[int]:
    """Episodes an interrupted rm is taking out (their unlisted files are expected, not a problem)."""
    try:
        pending = pending_removal(root)
    except DatasetError as exc:
        report.add("error", journal_path(root), str(exc))
        return set()
    if pending:
        report.add("info", journal_path(root), f"an interrupted x2 datasets rm of episodes "
                                               f"{format_indices(pending)} (the next writer or --repair finishes it)")
    return set(pending)


def _check_listed(root: Path, record: EpisodeRecord, report: Report, staged: Path | None = None,
                  quick: bool = False) -> str | None:
    """Check one listed episode against its file (its `staged` new version when a render was killed
    after rewriting the log, before the rename); its initial-state digest when it checks out."""
    where = root / INDEX_FILE
    expected = f"{EPISODES_DIR}/{episode_filename(record.index)}"
    if record.file != expected:
        report.add("error", where, f"episode {record.index}: file: found {record.file!r}; "
                                   f"allowed: {expected!r}")
        return None
    path = root / expected
    if staged is not None:
        report.add("info", staged, f"episode {record.index}: a render was interrupted between the log and the "
                                   f"rename; the log already describes this file (the next x2 render, writer or "
                                   f"--repair moves it into {EPISODES_DIR}/)")
        path = staged
    if not path.is_file():
        report.add("error", path, f"listed in {INDEX_FILE} but missing (episode {record.index})")
        return None
    problems, actual, digest = _examine(path, root, quick)
    if actual is None:
        report.add("error", path, problems[0])
        return None
    for name in FILE_FACTS:
        have, listed = getattr(actual, name), getattr(record, name)
        if have != listed:
            report.add("error", path, f"{name}: found {have!r:.60} in the file, {listed!r:.60} in "
                                      f"{INDEX_FILE}; allowed: equal (repair rebuilds the index)")
            return None
    if record.digest is None:
        report.add("info", path, f"episode {record.index}: no checksum in {INDEX_FILE} (committed before x2 kept "
                                 "them; --repair records the file's as it is now)")
    elif not quick and actual.digest != record.digest:
        found = (actual.digest or "")[7:19]
        report.add("error", path, f"episode {record.index}: {ALGORITHM}: found {found}... in the file, "
                                  f"{record.digest[7:19]}... in {INDEX_FILE}; allowed: equal (the file changed after "
                                  f"it was committed: bit rot or a bad copy; restore it from a copy, or --repair "
                                  f"moves it to {QUARANTINE_DIR}/)")
        return None
    report.episodes += 1
    return digest


def _examine(path: Path, root: Path, quick: bool = False) -> tuple[list[str], EpisodeRecord | None, str | None]:
    """(problems, the record the file stands for, its initial-state digest); the record is None when
    there are problems, and carries no file digest when ``quick``."""
    try:
        with Episode(path) as ep:
            problems = list(ep.problems())
            index = parse_episode_filename(path.name)
            if index is not None and ep.index != index:
                problems.append(f"{path}: episode_index: found {ep.index}; allowed: {index} (its file name)")
            if problems:
                return problems, None, None
            return [], ep.record(root, digest=not quick), ep.initial_digest()
    except DatasetError as exc:
        return [str(exc)], None, None
    except (OSError, ValueError, KeyError, RuntimeError) as exc:  # HDF5 meeting damaged bytes while reading
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return [f"{path}: read: found damaged data ({reason:.200}); allowed: a readable episode file"], None, None


def _check_slots(root: Path, report: Report) -> None:
    path = root / SLOTS_FILE
    if not path.exists():
        return
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
        ok = isinstance(data, dict) and isinstance(data.get("next_slot"), dict) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in data["next_slot"].values())
    except (OSError, ValueError):
        ok = False
    if not ok:
        report.add("repairable", path, "unreadable slot ledger (repair rebuilds it from the index: slots used by "
                                       "rejected or discarded attempts after the last committed one are forgotten)")


def _h5(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(".h5")) if folder.is_dir() else []


def repair(path: str | Path) -> RepairResult:
    """Make the dataset valid again. Needs a readable manifest and no live writer."""
    ds = Dataset.open(path)
    result = RepairResult(ds.root)
    ds.lock(heal=False)
    try:
        finished_removal = finish_removal(ds.root)  # before the rebuild: those files must not be relisted
        if finished_removal:
            result.actions.append(f"finished the interrupted removal of episodes {format_indices(finished_removal)} "
                                  f"(files in {REMOVED_DIR}/)")
        result.actions += finish_interrupted(ds.root, scan_index(ds.index_path).records)
        # The digest an index line recorded at commit is the truth about its file: a file that no longer
        # hashes to it is damaged even when HDF5 still opens it, and must not be relisted under a new one.
        committed = {r.index: r.digest for r in scan_index(ds.index_path).records if r.digest is not None}
        records: list[EpisodeRecord] = []
        for file in _h5(ds.root / EPISODES_DIR):
            index = parse_episode_filename(file.name)
            if index is None:
                continue
            problems, record, _ = _examine(file, ds.root)
            if record is not None and committed.get(index, record.digest) != record.digest:
                problems = [f"{ALGORITHM} differs from the one recorded at commit (bit rot or a bad copy)"]
                record = None
            if record is None:
                moved = _move_aside(file, ds.root / QUARANTINE_DIR)
                result.actions.append(
                    f"quarantined {file.name} -> {moved.relative_to(ds.root)}: {problems[0]}")
                continue
            records.append(record)
        records.sort(key=lambda r: r.index)
        current = ds.index_path.read_bytes() if ds.index_path.exists() else None
        rebuilt = "".join(r.to_json() + "\n" for r in records).encode("utf-8")
        if current != rebuilt:
            write_index(ds.index_path, records)
            result.actions.append(f"rebuilt episodes.jsonl from {len(records)} episode file(s)")
        report = Report(ds.root)
        _check_slots(ds.root, report)
        if not report.valid:
            used: dict[int, int] = {}
            for r in records:
                if r.master_seed is not None and r.slot is not None:
                    used[r.master_seed] = max(used.get(r.master_seed, 0), r.slot)
            moved = _move_aside(ds.root / SLOTS_FILE, ds.root / QUARANTINE_DIR)
            for master, slot in sorted(used.items()):
                ds.use_slots(master, slot)
            result.actions.append(f"rebuilt {SLOTS_FILE} from the index (the unreadable one is "
                                  f"{moved.relative_to(ds.root)})")
        for file in _h5(ds.root / INPROGRESS_DIR):
            frames = _salvageable_frames(file)
            if frames > 0:
                moved = _move_aside(file, ds.root / SALVAGED_DIR)
                result.actions.append(
                    f"salvaged {file.name} ({frames} frames) -> {moved.relative_to(ds.root)}")
            else:
                file.unlink()
                result.actions.append(f"removed {file.name} from {INPROGRESS_DIR}/ (no complete frame)")
        if (ds.root / INPROGRESS_DIR).is_dir():
            fsync_dir(ds.root / INPROGRESS_DIR)
    finally:
        ds.close()
    return result


def _salvageable_frames(path: Path) -> int:
    # A writer killed mid-episode leaves the file marked "open for SWMR write"; only an SWMR reader opens it.
    try:
        with h5py.File(path, "r", libver="latest", swmr=True) as f:
            ts = f.get(TIMESTAMPS)
            return int(ts.shape[0]) if isinstance(ts, h5py.Dataset) else 0
    except (OSError, ValueError, KeyError):
        return 0


def _move_aside(path: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    target, n = folder / path.name, 0
    while target.exists():
        n += 1
        target = folder / f"{path.stem}.{n}{path.suffix}"
    os.replace(path, target)
    fsync_dir(folder)
    fsync_dir(path.parent)
    return target
