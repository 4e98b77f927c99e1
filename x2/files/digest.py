"""Episode checksums: the sha256 of a finished file, taken when it is committed and kept in its index line.

A committed episode file never changes afterwards (a render builds a new version and commits that with
its own digest), so a file whose bytes no longer hash to its index line's digest has rotted on disk or
been damaged by a copy. ``x2 datasets validate`` checks every digest, ``--repair`` moves mismatching
files to the quarantine, and every reader that makes something from an episode (export, augment, merge,
render) checks it first, so damage is never carried into a new file under a fresh digest.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from x2.base.errors import DatasetError

ALGORITHM = "sha256"
DIGEST_FORM = re.compile(r"^sha256:[0-9a-f]{64}$")


def file_digest(path: str | Path) -> str:
    """``sha256:<hex>`` of the file's bytes (756 MB/s here, bench/bench_checksums.py)."""
    with open(path, "rb") as fh:
        h = hashlib.file_digest(fh, ALGORITHM)  # (reads into one buffer: no allocation per piece)
    return f"{ALGORITHM}:{h.hexdigest()}"


class DigestMismatch(DatasetError):
    """A committed episode's bytes differ from the digest its index line recorded."""


def bytes_digest(data: bytes) -> str:
    """``sha256:<hex>`` of bytes already read (what `file_digest` gives for a file holding them)."""
    return f"{ALGORITHM}:{hashlib.new(ALGORITHM, data).hexdigest()}"


def check_digest(path: str | Path, found: str, expected: str | None, what: str) -> None:
    """Raise DigestMismatch when `found` (the digest of the bytes at `path`) is not `expected` (None: nothing
    recorded), naming `what` recorded it."""
    if expected is not None and found != expected:
        raise DigestMismatch(
            f"{path}: {ALGORITHM}: found {found[7:19]}..., {what} records {expected[7:19]}...; allowed: equal "
            "(the file changed after it was committed: bit rot or a bad copy; restore it from a copy, or "
            "`x2 datasets validate --repair` moves it to the quarantine)")


def verify_digest(path: str | Path, expected: str | None, what: str) -> None:
    """Raise DigestMismatch when the file at `path` does not hash to `expected` (None: nothing recorded)."""
    if expected is not None:
        check_digest(path, file_digest(path), expected, what)
