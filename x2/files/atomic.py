"""One file replaced whole: the index, the manifest, the workspace state, calibrations, device streams, plots and
reports all go through `replacing`.

It is x2.files.staging's primitive for one file (the contract is stated there): the new bytes are written to
`.NAME.tmp-PID` beside `path`, fsynced and renamed over `path` in one step, so a reader, or a process killed at
any moment, sees the old file or the new one, never a mixture. A refused write is the caller's to put in words
(the store knows which episodes are committed): the OSError goes through. (Episode files have their own commit,
x2.datasets.commit: they are written over many seconds under `.inprogress/` and renamed into `episodes/`.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from x2.files.staging import TEMP, staging


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """`with replacing(p) as tmp: write tmp` -> `p` is replaced by what was written, or left alone."""
    with staging(Path(path), TEMP, existing="replace") as tmp:
        yield tmp


def write_bytes(path: str | Path, data: bytes) -> None:
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))
