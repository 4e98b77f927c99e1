"""Files that appear whole or not at all: the one staging primitive, and its contract (stated here only).

Every x2 writer of a file or folder that must never be seen half-made goes through `staging(target, kind)`:

1. The writer builds under a hidden sibling of the target, `.NAME<kind>PID`: the kind names the writer (`.tmp-`
   one replaced file, x2.files.atomic; `.partial-` an export, `staged` below; `.building-` a new dataset,
   x2.datasets.building, which builds inside it at `.NAME.building-PID/NAME` so the dataset keeps its name), and
   PID is the writer's process id, so two writers never share one and a dead writer's is told from a live one's.
2. When the block ends without an error, the file (or every file and folder of the tree) is fsynced, renamed onto
   the target, and the folder holding the target fsynced: after a crash the rename has happened or not, and what
   it shows is on the disk.
3. An existing target is, by the writer's choice, replaced in the same rename (a file onto a file, the store's
   files), refused (a build that must make a new target: the writer says so in its own words, also for one
   created meanwhile), or set aside as `.NAME.old-PID` before the rename, put back if the new one does not get
   into place, and removed once it has (an overwritten export, which may be a folder).
4. When the block fails the temporary is removed; what was at the target before is there again.
5. What killed writers left beside the target (`.NAME<kind>PID` or `.NAME.old-PID` of a process no longer
   running) is removed by the next writer of the same target; a live writer's entries are never touched.
6. A refused write (full disk, read-only folder, a file in the way...) becomes one StorageError line through
   x2.files.disk saying what is safe, for a writer that knows it (`safe`); a writer whose caller knows better
   (the store's index: which episodes are committed) lets the OSError through to that caller.

A kill at any moment therefore leaves the target absent, as it was, or complete. Episode files take steps 2 and
4 from the dataset's own hidden folders instead (`.inprogress/`, `.rendering/`, `.staging/`: named by episode
under the dataset's writer lock, and finished or removed by the next lock holder, x2/datasets/validate.py), with
`fsync_file` and `move_into_place` (x2.datasets.commit, x2.datasets.writer).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from x2.base.errors import ExportError
from x2.files.disk import is_refusal, refused

TEMP, PARTIAL, BUILDING, OLD = ".tmp-", ".partial-", ".building-", ".old-"  # the kinds of step 1, and step 3's
Existing = Literal["replace", "refuse", "set aside"]  # what becomes of a target already there (step 3)


# ----- the steps --------------------------------------------------------------------------------------------------
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


def fsync_tree(root: Path) -> None:
    """fsync every file and folder under `root` (or `root` itself when it is a file)."""
    if root.is_file():
        fsync_file(root)
        return
    for folder, _dirs, files in os.walk(root):
        for name in files:
            fsync_file(Path(folder) / name)
        fsync_dir(Path(folder))


settle = fsync_tree  # step 2's first half: what was built is on the disk before any name points to it


def move_into_place(built: Path, target: Path) -> None:
    """Step 2's rename: `built` onto `target` (a file replaces a file in the same step), made durable in the
    target's folder and, when it was built in another, in that one too."""
    os.replace(built, target)
    fsync_dir(target.parent)
    if built.parent != target.parent:
        fsync_dir(built.parent)


def hidden_sibling(target: Path, kind: str) -> Path:
    """This process's temporary name of `kind` beside `target` (step 1)."""
    return target.with_name(f".{target.name}{kind}{os.getpid()}")


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def remove_orphans(folder: Path, *prefixes: str) -> list[Path]:
    """Remove `folder/<prefix><pid>` files and folders whose writer process is gone (step 5)."""
    removed: list[Path] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)  # (prefixes, not globs: a name may hold `[`)
    except OSError:  # no such folder (yet), or one this process may not list: nothing of ours in it
        return removed
    for entry in entries:
        pid = next((entry.name[len(p):] for p in prefixes if entry.name.startswith(p)), "")
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        path = Path(entry.path)
        _remove(path)
        removed.append(path)
    return removed


def clear_leftovers(target: Path, kind: str = PARTIAL) -> list[Path]:
    """Remove what killed writers of `kind` left beside `target`, and the old targets they had set aside."""
    return remove_orphans(target.parent, f".{target.name}{kind}", f".{target.name}{OLD}")


# ----- the primitive ----------------------------------------------------------------------------------------------
def _no_check(target: Path) -> None:
    pass


@contextmanager
def staging(target: Path, kind: str, *, existing: Existing, refuse: Callable[[Path], None] = _no_check,
            nested: bool = False, make_parent: bool = False, safe: Callable[[bool], str] | None = None
            ) -> Iterator[Path]:
    """`with staging(target, kind, existing=...) as tmp: write tmp` -> `target` is what was written, or as it was.

    `refuse(target)` raises the writer's own error when `existing` is "refuse" and the target is there at the
    rename; `nested` builds at `<hidden sibling>/NAME`; `make_parent` creates the target's folder first (a build
    into a new folder) rather than fail without it (the store, whose folder deleted under it is news);
    `safe(target_there)` says what is safe after a refused write, which then becomes a StorageError."""
    tmp, aside = hidden_sibling(target, kind), hidden_sibling(target, OLD)
    built = tmp / target.name if nested else tmp
    try:
        if make_parent:
            target.parent.mkdir(parents=True, exist_ok=True)
        clear_leftovers(target, kind)
        _remove(tmp)  # (a dead writer's of this very pid)
        if nested:
            tmp.mkdir()
        yield built
        settle(built)
        if existing == "refuse":
            refuse(target)  # made meanwhile by someone else
        elif existing == "set aside" and os.path.lexists(target):
            os.rename(target, aside)
        try:
            move_into_place(built, target)
        except OSError:
            if existing == "refuse" and os.path.lexists(target):
                refuse(target)  # made between the check and the rename
            raise
    except BaseException as exc:
        _remove(tmp)
        if os.path.lexists(aside) and not os.path.lexists(target):
            os.rename(aside, target)  # put the previous target back
        if safe is not None and is_refusal(exc):
            raise refused(exc, getattr(exc, "filename", None) or tmp, safe(target.exists())) from None
        raise
    if nested:
        _remove(tmp)
    _remove(aside)


# ----- exports ----------------------------------------------------------------------------------------------------
def check_target(target: Path, overwrite: bool) -> None:
    """Refuse an existing target without `overwrite` before any work is done."""
    if target.exists() and not overwrite:
        raise ExportError(f"{target}: target: found an existing {'folder' if target.is_dir() else 'file'}; "
                          "allowed: a new path, or --overwrite to replace it")
    if target.parent.exists() and not target.parent.is_dir():
        raise ExportError(f"{target.parent}: target folder: found a file; allowed: a folder")


def _created_meanwhile(target: Path) -> None:
    if target.exists():
        raise ExportError(f"{target}: target: found one created meanwhile; allowed: --overwrite")


@contextmanager
def staged(target: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """`with staged(out) as tmp: write tmp (a file or a folder)` -> `out` is exactly what was written: an export
    (kind `.partial-`), whose previous version `overwrite` sets aside until the new one is in place."""
    target = Path(target).absolute()
    check_target(target, overwrite)

    def safe(there: bool) -> str:
        before = "the previous export is still there" if there else "no export was written there"
        return f"{before} ({target}; its partial build is removed), the dataset is untouched"

    with staging(target, PARTIAL, existing="set aside" if overwrite else "refuse", refuse=_created_meanwhile,
                 make_parent=True, safe=safe) as tmp:
        yield tmp
        if not tmp.exists():
            raise ExportError(f"{target}: export: found nothing written; allowed: a finished export")
