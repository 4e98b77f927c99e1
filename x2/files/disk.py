"""When the machine says no: turning a refused write into one line that says what happened and what is safe.

Every x2 write goes to a temporary name and is renamed into place (x2.files.staging states how), so a refused
write never leaves a half-made file looking finished and never touches what was committed before it. What the
line must add is the cause in words, the path, what is safe (the writer that knows says it: "episodes 0-11 are
committed and intact") and the fix.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from x2.base.errors import StorageError

# errno -> (cause, what to do)
_CAUSES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("disk full", "free space and rerun"),
    errno.EDQUOT: ("disk quota exceeded", "free space within your quota and rerun"),
    errno.EROFS: ("read-only file system", "write to a writable folder"),
    errno.EACCES: ("permission denied", "write to a folder you may write to, or fix its permissions"),
    errno.EPERM: ("operation not permitted", "write to a folder you may write to, or fix its permissions"),
    errno.ENOTDIR: ("a file is in the way (a path component is a file, not a folder)", "choose a folder path"),
    errno.EISDIR: ("a folder is in the way", "choose another path"),
    errno.EEXIST: ("a file is in the way (something already exists where a folder must go)", "choose another path"),
    errno.ENOENT: ("folder gone", "rerun to write it again"),
    errno.EIO: ("I/O error (a failing disk or a lost network mount)",
                "check the disk, copy the committed data elsewhere, then `x2 datasets validate`"),
    errno.EFBIG: ("file too large for this file system", "write to another file system"),
    errno.EMFILE: ("too many open files", "raise the limit (ulimit -n) and rerun"),
    errno.ENFILE: ("too many open files on this machine", "close other programs and rerun"),
}
# HDF5 reports a failed write as a RuntimeError or OSError whose text carries the system's errno.
_HDF5_ERRNO = re.compile(r"errno = (\d+)")


def os_error_of(exc: BaseException) -> OSError | None:
    """The OSError behind `exc` (HDF5's RuntimeError for a failed write included), or None."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc
    match = _HDF5_ERRNO.search(str(exc))
    if isinstance(exc, (OSError, RuntimeError)) and match and int(match.group(1)) != 0:
        code = int(match.group(1))
        return OSError(code, os.strerror(code))
    return None


def is_refusal(exc: BaseException) -> bool:
    """True when `exc` is the machine refusing a write (a cause x2 can name), not a bug."""
    found = os_error_of(exc)
    return found is not None and found.errno in _CAUSES


def cause(exc: BaseException) -> str:
    found = os_error_of(exc)
    if found is None or found.errno is None:
        return " ".join(str(exc).split())[:200] or type(exc).__name__
    return _CAUSES.get(found.errno, (os.strerror(found.errno), ""))[0]


def refused(exc: BaseException, path: str | Path | None, safe: str, doing: str = "writing") -> StorageError:
    """The one line: `<cause> <doing> <path>: <what is safe>; <what to do>`."""
    found = os_error_of(exc)
    code = found.errno if found is not None else None
    fix = _CAUSES.get(code, ("", "check the disk and rerun"))[1] if code is not None else "check the disk and rerun"
    where = path if path is not None else (getattr(found, "filename", None) or "?")
    return StorageError(f"{cause(exc)} {doing} {where}: {safe}; {fix}")
