"""Durable, all-or-nothing file writes: the one place x2 writes a file that must never be seen half-made.

`replacing(path)` hands out a temporary name next to `path`; when the block ends without an error the
temp file is fsynced and renamed over `path` (and the rename made durable), otherwise it is removed.
A reader, or a process killed at any moment, sees the old file or the new one, never a mixture. The
index, the manifest, the workspace state, calibrations, device streams, plots and reports all go through
it. (Episode files have their own commit in `x2.datasets.writer`: they are written over many seconds
under `.inprogress/` and renamed into `episodes/` the same way.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make a rename or a new directory entry durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: Path) -> Path:
    """A hidden sibling of `path` unique to this process: two writers never share a temp file."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """`with replacing(p) as tmp: write tmp` -> `p` is replaced by what was written, or left alone."""
    path = Path(path)
    tmp = temp_name(path)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_bytes(path: str | Path, data: bytes) -> None:
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))
