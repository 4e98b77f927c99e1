"""The prologue every exporter shares: the selected episodes, each checked against its index digest and
opened once, the target checked, the cameras and image sizes chosen, the column names fixed, and the
provenance written beside the export.

`open_sources(request, kind)` does all of it before anything is written, so a refusal (an existing
target, a damaged file, episodes that disagree with the manifest) leaves no export behind. Each file is
hashed (x2.files.digest) and opened right after, and stays open until the exporter has written it:
the exporter reads its arrays, attrs and camera frames from that one open `Episode`.

Joint and action names come from the manifest, the dataset-level contract; an episode whose own
per-column names say otherwise is refused with one line.
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from x2 import format as fmt
from x2.base.errors import ExportError
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.datasets.splits_json import effective_split, read_splits
from x2.export.provenance import provenance
from x2.export.request import ExportRequest
from x2.files.staging import check_target
from x2.recorded.frames import default_cameras, stored_cameras
from x2.sim.camera import ImageSize

_SPARE_FILES = 64  # descriptors left for everything else while every source episode is open


class SourceEpisode:
    """One selected episode: its index line and its open file, until the exporter releases it."""

    def __init__(self, record: EpisodeRecord, episode: Episode) -> None:
        self.record = record
        self._episode: Episode | None = episode
        self.stored: dict[str, ImageSize] = {}  # the camera streams it stores (set by open_sources)

    @property
    def episode(self) -> Episode:
        if self._episode is None:
            raise ExportError(f"{self.record.file}: episode: found it released; allowed: reading it before "
                              "the exporter is done with it")
        return self._episode

    def release(self) -> None:
        """Close the file and let go of the arrays read from it (an export holds one episode's at a time)."""
        if self._episode is not None:
            self._episode.close()
            self._episode = None


@dataclass(frozen=True)
class ExportSources:
    """Everything the prologue decided, with every source episode open."""

    request: ExportRequest
    target: Path
    episodes: tuple[SourceEpisode, ...]
    cameras: tuple[str, ...]
    cameras_reason: str  # "--cameras", "stored in the episodes" or "x2 render's defaults"

    @property
    def dataset(self) -> Dataset:
        return self.request.dataset

    @property
    def records(self) -> tuple[EpisodeRecord, ...]:
        return self.request.records

    @property
    def frames(self) -> int:
        return sum(r.frames for r in self.records)

    def column_names(self) -> dict[str, tuple[str, ...]]:
        """Episode column path -> its names, from the manifest."""
        manifest = self.dataset.manifest
        return {path: tuple(getattr(manifest, field)) for path, field in fmt.NAMED_STREAMS.items()}

    def image_sizes(self, render_size: ImageSize, image_size: ImageSize | None) -> dict[str, ImageSize]:
        """The size of each camera's exported stream: `image_size` when given; else the stored size when
        every exported episode stores that camera at one size; else the render size."""
        if image_size is not None:
            return dict.fromkeys(self.cameras, image_size)
        seen: dict[str, set[ImageSize | None]] = {c: set() for c in self.cameras}
        for source in self.episodes:
            for cam in self.cameras:
                seen[cam].add(source.stored.get(cam))
        return {cam: next(iter(s)) if len(s) == 1 and None not in s else render_size  # type: ignore[misc]
                for cam, s in seen.items()}

    def splits(self) -> dict[int, str]:
        """Each episode's effective split (`splits.json`, else its own attr), read from the open files."""
        assigned = read_splits(self.dataset.root)
        return {s.record.index: effective_split(assigned, s.record.index, s.episode) for s in self.episodes}

    def provenance(self, **extra: Any) -> dict[str, Any]:
        return provenance(self.dataset, self.records, self.request.selection, **extra)

    def written(self) -> Iterator[SourceEpisode]:
        """The episodes in export order, each closed once the exporter has taken what it needs from it."""
        for source in self.episodes:
            yield source
            source.release()


@contextlib.contextmanager
def open_sources(request: ExportRequest, kind: str) -> Iterator[ExportSources]:
    """The prologue (see the module doc); `kind` names the format's default target."""
    ds = request.dataset
    if not request.records:
        raise ExportError(f"{ds.root}: episodes: found none selected; allowed: at least one")
    target = request.target_path(kind)
    check_target(target, request.overwrite)
    _make_room(len(request.records))
    opened: list[SourceEpisode] = []
    try:
        for record in request.records:
            ds.verify([record])  # the digest, right before its one open: damage is refused before any write
            source = SourceEpisode(record, ds.load(record.index))
            opened.append(source)
            source.stored = stored_cameras(source.episode)
            check_names(source.episode, ds)
        cameras, why = choose_cameras(opened, request)
        yield ExportSources(request, target, tuple(opened), cameras, why)
    finally:
        for source in opened:
            source.release()


def choose_cameras(opened: Sequence[SourceEpisode], request: ExportRequest) -> tuple[tuple[str, ...], str]:
    """What was asked, else what every exported episode stores (x2 render made it: nothing is drawn twice),
    else the render pass's defaults; none for a state-only export."""
    if request.state_only:
        return (), "state only"
    if request.cameras:
        return tuple(request.cameras), "--cameras"
    if request.cameras is not None:  # asked for none
        return (), "--cameras"
    return default_cameras(source.stored for source in opened)


def check_names(ep: Episode, ds: Dataset) -> None:
    """Refuse an episode whose columns carry other names than the manifest gives them."""
    for path, field in fmt.NAMED_STREAMS.items():
        if path not in ep:
            continue
        own = [str(n) for n in ep.dataset_attrs(path).get(fmt.NAMES_ATTR, [])]
        wanted = names_for(getattr(ds.manifest, field), ep.dataset(path).shape)
        if own and own != list(wanted):
            raise ExportError(f"{ep.path}: {path}: names: found {own}; allowed: {list(wanted)} ({fmt.MANIFEST_FILE} "
                              f"{field}: the dataset's episodes must agree)")


def names_for(names: Sequence[str], shape: tuple[int, ...]) -> tuple[str, ...]:
    """The manifest's names for a column of `shape`, when there is one per column (else none)."""
    return tuple(names) if names and tuple(shape[1:]) == (len(names),) else ()


def names_by_column(ep: Episode, names: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Per column of `ep` the manifest names it carries (`ExportSources.column_names`)."""
    return {path: names_for(n, ep.dataset(path).shape) for path, n in names.items() if path in ep}


def _make_room(files: int) -> None:
    """Raise the soft limit on open files when every source episode kept open would pass it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = files + _SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        limit = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        if limit < wanted:
            raise ExportError(f"episodes: found {files} selected; allowed: at most {hard - _SPARE_FILES} in "
                              "one export (the open-file limit; export them in parts: --episodes)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
