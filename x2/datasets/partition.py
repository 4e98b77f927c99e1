"""A dataset's partition: which part (train, val, test, ...) each episode belongs to for training.

Not to be confused with an episode's split (its `split` attr, x2.envspec.held_out): whether the configuration
it was recorded in is held out for evaluation, fixed when it was recorded. The partition is assigned afterwards,
without touching a finished file: `x2 datasets partition` (stratified_partition.py) writes `partition.json`
(`{"<episode index>": "<part>"}`) atomically. An episode it lists is in that part; an episode without an entry
is in the part named by its split (`part_of`).

Older datasets hold the same JSON under the partition file's older name, `splits.json`: it is read when
`partition.json` is absent. Writing the partition writes `partition.json` and only then removes an older
`splits.json`, so a dataset never holds two files that disagree (a write killed between the two leaves both,
and `partition.json`, the newer, is the one read).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets.episode import Episode
from x2.datasets.store import Dataset
from x2.datasets.untrusted import json_loads
from x2.files.atomic import write_text
from x2.files.staging import fsync_dir


def partition_path(root: Path) -> Path:
    """The file the partition of the dataset at `root` is read from: `partition.json`, else an older
    `splits.json` when only that one is there (`partition.json` when neither is)."""
    path = Path(root) / fmt.PARTITION_FILE
    older = Path(root) / fmt.OLDER_PARTITION_FILE
    return older if not path.exists() and older.exists() else path


def read_partition(root: Path) -> dict[int, str]:
    """The parts `partition.json` (or an older `splits.json`) assigns ({} when there is neither)."""
    path = partition_path(root)
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: partition: found unreadable JSON ({exc}); allowed: "
                           '{"<episode index>": "<part>"}') from None
    if not isinstance(data, dict) or not all(isinstance(v, str) and k.isdigit() for k, v in data.items()):
        raise DatasetError(f"{path}: partition: found {str(data)[:60]}; allowed: "
                           '{"<episode index>": "<part name>"}')
    return {int(k): v for k, v in data.items()}


def write_partition(root: Path, parts: Mapping[int, str]) -> None:
    """Write `partition.json`, then remove an older `splits.json` (see the module doc)."""
    text = json.dumps({str(k): str(v) for k, v in sorted(parts.items())}, indent=1, sort_keys=False)
    write_text(Path(root) / fmt.PARTITION_FILE, text + "\n")
    older = Path(root) / fmt.OLDER_PARTITION_FILE
    if older.exists():
        older.unlink()
        fsync_dir(Path(root))


def episode_parts(ds: Dataset, indices: Iterable[int]) -> dict[int, str]:
    """The part of each episode (`part_of`), its file opened only when the partition does not list it."""
    assigned = read_partition(ds.root)
    out: dict[int, str] = {}
    for index in indices:
        if index in assigned:
            out[index] = assigned[index]
            continue
        with Episode(ds.episode_path(index)) as ep:
            out[index] = part_of(assigned, index, ep)
    return out


def part_of(assigned: Mapping[int, str], index: int, episode: Episode) -> str:
    """Episode `index`'s part: what the partition (`assigned`) says; an episode it does not list is in the part
    named by its split (the `split` attr of its open file: train, or eval for a held-out configuration)."""
    return assigned[index] if index in assigned else episode.split  # noqa: SIM401  (read the file only when needed)
