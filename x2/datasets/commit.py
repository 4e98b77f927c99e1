"""The last steps every new episode file takes, whoever made it (the writer of a recorded episode, a file built
whole from finished ones, a render's new version): sealed here, then moved into ``episodes/`` by
`x2.files.staging.move_into_place`.

These are steps 4 and 2 of x2.files.staging's contract, taken from the dataset's own hidden folders
(``.inprogress/``, ``.staging/``, ``.rendering/``) rather than a sibling named by pid: the writer lock makes one
writer, and the next lock holder finishes or removes what a killed one left. Sealing fsyncs the finished file and
takes the digest its index line records, so the checksum is of the bytes that reached the disk; the move renames
it into place and fsyncs both folders, so after a crash the file is either where it was built or complete in
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

