"""The last steps every new episode file takes, whoever made it (the writer of a recorded episode, a
file built whole from finished ones, a render's new version): sealed, then moved into ``episodes/``.

Sealing fsyncs the finished file and takes the digest its index line records, so the checksum is of the
bytes that reached the disk; moving renames it into place and fsyncs both folders, so after a crash the
file is either where it was built or complete in ``episodes/``. When the index line is written (before
the move for a render, after it otherwise) is the caller's contract, stated where it is called.
"""

from __future__ import annotations

import os
from pathlib import Path

from x2.files.atomic import fsync_dir, fsync_file
from x2.files.digest import file_digest


def seal(path: Path) -> str:
    """fsync a finished episode file; its digest ("sha256:...")."""
    fsync_file(path)
    return file_digest(path)


def move_into_place(staged: Path, final: Path) -> None:
    os.replace(staged, final)
    fsync_dir(final.parent)
    fsync_dir(staged.parent)
