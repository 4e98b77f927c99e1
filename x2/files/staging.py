"""Exports appear complete or not at all: build beside the target, check, then rename into place.

`staged(target)` hands out a hidden sibling of the target (`.NAME.partial-PID`); when the block ends
without an error the whole tree is fsynced and renamed onto `target`. An existing target is refused
unless `overwrite`; then the old one is first renamed aside and removed only after the new one is in
place, so a kill at any moment leaves the old export, the new one, or (between two renames) the old one
under `.NAME.old-PID`, never a half-written `target`. Partials left by killed runs are removed by the
next run for the same target (only those whose process is gone).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from x2.base.errors import ExportError
from x2.files.atomic import fsync_dir, fsync_tree, remove_orphans
from x2.files.disk import is_refusal, refused

_PARTIAL, _OLD = ".partial-", ".old-"


def clear_leftovers(target: Path) -> list[Path]:
    """Remove partial builds (and set-aside old targets) of `target` whose writer process has died."""
    return [p for kind in (_PARTIAL, _OLD) for p in remove_orphans(target.parent, f".{target.name}{kind}")]


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse an existing target without `overwrite` before any work is done."""
    if target.exists() and not overwrite:
        raise ExportError(f"{target}: target: found an existing {'folder' if target.is_dir() else 'file'}; "
                          "allowed: a new path, or --overwrite to replace it")
    if target.parent.exists() and not target.parent.is_dir():
        raise ExportError(f"{target.parent}: target folder: found a file; allowed: a folder")


@contextmanager
def staged(target: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """`with staged(out) as tmp: write tmp (a file or a folder)` -> `out` is exactly what was written."""
    target = Path(target).absolute()
    check_target(target, overwrite)
    tmp = target.with_name(f".{target.name}{_PARTIAL}{os.getpid()}")
    old = target.with_name(f".{target.name}{_OLD}{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clear_leftovers(target)
        yield tmp
        if not tmp.exists():
            raise ExportError(f"{target}: export: found nothing written; allowed: a finished export")
        fsync_tree(tmp)
        if target.exists():
            if not overwrite:  # made meanwhile by someone else
                raise ExportError(f"{target}: target: found one created meanwhile; allowed: --overwrite")
            os.rename(target, old)
        os.rename(tmp, target)
        fsync_dir(target.parent)
    except BaseException as exc:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        if old.exists() and not target.exists():
            os.rename(old, target)  # put the previous export back
        if is_refusal(exc):
            before = "the previous export is still there" if target.exists() else "no export was written there"
            where = getattr(exc, "filename", None) or tmp
            raise refused(exc, where, f"{before} ({target}; its partial build is removed), the dataset is "
                                      "untouched") from None
        raise
    if old.exists():
        shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
