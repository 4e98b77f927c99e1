"""Closing an HDF5 file whose write failed, without crashing the process.

When a write fails (a full disk, an I/O error) HDF5 keeps dirty metadata for the file; its close then
fails too, the library keeps the file open, its objects fail again as Python frees them (printing
tracebacks), and flushing it at interpreter exit ends the process in a segmentation fault. A file x2 is
about to throw away therefore has its descriptor pointed at /dev/null first: the close writes its metadata
into nothing and completes, and the file is removed. When a close still fails, the path is remembered:
`x2.cli` then ends the process without HDF5's exit-time flush, after its one-line error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py

from x2.disk import os_error_of

_unclosed: list[Path] = []


def unclosed_files() -> tuple[Path, ...]:
    """Files HDF5 could not close in this process (the caller must not let HDF5 flush them at exit)."""
    return tuple(_unclosed)


def discard(file: h5py.File | None, path: str | Path) -> None:
    """Close (when given) and remove a file being written that will not be kept, whatever a failed write
    left it in. Never raises: it runs while another error is on its way up."""
    path = Path(path)
    if file is not None and file.id.valid:
        _point_at_nothing(file)
        try:
            file.close()
        except Exception:  # noqa: BLE001 - HDF5 raises RuntimeError, OSError, ValueError here
            _unclosed.append(path)
    with contextlib.suppress(OSError):
        path.unlink()


def _point_at_nothing(file: h5py.File) -> None:
    """Swap the file's descriptor for /dev/null: HDF5's last writes (the metadata it flushes on close)
    then succeed and go nowhere, so the close completes, and the real file is left to be removed."""
    with contextlib.suppress(Exception):  # another driver than sec2 has no descriptor: close as it is
        fd = file.id.get_vfd_handle()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)


@contextmanager
def kept_if_complete(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[h5py.File]:
    """`with kept_if_complete(tmp) as f: write f` -> `tmp` is closed and kept when the block ends well; on any
    error (the block's or the close's) it is discarded and the error re-raised (a failed write as OSError)."""
    path = Path(path)
    file = h5py.File(path, mode, **kwargs)
    try:
        yield file
    except BaseException as exc:
        discard(file, path)
        found = os_error_of(exc)
        if found is not None and not isinstance(exc, OSError):
            raise found from None
        raise
    try:
        file.close()
    except (OSError, RuntimeError) as exc:
        _unclosed.append(path)  # too late to make room: the failed close is what leaves it open
        with contextlib.suppress(OSError):
            path.unlink()
        raise (os_error_of(exc) or exc) from None
