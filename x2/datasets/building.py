"""New datasets appear complete or not at all: `x2 datasets merge` and `filter` build beside the target.

`building(target)` is x2.files.staging's primitive for a new dataset folder (the contract is stated there): the
caller creates the whole dataset at `.NAME.building-PID/NAME` (inside a hidden box, so it has its target's name
while it is built), and the tree is fsynced and renamed onto `target` when the block ends without an error. A kill
at any moment leaves no `target` or a complete one, never a half-made dataset that a collector could append to;
the next build of the same target removes the boxes of killed runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.files.staging import BUILDING, clear_leftovers, staging


def clear_dead_builds(target: Path) -> list[Path]:
    """Remove what killed builds of `target` left beside it."""
    return clear_leftovers(target, BUILDING)


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
    safe = f"no dataset was made at {target} (its partial build is removed); the sources are untouched"
    with staging(target, BUILDING, existing="refuse", refuse=refuse_existing, nested=True, make_parent=True,
                 safe=lambda _there: safe) as inner:
        yield inner
        if not (inner / fmt.MANIFEST_FILE).is_file():
            raise DatasetError(f"{target}: dataset: found nothing built; allowed: a finished dataset")
