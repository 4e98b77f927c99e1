"""One read of a committed episode file that both checks it and feeds its reader.

`read_verified` reads the file's bytes once, hashes them against the digest its index line recorded at commit
(x2.files.digest), and opens those same bytes with h5py from memory: what a reader gets is exactly what was
checked, a damaged file is refused before anything reads from it, and the file is opened once (its descriptor
is closed again before the reader starts). The bytes stay in memory while the episode is open, so a reader that
goes through many episodes holds one file's worth at a time.
"""

from __future__ import annotations

from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord
from x2.datasets.store import Dataset
from x2.files.digest import bytes_digest, check_digest
from x2.format import INDEX_FILE


def read_verified(ds: Dataset, record: EpisodeRecord) -> Episode:
    """Episode `record.index` of `ds`, read once: refused (DigestMismatch) when its bytes do not hash to the
    digest of `record` (its index line; None: nothing recorded, nothing to check), else open from those bytes."""
    path = ds.episode_path(record.index)
    try:
        image = path.read_bytes()
    except FileNotFoundError:
        ds.load(record.index).close()  # (gone: load's NotFoundError names the episodes there are)
        raise
    check_digest(path, bytes_digest(image), record.digest, f"{INDEX_FILE} (episode {record.index})")
    return Episode(path, image=image)
