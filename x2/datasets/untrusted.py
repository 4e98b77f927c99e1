"""Reading an episode file someone else wrote: every value is bounded and typed before it is used.

A lab opens other labs' datasets, so a file may be corrupted or hostile. What x2 reads from one is only
ever data: attrs are numbers, strings or JSON text parsed with ``json`` (never evaluated or imported),
datasets are numeric or string arrays (an h5py object or opaque dtype is read as bytes, never
unpickled; nothing read passes through pickle or ``numpy.load(allow_pickle=True)``). What is bounded:

- a JSON attr over `MAX_JSON_BYTES` is refused before it is parsed, and what ``json`` raises on
  hostile text (ValueError, RecursionError for ``[[[[...`` nested deeper than the interpreter's stack)
  becomes one DatasetError line;
- a dataset read whole must be backed by bytes in the file: HDF5 fills never-written chunks with zeros,
  so a file of a few KB can declare a 2**40-row array, and reading it would allocate petabytes
  (`check_backed`);
- what HDF5 raises on corrupted metadata (OSError, RuntimeError, KeyError, a UnicodeDecodeError of a
  string attr) becomes one DatasetError line naming the file (`hdf5_errors`).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py

from x2.base.errors import DatasetError

# x2's largest JSON attr is the world record (~6 KB); a big augmentation config ~50 KB
MAX_JSON_BYTES = 16 * 1024 * 1024
# A dataset read whole may declare at most this many bytes more than it stores (x2 writes every row it
# declares; zstd on its camera frames stays far under this ratio) ...
MAX_INFLATION = 1000
# ... unless it is small anyway (a chunk of never-written rows, an empty label stream).
SMALL_READ_BYTES = 64 * 1024 * 1024
ALLOWED_FILE = "an x2 episode file (x2 datasets validate --repair moves unreadable ones aside)"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


@contextlib.contextmanager
def hdf5_errors(path: Path, what: str) -> Iterator[None]:
    """Turn what h5py raises on a corrupted file while reading `what` into one DatasetError line."""
    try:
        yield
    except DatasetError:
        raise
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as exc:
        raise DatasetError(f"{path}: {what}: found unreadable HDF5 ({_one_line(exc)}); allowed: {ALLOWED_FILE}") \
            from None


def json_loads(text: str | bytes) -> Any:
    """``json.loads`` whose every refusal is a JSONDecodeError (a ValueError): hostile nesting (``[[[[...``)
    makes the decoder raise RecursionError, which the ``except ValueError`` of a reader would let through."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
        raise json.JSONDecodeError("nested too deep to parse", doc[:100], 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an int of more digits than Python converts (sys.get_int_max_str_digits)
        doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
        raise json.JSONDecodeError(str(exc).split(";")[0], doc[:100], 0) from None


def parse_json(raw: object, path: Path, name: str) -> Any:
    """A JSON attr's text (already a plain str) parsed, or one DatasetError line saying why not."""
    if not isinstance(raw, str):
        raise DatasetError(f"{path}: {name}: found {type(raw).__name__}; allowed: JSON text")
    if len(raw) > MAX_JSON_BYTES:  # characters, a lower bound of its UTF-8 bytes: cheap and enough
        raise DatasetError(f"{path}: {name}: found {len(raw)} characters of JSON; allowed: at most "
                           f"{MAX_JSON_BYTES} bytes")
    try:
        return json_loads(raw)
    except ValueError as exc:
        raise DatasetError(f"{path}: {name}: found malformed JSON ({_one_line(exc)}); allowed: JSON text") from None


def declared_bytes(ds: h5py.Dataset) -> int:
    return math.prod(int(n) for n in ds.shape) * int(ds.dtype.itemsize) if ds.shape else int(ds.dtype.itemsize)


def check_backed(ds: h5py.Dataset, path: Path, name: str) -> None:
    """Refuse to read `ds` whole when it declares far more bytes than the file stores for it."""
    declared = declared_bytes(ds)
    if declared <= SMALL_READ_BYTES:
        return
    with hdf5_errors(path, name):
        stored = int(ds.id.get_storage_size())
    if declared > MAX_INFLATION * stored:
        raise DatasetError(f"{path}: {name}: found shape {ds.shape} ({declared} bytes) stored in {stored} bytes; "
                           f"allowed: a dataset whose rows were written (at most {MAX_INFLATION}x its stored size)")


def as_int(value: object) -> int | None:
    """`value` when it is an integer (not a bool), else None."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def parse_events(raw: object, path: Path) -> list[tuple[str, int]]:
    """/dag events JSON -> [(node, frame)], or one DatasetError line."""
    out: list[tuple[str, int]] = []
    for pair in raw if isinstance(raw, list) else [None]:  # (None: not a list, refused below)
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)) \
                or (frame := as_int(pair[1])) is None:
            raise DatasetError(f"{path}: dag/events: found {json.dumps(raw)[:60]}; allowed: [[node, frame], ...]")
        out.append((pair[0], frame))
    return out


def parse_failure(raw: object, path: Path) -> tuple[str, int, str] | None:
    """/dag failure JSON -> (node, frame, reason) or None, or one DatasetError line."""
    if not raw:
        return None
    if isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str) and as_int(raw[1]) is not None \
            and isinstance(raw[2], str):
        return raw[0], int(raw[1]), raw[2]
    raise DatasetError(f"{path}: dag/failure: found {json.dumps(raw)[:60]}; allowed: null or [node, frame, reason]")
