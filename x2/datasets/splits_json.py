"""Which split (train, val, ...) each episode belongs to.

An episode file carries the split it was recorded for (its `split` attr: the scene variant's tag).
`x2 datasets split` (stratified_split.py) assigns splits afterwards without touching a finished file:
it writes `splits.json` (`{"<episode index>": "<split>"}`) atomically, and what it lists overrides the
file attr.
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


def read_splits(root: Path) -> dict[int, str]:
    """The assignments in `splits.json` ({} when there is none)."""
    path = Path(root) / fmt.SPLITS_FILE
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: splits: found unreadable JSON ({exc}); allowed: "
                           '{"<episode index>": "<split>"}') from None
    if not isinstance(data, dict) or not all(isinstance(v, str) and k.isdigit() for k, v in data.items()):
        raise DatasetError(f"{path}: splits: found {str(data)[:60]}; allowed: "
                           '{"<episode index>": "<split name>"}')
    return {int(k): v for k, v in data.items()}


def write_splits(root: Path, splits: Mapping[int, str]) -> None:
    text = json.dumps({str(k): str(v) for k, v in sorted(splits.items())}, indent=1, sort_keys=False)
    write_text(Path(root) / fmt.SPLITS_FILE, text + "\n")


def episode_splits(ds: Dataset, indices: Iterable[int]) -> dict[int, str]:
    """The effective split of each episode: `splits.json` if it lists it, else the file's own attr."""
    assigned = read_splits(ds.root)
    out: dict[int, str] = {}
    for index in indices:
        if index in assigned:
            out[index] = assigned[index]
            continue
        with Episode(ds.episode_path(index)) as ep:
            out[index] = effective_split(assigned, index, ep)
    return out


def effective_split(assigned: Mapping[int, str], index: int, episode: Episode) -> str:
    """Episode `index`'s split: what `splits.json` (`assigned`) says, else what its open file says."""
    return assigned[index] if index in assigned else episode.split  # noqa: SIM401  (read the file only when needed)
