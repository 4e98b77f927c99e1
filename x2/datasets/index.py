"""The commit log ``episodes.jsonl`` and the durable-write primitives the store is built on.

Contract: one JSON object per line, one line per committed episode, appended (write + flush + fsync)
only after the episode file is in ``episodes/``. A crash can therefore tear at most the last line,
and the whole log can always be rebuilt from the episode files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from x2.base.errors import DatasetError
from x2.datasets.untrusted import json_loads
from x2.files.atomic import write_bytes
from x2.files.digest import DIGEST_FORM
from x2.files.staging import fsync_dir


class Segment(NamedTuple):
    """Frames ``start <= t < end`` carry the label ``node``."""

    node: str
    start: int
    end: int


@dataclass(frozen=True)
class EpisodeRecord:
    """One committed episode as listed in ``episodes.jsonl``."""

    index: int
    file: str  # relative to the dataset root, e.g. "episodes/episode_000042.h5"
    frames: int
    success: bool
    seed: int
    source: str
    segments: tuple[Segment, ...]
    bytes: int
    failure: tuple[str, int, str] | None = None  # (node, frame, reason) of the first failure
    # Where the seed came from: the collector's master seed and the attempt (synth) or slot (teleop,
    # scripted) it was drawn for; None for episodes written without one (tools, tests).
    master_seed: int | None = None
    slot: int | None = None
    # sha256 of the finished file as committed (x2.files.digest); None in logs written before checksums.
    digest: str | None = None

    def to_json(self) -> str:
        data = {
            "index": self.index, "file": self.file, "frames": self.frames, "success": self.success,
            "seed": self.seed, "master_seed": self.master_seed, "slot": self.slot, "source": self.source,
            "segments": [list(s) for s in self.segments], "bytes": self.bytes,
            "failure": list(self.failure) if self.failure else None, "digest": self.digest,
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str, where: str) -> EpisodeRecord:
        """Parse one log line; anything off-contract raises DatasetError naming ``where``."""
        try:
            data = json_loads(line)
        except json.JSONDecodeError as exc:  # (json_loads raises no other ValueError)
            raise DatasetError(f"{where}: line: found invalid JSON ({exc.msg}); "
                               "allowed: one JSON object") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{where}: line: found {type(data).__name__}; allowed: one JSON object")
        try:
            failure = data.get("failure")
            return cls(
                index=_typed(data["index"], int, where, "index"),
                file=_typed(data["file"], str, where, "file"),
                frames=_typed(data["frames"], int, where, "frames"),
                success=_typed(data["success"], bool, where, "success"),
                seed=_typed(data["seed"], int, where, "seed"),
                source=_typed(data["source"], str, where, "source"),
                segments=tuple(Segment(str(n), int(s), int(e)) for n, s, e in data["segments"]),
                bytes=_typed(data["bytes"], int, where, "bytes"),
                failure=None if failure is None else (str(failure[0]), int(failure[1]), str(failure[2])),
                master_seed=_optional(data.get("master_seed"), where, "master_seed"),
                slot=_optional(data.get("slot"), where, "slot"),
                digest=_digest(data.get("digest"), where),
            )
        except KeyError as exc:
            raise DatasetError(f"{where}: {exc.args[0]}: found missing; "
                               "allowed: an EpisodeRecord field") from None
        except (TypeError, ValueError, IndexError):
            raise DatasetError(f"{where}: segments/failure: found malformed entries; allowed: "
                               "[[node, start, end], ...] and null or [node, frame, reason]") from None


def _optional(value: Any, where: str, name: str) -> int | None:
    return None if value is None else _typed(value, int, where, name)


def _digest(value: Any, where: str) -> str | None:
    if value is None or (isinstance(value, str) and DIGEST_FORM.match(value)):
        return value
    raise DatasetError(f"{where}: digest: found {value!r:.80}; allowed: null or 'sha256:' and 64 hex digits")


def _typed(value: Any, kind: type, where: str, name: str) -> Any:
    # bool is an int subclass; a log that says "frames": true is corrupt, not 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DatasetError(f"{where}: {name}: found {value!r}; allowed: {kind.__name__}")
    return value


@dataclass
class IndexScan:
    """Everything read from a log, including what is wrong with it (validate reports, repair fixes)."""

    records: list[EpisodeRecord] = field(default_factory=list)
    torn_tail: str | None = None  # why the last line is unusable, when it is
    bad_lines: list[tuple[int, str]] = field(default_factory=list)  # (1-based line, message), not last


def scan_index(path: Path) -> IndexScan:
    """Read a log tolerating a torn last line; a missing log is an empty one."""
    scan = IndexScan()
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return scan
    lines = text.split("\n")
    complete = text.endswith("\n") or text == ""
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    for pos, (lineno, line) in enumerate(numbered):
        last = pos == len(numbered) - 1
        if last and not complete:
            # Without its newline even a parseable line is a torn append: the next append would fuse with it.
            scan.torn_tail = f"{path}:{lineno}: last line has no newline (interrupted append)"
            continue
        try:
            scan.records.append(EpisodeRecord.from_json(line, f"{path}:{lineno}"))
        except DatasetError as exc:
            if last:
                scan.torn_tail = str(exc)
            else:
                scan.bad_lines.append((lineno, str(exc)))
    return scan


def read_index(path: Path) -> list[EpisodeRecord]:
    """Records of a log; a torn last line is skipped, a corrupt middle line raises."""
    scan = scan_index(path)
    if scan.bad_lines:
        _, message = scan.bad_lines[0]
        raise DatasetError(f"{message} (repair with: x2 datasets validate --repair)")
    return scan.records


def append_record(path: Path, record: EpisodeRecord) -> None:
    """Append one line durably. The caller guarantees the log does not end in a torn line."""
    created = not path.exists()
    with open(path, "ab") as fh:
        fh.write((record.to_json() + "\n").encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        fsync_dir(path.parent)


def write_index(path: Path, records: Iterable[EpisodeRecord]) -> None:
    """Replace the whole log atomically (repair and healing use this, never an in-place edit)."""
    write_bytes(path, "".join(r.to_json() + "\n" for r in records).encode("utf-8"))


def drop_torn_tail(path: Path) -> bool:
    """Cut a torn last line so the next append starts on a fresh line; True when something was cut."""
    if scan_index(path).torn_tail is None:
        return False
    data = path.read_bytes()
    # Keep every earlier line byte for byte; only the bytes after the last complete line go.
    cut = data.rstrip(b"\n\r\t ").rfind(b"\n") + 1
    write_bytes(path, data[:cut])
    return True


def format_indices(indices: Sequence[int], limit: int = 12) -> str:
    """Compact "0-41, 43, 45-50" listing for error messages."""
    if not indices:
        return "none"
    runs: list[str] = []
    ordered = sorted(set(indices))
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    text = ", ".join(runs[:limit])
    return text + (", ..." if len(runs) > limit else "")


# The fields of an index line that its file's own attrs and datasets decide (validate compares them).
FILE_FACTS = ("index", "frames", "success", "bytes", "seed", "master_seed", "slot", "source", "segments", "failure")
