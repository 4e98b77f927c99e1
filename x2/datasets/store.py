"""Dataset: a folder of self-contained episode files plus a manifest and a commit log.

Contract (docs/format.md): ``manifest.json`` (written once, atomically), ``episodes.jsonl`` (one line per
committed episode), ``episodes/episode_NNNNNN.h5`` (finished), ``.inprogress/`` (being written),
``slots.json`` (the seed slots collectors have used, per master seed). One writer process at a time holds
``.lock``; readers never need it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from x2.base.errors import DatasetError, NotFoundError, X2Error
from x2.datasets.commit import seal
from x2.datasets.difference import describe, first_difference
from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord, append_record, drop_torn_tail, format_indices, read_index
from x2.datasets.removal import finish_removal
from x2.datasets.rewrite import finish_interrupted
from x2.datasets.untrusted import json_loads
from x2.datasets.writer import EpisodeWriter
from x2.files.atomic import write_bytes
from x2.files.digest import verify_digest
from x2.files.disk import is_refusal, refused
from x2.files.staging import fsync_dir, move_into_place
from x2.format import (
    ANY_EPISODE_FILE,
    EPISODES_DIR,
    INDEX_FILE,
    INPROGRESS_DIR,
    LOCK_FILE,
    MANIFEST_FILE,
    MANIFEST_MUST_MATCH,
    QUARANTINE_DIR,
    REMOVED_DIR,
    SALVAGED_DIR,
    SEED_ATTR,
    SLOTS_FILE,
    STAGING_DIR,
    EpisodeStart,
    Manifest,
    episode_filename,
    parse_episode_filename,
)

LOCK_WAIT_S = 2.0  # a reader probing the lock (lock_holder) holds it for microseconds; a writer waits that out


class Dataset:
    """An opened dataset folder. ``create``/``open`` make one; no I/O happens in ``__init__``."""

    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root, self.manifest = Path(root), manifest
        self._lock_fd: int | None = None
        self._next: int | None = None
        self._writer: EpisodeWriter | None = None
        self._seeds: dict[int, int] | None = None  # committed seed -> episode, while this process writes

    # ---- create / open --------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, manifest: Mapping[str, Any] | Manifest,
               exist_ok: bool = True, robot_folder: str | None = None) -> Dataset:
        """Make a new empty dataset at ``path``, or (``exist_ok``) open one whose core facts agree; one recorded
        with another robot is refused naming ``robot_folder`` (the folder that robot's episodes should go to) when
        given, else ``<path>-<robot>``."""
        root = Path(path)
        wanted = manifest if isinstance(manifest, Manifest) else \
            Manifest.from_dict(manifest, f"{root / MANIFEST_FILE}")
        if (root / MANIFEST_FILE).exists():
            if not exist_ok:
                raise DatasetError(f"{root}: dataset: found an existing dataset; allowed: a new folder")
            ds = cls.open(root)
            ds._check_compatible(wanted, robot_folder)
            return ds
        if root.exists() and not root.is_dir():
            raise DatasetError(f"{root}: dataset: found a file; allowed: a new or empty folder")
        if root.exists() and any(root.iterdir()):
            raise DatasetError(f"{root}: dataset: found a non-empty folder without {MANIFEST_FILE}; "
                               "allowed: a new or empty folder")
        if not wanted.created:
            wanted = replace(wanted, created=_now())
        # Build the skeleton beside the target and rename it into place: a kill mid-create leaves either
        # no dataset or a complete empty one, never a folder that blocks the next attempt.
        tmp = root.parent / f".{root.name}.creating-{os.getpid()}"
        try:
            root.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            for sub in (EPISODES_DIR, INPROGRESS_DIR):
                (tmp / sub).mkdir(parents=True)
            write_bytes(tmp / INDEX_FILE, b"")
            text = json.dumps(wanted.to_dict(), indent=2, sort_keys=True) + "\n"
            write_bytes(tmp / MANIFEST_FILE, text.encode("utf-8"))
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if not is_refusal(exc):
                raise
            raise refused(exc, exc.filename or root, f"no dataset was created at {root}") from None
        try:
            os.rename(tmp, root)  # replaces an empty folder, fails on a non-empty one
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise DatasetError(f"{root}: dataset: found a folder created meanwhile; "
                               "allowed: a new folder") from None
        fsync_dir(root.parent)
        return cls(root, wanted)

    @classmethod
    def open(cls, path: str | Path) -> Dataset:
        root = Path(path)
        if not root.is_dir():
            raise NotFoundError(f"{root}: dataset: found no such folder; allowed: an x2 dataset folder")
        where = str(root / MANIFEST_FILE)
        try:
            data = json_loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DatasetError(f"{where}: manifest: found missing; allowed: an x2 dataset folder "
                               "(made by x2 collect, synth or augment)") from None
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{where}: manifest: found unreadable JSON ({exc}); "
                               "allowed: a JSON object") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{where}: manifest: found {type(data).__name__}; allowed: a JSON object")
        return cls(root, Manifest.from_dict(data, where))

    def _check_compatible(self, wanted: Manifest, robot_folder: str | None = None) -> None:
        have, new = self.manifest.to_dict(), wanted.to_dict()
        found = first_difference({k: have[k] for k in MANIFEST_MUST_MATCH}, {k: new[k] for k in MANIFEST_MUST_MATCH})
        if found is not None:
            where, was, now = found
            # Another robot's episodes go to another folder: say which.
            new_folder = (robot_folder or str(self.root.parent / f"{self.root.name}-{now}")) if where == "robot" \
                else "NEW"
            raise DatasetError(f"{self.root / MANIFEST_FILE}: {where}: found {describe(now)} for a dataset recorded "
                               f"with {describe(was)}; allowed: the same world (write to a new dataset: --dataset "
                               f"{new_folder})")

    # ---- reading --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.root.name

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILE

    def episodes(self) -> list[EpisodeRecord]:
        """Committed episodes from the log (a torn last line is skipped)."""
        return read_index(self.index_path)

    def episode_path(self, index: int) -> Path:
        return self.root / EPISODES_DIR / episode_filename(index)

    def load(self, index: int) -> Episode:
        """Open a finished episode. The path comes from the index number, never from log text."""
        path = self.episode_path(index)
        if not path.is_file():
            names = (parse_episode_filename(p.name) for p in self._files(EPISODES_DIR))
            have = [i for i in names if i is not None]
            raise NotFoundError(f"{self.root}: episode: found no episode {index}; "
                                f"allowed: {format_indices(have)}")
        return Episode(path)

    def verify(self, records: Sequence[EpisodeRecord]) -> None:
        """Check each record's file against the digest its index line recorded at commit (DigestMismatch).
        Whatever makes a new file from episodes (export, augment, merge, render) calls this first, so a
        damaged file is never carried into one under a fresh digest."""
        for record in records:
            verify_digest(self.episode_path(record.index), record.digest, f"{INDEX_FILE} (episode {record.index})")

    def _files(self, sub: str) -> list[Path]:
        folder = self.root / sub
        return sorted(p for p in folder.iterdir() if p.suffix == ".h5") if folder.is_dir() else []

    # ---- writing --------------------------------------------------------------------------------
    def begin_episode(self, start: EpisodeStart, shapes: Mapping[str, tuple[int, ...]] | None = None,
                      *, object_names: Sequence[str] = (),
                      camera_attrs: Mapping[str, Mapping[str, Any]] | None = None,
                      flush_every: int = 30) -> EpisodeWriter:
        """Allocate the next index and open ``.inprogress/episode_NNNNNN.h5`` for writing."""
        if self._writer is not None:
            raise DatasetError(f"{self._writer.path}: writer: found one still open; "
                               "allowed: one episode at a time "
                               "(finish or abort it first)")
        with self.refusals(self.root / INPROGRESS_DIR):
            self.lock()
            self._refuse_repeated_seed(start.seed)
            if self._next is None:
                self._next = self.next_index()
        index = self._next
        name = episode_filename(index)
        writer = EpisodeWriter(
            index=index, inprogress=self.root / INPROGRESS_DIR / name, final=self.root / EPISODES_DIR / name,
            index_path=self.index_path, start=start, manifest=self.manifest, shapes=shapes,
            object_names=object_names, camera_attrs=camera_attrs or {}, flush_every=flush_every,
            on_close=self._writer_closed, safe_note=self.safe_note,
        )
        self._next = index + 1  # taken even if start fails: indices are never reused
        with self.refusals(writer.path, prefix="the episode in progress was discarded, "):
            (self.root / INPROGRESS_DIR).mkdir(exist_ok=True)
            self._writer = writer
            try:
                return writer.start()
            except BaseException:
                writer.abort()
                raise

    def add_file(self, build: Callable[[Path, int], None]) -> EpisodeRecord:
        """Commit an episode file made whole by ``build(path, index)`` from finished episodes (an augmented
        copy, say): built at ``path`` under ``.staging/``, checked like any episode, fsynced, renamed into
        ``episodes/`` and logged. Nothing in ``.staging/`` is ever a recording (each file is rebuilt from its
        sources), so the next lock holder removes what a failure or a kill left there, and the index is
        taken only once the file is committed: an interrupted run, run again, gives the same files."""
        if self._writer is not None:
            raise DatasetError(f"{self._writer.path}: writer: found one still open; allowed: one episode at a time")
        with self.refusals(self.root / STAGING_DIR):
            self.lock()
            index = self._next if self._next is not None else self.next_index()
        name = episode_filename(index)
        tmp, final = self.root / STAGING_DIR / name, self.root / EPISODES_DIR / name
        try:
            tmp.parent.mkdir(exist_ok=True)
            build(tmp, index)
            with Episode(tmp) as ep:
                problem = next(ep.problems(), None)
                if problem is not None:
                    raise DatasetError(problem)
                self._refuse_repeated_seed(ep.attrs.get(SEED_ATTR))
                # Its index line, read before the move: once the file is in place only the append is left.
                listed = replace(ep.record(self.root, digest=False), file=f"{EPISODES_DIR}/{name}")
            record = replace(listed, digest=seal(tmp))
            move_into_place(tmp, final)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            if is_refusal(exc):
                raise refused(exc, tmp, f"this episode was discarded, {self.safe_note()}") from None
            raise
        self._next = index + 1
        with self.refusals(self.index_path, f"episode {index} is committed in {final.parent} (the next writer or "
                                            "`x2 datasets validate --repair` lists it)"):
            append_record(self.index_path, record)
        if self._seeds is not None:
            self._seeds[record.seed] = record.index
        return record

    # ---- when the machine says no ---------------------------------------------------------------
    def safe_note(self) -> str:
        """What a refused write leaves safe, in words: which episodes are committed and intact."""
        if not self.root.is_dir():
            return f"the dataset folder {self.root} was deleted while x2 wrote it, nothing of it is left"
        try:
            committed = [r.index for r in self.episodes()]
        except (X2Error, OSError):
            return "committed episodes are intact (`x2 datasets validate` checks them)"
        if not committed:
            return "no episode of this dataset was committed yet"
        if len(committed) == 1:
            return f"episode {committed[0]} is committed and intact"
        return f"episodes {format_indices(committed)} are committed and intact"

    @contextmanager
    def refusals(self, path: Path, safe: str | None = None, prefix: str = "") -> Iterator[None]:
        """Turn a refused write inside the block (full disk, read-only, ...) into the StorageError line for
        `path`, saying what is safe (`safe`, else `prefix` + `safe_note()`). Bugs pass through unchanged."""
        try:
            yield
        except (OSError, RuntimeError) as exc:
            if not is_refusal(exc):
                raise
            where = getattr(exc, "filename", None) or path
            raise refused(exc, where, safe or prefix + self.safe_note()) from None

    def _writer_closed(self, committed: EpisodeRecord | None) -> None:
        self._writer = None
        if committed is not None and self._seeds is not None:
            self._seeds[committed.seed] = committed.index

    def _refuse_repeated_seed(self, seed: object) -> None:
        """The same seed is the same scene: a second episode from it would be the same demonstration."""
        if self._seeds is None:  # read once under the lock: only this process commits from here on
            self._seeds = {r.seed: r.index for r in self.episodes()}
        if seed in self._seeds:
            raise DatasetError(f"{self.root}: seed: found {seed!r}, already used by episode {self._seeds[seed]}; "
                               "allowed: a seed this dataset has not used (seeds never repeat in a dataset; "
                               "--dataset NEW writes elsewhere)")

    # ---- seed slots -----------------------------------------------------------------------------
    def next_slot(self, master_seed: int) -> int:
        """The first slot (attempt or episode number under `master_seed`) no collector has used here: after
        every committed episode's slot and every slot marked used, rejected and discarded ones included."""
        committed = [r.slot for r in self.episodes() if r.master_seed == master_seed and r.slot is not None]
        return max(self._slots().get(str(master_seed), 0), max(committed, default=-1) + 1)

    def use_slots(self, master_seed: int, upto: int) -> None:
        """Mark slots up to and including `upto` as used (the writer only; durable before it returns)."""
        self.lock()
        slots = self._slots()
        if slots.get(str(master_seed), 0) > upto:
            return
        slots[str(master_seed)] = upto + 1
        with self.refusals(self.root / SLOTS_FILE):
            write_bytes(self.root / SLOTS_FILE, (json.dumps({"next_slot": slots}, indent=1, sort_keys=True) + "\n")
                        .encode("utf-8"))

    def _slots(self) -> dict[str, int]:
        """master seed (as text) -> next free slot; a missing or unreadable ledger counts as empty (the
        index still has every committed slot; validate reports an unreadable one)."""
        try:
            data = json_loads((self.root / SLOTS_FILE).read_text(encoding="utf-8"))
            slots = data["next_slot"]
            return {str(k): int(v) for k, v in slots.items() if isinstance(v, int) and not isinstance(v, bool)}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def next_index(self) -> int:
        """1 + the largest index seen anywhere (log, finished, in progress, quarantined, salvaged, removed)."""
        seen = [r.index for r in self.episodes()]
        for sub in (EPISODES_DIR, INPROGRESS_DIR, QUARANTINE_DIR, SALVAGED_DIR, REMOVED_DIR):
            folder = self.root / sub
            names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
            seen += [int(m.group(1)) for m in map(ANY_EPISODE_FILE.match, names) if m]
        return max(seen, default=-1) + 1

    # ---- the writer lock ------------------------------------------------------------------------
    def lock(self, heal: bool = True) -> None:
        """Become the dataset's only writer (non-blocking), then heal the log a crash may have left."""
        if self._lock_fd is not None:
            return
        with self.refusals(self.root / LOCK_FILE, prefix="nothing was changed, "):
            self._take_lock(heal)

    def _take_lock(self, heal: bool) -> None:
        fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                # A reader asking who writes (validate, info) takes the lock shared for an instant: wait
                # that out rather than fail; a real writer holds it far longer than LOCK_WAIT_S.
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                os.close(fd)
                raise DatasetError(f"{self.root / LOCK_FILE}: lock: found held by pid {lock_holder(self.root)}; "
                                   "allowed: one writer process per dataset") from None
        self._lock_fd = fd
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            if heal:
                self._heal()
        except BaseException:
            self.close()
            raise

    def _heal(self) -> None:
        # A kill between "file renamed into episodes/" and "log line appended", or during the append,
        # leaves a finished file unlisted or a torn last line: restore the log from the files' own attrs.
        drop_torn_tail(self.index_path)
        shutil.rmtree(self.root / STAGING_DIR, ignore_errors=True)  # add_file's leftovers: rebuilt on demand
        finish_removal(self.root)  # an interrupted `x2 datasets rm`: finish it, never list its files again
        # A render killed between rewriting the log and renaming its new file: finish it, drop its strays.
        finish_interrupted(self.root, self.episodes())
        listed = {r.index for r in self.episodes()}
        for path in self._files(EPISODES_DIR):
            index = parse_episode_filename(path.name)
            if index is None or index in listed:
                continue
            try:
                with Episode(path) as ep:
                    if not list(ep.problems()):
                        append_record(self.index_path, ep.record(self.root))
            except (DatasetError, OSError, ValueError, KeyError, RuntimeError):
                continue  # unreadable: left for validate --repair to quarantine

    def close(self) -> None:
        """Abort an open writer and release the lock. Safe to call twice."""
        if self._writer is not None:
            self._writer.abort()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = self._next = self._seeds = None

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lock_holder(root: Path) -> int | None:
    """pid of the process writing ``root`` right now, or None."""
    path = Path(root) / LOCK_FILE
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
