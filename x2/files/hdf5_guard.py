"""Writing HDF5 files on a disk that may refuse writes, without crashing the process.

HDF5 writes from its caches whenever it likes. When such a write fails (a full disk, an I/O error) inside
an object's deallocation, h5py can only print the error ("Exception ignored in ... ObjectID.__dealloc__"),
the library keeps dirty state for the file, and later calls on it, its close, or the flush at interpreter
exit end the process in a segmentation fault. Two defences, both below the code that writes:

- A watcher (chained into `sys.unraisablehook` and `sys.excepthook`, which Cython prints through) catches
  those swallowed failures, remembers the file and its errno, and points the file's descriptor at
  /dev/null at once: HDF5's later writes then succeed into nothing and its state stays consistent. The
  writer learns of it at its next `check_writes` or at the end of `kept_if_complete`, as an OSError.
- A file x2 throws away (`discard`) gets the same /dev/null descriptor and is removed. If a write to it
  failed it is not closed at all (HDF5 crashed closing such files): it stays referenced, so Python never
  frees it, and the process is `in_doubt`, as after any close that fails. `x2.cli` then ends the
  process without HDF5's exit-time cleanup, after its one-line error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import h5py

from x2.files.disk import is_refusal, os_error_of

_unclosed: list[Path] = []
_left_open: list[h5py.File] = []  # files whose close could crash HDF5: never closed, never freed
_failed: dict[str, int] = {}  # absolute path -> errno of a write HDF5 reported only by printing
_WHERE = re.compile(r"filename = '([^']*)', file descriptor = (\d+), errno = (\d+)")


def in_doubt() -> bool:
    """True once HDF5 failed a write or a close in this process: its exit-time cleanup may then crash, so a
    program that has reported the failure should end with os._exit (x2.cli does)."""
    return bool(_unclosed or _failed)


def check_writes(path: str | Path) -> None:
    """Raise the OSError of a write to `path` that HDF5 failed without raising (see the module docstring)."""
    code = _failed.get(os.path.abspath(path))
    if code is not None:
        raise OSError(code, os.strerror(code), str(path))


def discard(file: h5py.File | None, path: str | Path, failed: bool = False) -> None:
    """Close (when given) and remove a file being written that will not be kept. `failed`: a write to it
    failed, and closing it may crash HDF5 (it did, after a failed start of SWMR writing, even with every
    later write succeeding): such a file is left open, kept referenced so Python never frees it, pointed at
    /dev/null and removed, and the process counts as `in_doubt`. Never raises: it runs while another
    error is on its way up."""
    path = Path(path)
    failed = failed or os.path.abspath(path) in _failed
    if file is not None and file.id.valid:
        with contextlib.suppress(Exception):  # another driver than sec2 has no descriptor: close as it is
            _point_at_nothing(file.id.get_vfd_handle())
        if failed:
            _left_open.append(file)
            _unclosed.append(path)
        else:
            try:
                file.close()
            except Exception:  # noqa: BLE001 - HDF5 raises RuntimeError, OSError, ValueError here
                _unclosed.append(path)
    with contextlib.suppress(OSError):
        path.unlink()


@contextmanager
def kept_if_complete(path: str | Path, mode: str = "w", opened: h5py.File | None = None,
                     **kwargs: Any) -> Iterator[h5py.File]:
    """`with kept_if_complete(tmp) as f: write f` -> `tmp` is closed and kept when the block ends well and every
    write reached the disk; otherwise it is discarded and the error raised (a failed write as OSError).
    `opened`: the file is open already (as `tmp`); the block goes on writing it."""
    path = Path(path)
    watch()
    file = opened if opened is not None else h5py.File(path, mode, **kwargs)
    try:
        yield file
        check_writes(path)
    except BaseException as exc:
        discard(file, path, failed=is_refusal(exc))
        check_writes(path)  # the write that failed first explains what came after it
        found = os_error_of(exc)
        if found is not None and not isinstance(exc, OSError):
            raise found from None
        raise
    try:
        file.close()
        check_writes(path)
    except (OSError, RuntimeError) as exc:
        if os.path.abspath(path) not in _failed:
            _unclosed.append(path)  # too late to make room: the failed close is what leaves it open
        with contextlib.suppress(OSError):
            path.unlink()
        raise (os_error_of(exc) or exc) from None


def _point_at_nothing(fd: int) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def _swallowed_write_failure(exc: BaseException | None) -> bool:
    """Take note of a failed HDF5 write reported only by printing; True when `exc` was one."""
    if not isinstance(exc, (OSError, RuntimeError)) or "file write failed" not in str(exc):
        return False
    match = _WHERE.search(str(exc))
    if match is None:
        return False
    name, fd, code = match.group(1), int(match.group(2)), int(match.group(3))
    _failed.setdefault(os.path.abspath(name), code or errno.EIO)
    with contextlib.suppress(OSError):
        # Only while the descriptor is still that file's (the same number may have been reused since).
        if os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)") == os.path.abspath(name):
            _point_at_nothing(fd)
    return True


# The hooks in front of which watch() put its own (the interpreter's until it first runs).
_next_unraisablehook: Callable[[sys.UnraisableHookArgs], object] = sys.__unraisablehook__
_next_excepthook: Callable[[type[BaseException], BaseException, TracebackType | None], object] = sys.__excepthook__


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    if not _swallowed_write_failure(unraisable.exc_value):
        _next_unraisablehook(unraisable)


def _excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    if not _swallowed_write_failure(value):
        _next_excepthook(kind, value, tb)


def watch() -> None:
    """Put the watcher in front of the current hooks (again, when someone replaced them since: typer sets
    its own excepthook when a command starts). Every writer calls this before it opens a file."""
    global _next_unraisablehook, _next_excepthook
    if sys.unraisablehook is not _unraisable:
        _next_unraisablehook, sys.unraisablehook = sys.unraisablehook, _unraisable
    if sys.excepthook is not _excepthook:
        _next_excepthook, sys.excepthook = sys.excepthook, _excepthook
