"""The last steps every new episode file takes, whoever made it (the writer of a recorded episode, a
file built whole from finished ones, a render's new version): sealed, then moved into ``episodes/``.

These are steps 2 and 4 of x2.files.staging's contract, taken from the dataset's own hidden folders
(``.inprogress/``, ``.staging/``, ``.rendering/``) rather than a sibling named by pid: the writer lock makes one
writer, and the next lock holder finishes or removes what a killed one left. Sealing fsyncs the finished file and
takes the digest its index line records, so the checksum is of the bytes that reached the disk; moving renames it
into place and fsyncs both folders, so after a crash the file is either where it was built or complete in
``episodes/``. When the index line is written (before the move for a render, after it otherwise) is the caller's
contract, stated where it is called.
"""

from __future__ import annotations

from pathlib import Path

from x2.files import staging
from x2.files.digest import file_digest


def seal(path: Path) -> str:
    """fsync a finished episode file; its digest ("sha256:...")."""
    staging.fsync_file(path)
    return file_digest(path)


def move_into_place(staged: Path, final: Path) -> None:
    """Rename a sealed file into ``episodes/`` (or over its previous version there), durably."""
    staging.move_into_place(staged, final)
