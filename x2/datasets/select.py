"""Choosing episodes of a dataset: the filters every exporter and `x2 datasets filter` share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from x2.base.errors import DatasetError
from x2.datasets.index import EpisodeRecord, format_indices
from x2.datasets.partition import episode_parts
from x2.datasets.store import Dataset
from x2.format import SOURCES


def parse_episode_list(text: str, where: str = "--episodes") -> tuple[int, ...]:
    """``"0-4,7,9"`` -> (0, 1, 2, 3, 4, 7, 9), sorted and unique."""
    out: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi or lo < 0:
                    raise ValueError
                out.update(range(lo, hi + 1))
            else:
                value = int(part)
                if value < 0:
                    raise ValueError
                out.add(value)
        except ValueError:
            raise DatasetError(f"{where}: found {text!r}; allowed: episode indices and ranges, "
                               "e.g. 0-9,12") from None
    return tuple(sorted(out))


@dataclass(frozen=True)
class Selection:
    """Episodes to take: all of them unless a filter says otherwise (filters combine with AND)."""

    success_only: bool = False
    sources: tuple[str, ...] = ()
    part: str | None = None  # a part of the dataset's partition (x2.datasets.partition.part_of)
    episodes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        bad = [s for s in self.sources if s not in SOURCES]
        if bad:
            raise DatasetError(f"--source: found {bad}; allowed: {list(SOURCES)}")

    def apply(self, ds: Dataset) -> list[EpisodeRecord]:
        """The committed episodes that pass, in index order; an unknown index in `episodes` is an error."""
        records = sorted(ds.episodes(), key=lambda r: r.index)
        if self.episodes is not None:
            have = {r.index for r in records}
            unknown = [i for i in self.episodes if i not in have]
            if unknown:
                raise DatasetError(f"{ds.root}: --episodes: found {format_indices(unknown)}; "
                                   f"allowed: {format_indices(sorted(have))}")
            wanted = set(self.episodes)
            records = [r for r in records if r.index in wanted]
        if self.success_only:
            records = [r for r in records if r.success]
        if self.sources:
            records = [r for r in records if r.source in self.sources]
        if self.part is not None:
            parts = episode_parts(ds, [r.index for r in records])
            records = [r for r in records if parts[r.index] == self.part]
        return records

    def describe(self) -> str:
        parts: list[str] = []
        if self.episodes is not None:
            parts.append(f"episodes {format_indices(list(self.episodes))}")
        if self.success_only:
            parts.append("successful")
        if self.sources:
            parts.append("source " + "/".join(self.sources))
        if self.part is not None:
            # Worded as before the partition had its name: an export's provenance and a filtered dataset's
            # manifest record this text, and those bytes stay the same.
            parts.append(f"split {self.part}")
        return ", ".join(parts) or "all episodes"


def require_some(records: Sequence[EpisodeRecord], ds: Dataset, selection: Selection) -> None:
    if not records:
        raise DatasetError(f"{ds.root}: episodes: found none matching ({selection.describe()}); "
                           f"allowed: a selection with at least one committed episode")
