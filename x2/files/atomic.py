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


def fsync_tree(root: Path) -> None:
    """fsync every file and folder under `root` (or `root` itself when it is a file)."""
    if root.is_file():
        fsync_file(root)
        return
    for folder, _dirs, files in os.walk(root):
        for name in files:
            fsync_file(Path(folder) / name)
        fsync_dir(Path(folder))


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def remove_orphans(folder: Path, prefix: str) -> list[Path]:
    """Remove `folder/<prefix><pid>` files and folders whose writer process is gone: what a killed
    writer left of its temporary build. A live writer's entries are never touched."""
    import shutil

    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for path in folder.glob(f"{prefix}*"):
        pid = path.name.removeprefix(prefix)
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed
