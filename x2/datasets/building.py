"""New datasets appear complete or not at all: `x2 datasets merge` and `filter` build beside the target.

`building(target)` hands out a path inside a hidden sibling of the target (`.NAME.building-PID/NAME`);
the caller creates the whole dataset there, and when the block ends without an error the tree is fsynced
and renamed onto `target` in one step. A kill at any moment leaves no `target` or a complete one, never a
half-made dataset that a collector could append to. The hidden folders of killed runs are removed by the
next build of the same target (only those whose process is gone).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.files.atomic import fsync_dir, fsync_tree, remove_orphans
from x2.files.disk import is_refusal, refused

_BUILDING = ".building-"


def clear_dead_builds(target: Path) -> list[Path]:
    """Remove what killed builds of `target` left beside it."""
    return remove_orphans(target.parent, f".{target.name}{_BUILDING}")


def refuse_existing(target: Path) -> None:
    if target.exists() or target.is_symlink():
        kind = "folder" if target.is_dir() else "file"
        raise DatasetError(f"{target}: --out: found an existing {kind}; allowed: a new path "
                           "(merge and filter always write a new dataset)")


@contextmanager
def building(target: str | Path) -> Iterator[Path]:
    """`with building(out) as tmp: Dataset.create(tmp, ...) ...` -> `out` is exactly that dataset."""
    target = Path(target).absolute()
    refuse_existing(target)
    box = target.parent / f".{target.name}{_BUILDING}{os.getpid()}"
    inner = box / target.name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clear_dead_builds(target)
        shutil.rmtree(box, ignore_errors=True)
        box.mkdir()
        yield inner
        if not (inner / fmt.MANIFEST_FILE).is_file():
            raise DatasetError(f"{target}: dataset: found nothing built; allowed: a finished dataset")
        fsync_tree(inner)
        refuse_existing(target)  # made meanwhile by someone else
        try:
            os.rename(inner, target)
        except OSError as exc:
            found = (exc.strerror or str(exc)).lower()
            raise DatasetError(f"{target}: --out: found {found}; allowed: a new path") from None
        fsync_dir(target.parent)
    except (OSError, RuntimeError) as exc:
        if not is_refusal(exc):
            raise
        where = getattr(exc, "filename", None) or box
        raise refused(exc, where, f"no dataset was made at {target} (its partial build is removed); "
                                  "the sources are untouched") from None
    finally:
        shutil.rmtree(box, ignore_errors=True)
