"""One read of a committed episode file that both checks it and feeds its reader.

`read_verified` reads the file's bytes once, hashes them against the digest its index line recorded at commit
(x2.files.digest), and opens those same bytes with h5py from memory: what a reader gets is exactly what was
checked, a damaged file is refused before anything reads from it, and the file is opened once (its descriptor
is closed again before the reader starts). The bytes stay in memory while the episode is open, so a reader that
goes through many episodes holds one file's worth at a time.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import h5py

from x2.base.errors import DatasetError
from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord
from x2.datasets.store import Dataset
from x2.files.digest import ALGORITHM, DigestMismatch
from x2.format import INDEX_FILE


class _InMemoryEpisode(Episode):
    """An `Episode` over a file's bytes held in memory; `path` names the file they were read from."""

    def __init__(self, path: Path, image: bytes) -> None:  # (no super().__init__: that opens the path again)
        self.path = path
        try:
            self._file = h5py.File(io.BytesIO(image), "r")  # (BytesIO shares `image`'s buffer: no copy)
        except (OSError, ValueError, RuntimeError) as exc:  # Episode's own refusal of an unreadable file
            raise DatasetError(f"{self.path}: file: found unreadable HDF5 ({exc}); "
                               "allowed: an x2 episode file (x2 datasets validate --repair)") from None
        self._cache = {}


def read_verified(ds: Dataset, record: EpisodeRecord) -> Episode:
    """Episode `record.index` of `ds`, read once: refused (DigestMismatch) when its bytes do not hash to the
    digest of `record` (its index line; None: nothing recorded, nothing to check), else open from those bytes."""
    path = ds.episode_path(record.index)
    try:
        image = path.read_bytes()
    except FileNotFoundError:
        ds.load(record.index).close()  # (gone: load's NotFoundError names the episodes there are)
        raise
    if record.digest is not None:
        found = f"{ALGORITHM}:{hashlib.new(ALGORITHM, image).hexdigest()}"
        if found != record.digest:  # the words of x2.files.digest.verify_digest, which reads the file itself
            raise DigestMismatch(
                f"{path}: {ALGORITHM}: found {found[7:19]}..., {INDEX_FILE} (episode {record.index}) records "
                f"{record.digest[7:19]}...; allowed: equal (the file changed after it was committed: bit rot or a "
                "bad copy; restore it from a copy, or `x2 datasets validate --repair` moves it to the quarantine)")
    return _InMemoryEpisode(path, image)
