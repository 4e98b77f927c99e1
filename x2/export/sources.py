"""The prologue every exporter shares: the selected episodes read one at a time in export order, each
checked against its index digest by the very read that feeds the export (x2.datasets.verified); the target
checked; the cameras, their sizes, the per-arm label columns and the column names fixed before the first row
is written; and the provenance written beside the export.

What must be known before the first row is written comes from the index lines (which episodes, their frame
counts), the manifest (column names, fps, the DAG) and the first exported episode, read first: its `Glance`
(the camera streams it stores, at which sizes, and the arms of its per-arm labels) decides the `Choices` as if
every episode were like it. Every later episode is held to that when its turn comes: the choices made from the
first and it together must be the same. In a dataset whose episodes agree (x2 render rendered them alike) each
file is therefore opened once, in export order, and closed before the next. A later episode that would change
a choice (it lacks a camera the first stores, stores it at another size, or has per-arm labels where the first
had none) raises `Unsettled`; `run_export` then lets the partial build go (x2.files.staging removes it) and
starts again after a first look at every file's headers (no data read, each file closed again): each file is
then opened twice more, once for the look and once for its read. Damage is refused (DigestMismatch) before
anything of that episode is written, and the staged build of an export that stops is removed.

Joint and action names come from the manifest, the dataset-level contract; an episode whose own
per-column names say otherwise is refused with one line.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import DatasetError, ExportError
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.datasets.partition import part_of, read_partition
from x2.datasets.verified import read_verified
from x2.export.provenance import Json, Provenance, provenance
from x2.export.request import ExportRequest
from x2.files.staging import check_target
from x2.recorded.camera_lenses import CameraLens, camera_lenses
from x2.recorded.ee_actions import MEANING as EE_ACTION_MEANING
from x2.recorded.frames import default_cameras, stored_cameras
from x2.sim.camera import ImageSize


@dataclass(frozen=True)
class Glance:
    """What an episode file's headers say that shapes an export: the camera streams it stores (with their
    sizes) and the arms of its per-arm labels (none in an episode without them)."""

    path: Path
    stored: dict[str, ImageSize]
    arms: tuple[str, ...]

    @classmethod
    def of(cls, ep: Episode) -> Glance:
        return cls(ep.path, stored_cameras(ep), tuple(ep.arm_names))


@dataclass(frozen=True)
class Sizing:
    """How zarr and HDF5 size each camera's stream (LeRobot sizes its videos itself: x2.export.lerobot_plan)."""

    render_size: ImageSize  # for a camera some exported episode does not store (drawn at this size)
    image_size: ImageSize | None = None  # every stream resized to this


@dataclass(frozen=True)
class Choices:
    """What the episodes' glances decide: the cameras and why, the arms with per-arm label columns, and (with
    a `Sizing`) each camera's exported size."""

    cameras: tuple[str, ...]
    cameras_reason: str  # "--cameras", "stored in the episodes", "x2 render's defaults" or "state only"
    arms: tuple[str, ...]
    sizes: dict[str, ImageSize] = field(default_factory=dict)


class Unsettled(ExportError):
    """A later episode would change what the first one decided (`run_export` starts again after a look)."""


class SourceEpisode:
    """One selected episode: its index line and its open file (read and checked), until released."""

    def __init__(self, record: EpisodeRecord, episode: Episode) -> None:
        self.record = record
        self._episode: Episode | None = episode
        try:
            self.glance = Glance.of(episode)
        except BaseException:  # (a file whose headers do not read is closed here: nobody else holds it yet)
            episode.close()
            raise

    @property
    def episode(self) -> Episode:
        if self._episode is None:
            raise ExportError(f"{self.record.file}: episode: found it released; allowed: reading it before "
                              "the exporter is done with it")
        return self._episode

    def release(self) -> None:
        """Close the file and let go of its bytes and the arrays read from it (an export holds one at a time)."""
        if self._episode is not None:
            self._episode.close()
            self._episode = None


class ExportSources:
    """Everything the prologue decided, and the selected episodes to be read in export order (`written`)."""

    def __init__(self, request: ExportRequest, target: Path, choices: Choices, first: SourceEpisode,
                 sizing: Sizing | None, looked: tuple[Glance, ...] | None) -> None:
        self.request, self.target, self.choices = request, target, choices
        self.first = first.glance  # the first exported episode's, which made the choices (with `looked`)
        self._first: SourceEpisode | None = first
        self._sizing, self._looked = sizing, looked
        self._lenses: dict[str, Json] | None = None

    @property
    def dataset(self) -> Dataset:
        return self.request.dataset

    @property
    def first_episode(self) -> Episode:
        """The first exported episode's open file, for a format's own choices before `written` hands it over."""
        if self._first is None:
            raise ExportError(f"{self.first.path}: episode: found it handed over; allowed: a look before `written`")
        return self._first.episode

    @property
    def records(self) -> tuple[EpisodeRecord, ...]:
        return self.request.records

    @property
    def frames(self) -> int:
        """Every selected episode's frames, as its index line counts them."""
        return sum(r.frames for r in self.records)

    @property
    def cameras(self) -> tuple[str, ...]:
        return self.choices.cameras

    @property
    def cameras_reason(self) -> str:
        return self.choices.cameras_reason

    @property
    def arms(self) -> tuple[str, ...]:
        """The arms an export carries per-arm labels for (`labelled_arms`)."""
        return self.choices.arms

    @property
    def image_sizes(self) -> dict[str, ImageSize]:
        """Each camera's exported size (`Sizing`; {} when the prologue was given none)."""
        return self.choices.sizes

    def column_names(self) -> dict[str, tuple[str, ...]]:
        """Episode column path -> its names, from the manifest."""
        manifest = self.dataset.manifest
        return {path: tuple(getattr(manifest, name)) for path, name in fmt.NAMED_STREAMS.items()}

    @functools.cached_property
    def _assigned(self) -> dict[int, str]:
        return read_partition(self.dataset.root)

    def part(self, source: SourceEpisode) -> str:
        """The episode's part of the dataset's partition (`part_of`: the partition's entry, else its split)."""
        return part_of(self._assigned, source.record.index, source.episode)

    def provenance(self, **extra: Json) -> Provenance:
        if self.request.action != "joint":  # (a joint export's provenance stays as it was)
            extra = {**extra, "action": f"{self.request.action}: {EE_ACTION_MEANING}"}
        return provenance(self.dataset, self.records, self.request.selection, **extra)

    def camera_lenses(self, cameras: Sequence[str], sizes: Mapping[str, ImageSize],
                      taken_at: Callable[[Episode], ImageSize | None] = lambda ep: None) -> dict[str, Json]:
        """The exported cameras' intrinsics at their exported sizes, distortion and first-frame pose, from the first
        exported episode (x2/recorded/camera_lenses.py), its frames taken at `taken_at(episode)` (the size the
        exporter reads or draws them at): asked once, before `written` hands that episode over."""
        if self._lenses is None:
            first = self.first_episode
            self._lenses = {c: _lens_json(lens) for c, lens in
                            camera_lenses(first, cameras, sizes, taken_at(first)).items()}
        return self._lenses

    def written(self) -> Iterator[SourceEpisode]:
        """The episodes in export order, each read (and checked) when its turn comes and closed once the
        exporter has taken what it needs from it. Raises `Unsettled` at an episode that would change the
        choices made from the first one."""
        for i, record in enumerate(self.records):
            if i == 0:
                source, self._first = self._first, None
                if source is None:
                    raise ExportError(f"{record.file}: episodes: found them read once already; allowed: one pass")
            else:
                source = SourceEpisode(record, read_verified(self.dataset, record))
            try:
                if i:
                    self._admit(i, source)
                yield source
            finally:
                source.release()

    def _admit(self, i: int, source: SourceEpisode) -> None:
        """Hold a later episode to the choices (see the module doc), and to the manifest's names."""
        if self._looked is not None:
            if source.glance != self._looked[i]:
                raise ExportError(f"{source.glance.path}: file: found camera streams or per-arm labels other than "
                                  "a moment before; allowed: a dataset nobody changes while it is exported")
        elif decide(self.request, (self.first, source.glance), self._sizing) != self.choices:
            raise Unsettled(f"{source.glance.path}: camera streams or per-arm labels: found other ones than in "
                            f"{self.first.path.name}; allowed: the same (x2 looks at every file and starts again)")
        check_names(source.episode, self.dataset)


@contextlib.contextmanager
def open_sources(request: ExportRequest, kind: str, sizing: Sizing | None = None,
                 look_first: bool = False) -> Iterator[ExportSources]:
    """The prologue (see the module doc); `kind` names the format's default target. With `look_first`, the
    choices come from a first look at every file instead of from the first alone."""
    ds = request.dataset
    if not request.records:
        raise ExportError(f"{ds.root}: episodes: found none selected; allowed: at least one")
    target = request.target_path(kind)
    check_target(target, request.overwrite)
    looked = tuple(glance_at(ds, record) for record in request.records) if look_first else None
    first = SourceEpisode(request.records[0], read_verified(ds, request.records[0]))
    try:
        if looked is not None and first.glance != looked[0]:
            raise ExportError(f"{first.glance.path}: file: found camera streams or per-arm labels other than a "
                              "moment before; allowed: a dataset nobody changes while it is exported")
        check_names(first.episode, ds)
        choices = decide(request, looked if looked is not None else (first.glance,), sizing)
        yield ExportSources(request, target, choices, first, sizing, looked)
    finally:
        first.release()  # (when `written` never took it)


def run_export[T](request: ExportRequest, kind: str, body: Callable[[ExportSources], T],
                  sizing: Sizing | None = None) -> T:
    """`body(sources)` in the prologue; once more after a first look at every file when a later episode
    unsettles what the first one decided (its partial build is gone by then)."""
    try:
        with open_sources(request, kind, sizing) as sources:
            return body(sources)
    except Unsettled:
        pass
    with open_sources(request, kind, sizing, look_first=True) as sources:
        return body(sources)


def glance_at(ds: Dataset, record: EpisodeRecord) -> Glance:
    """A first look at one file's headers (opened and closed again; its bytes are checked when it is read)."""
    try:
        with ds.load(record.index) as ep:
            return Glance.of(ep)
    except DatasetError:
        ds.verify([record])  # damage is named as damage (DigestMismatch), not as what it broke
        raise


def decide(request: ExportRequest, glances: Sequence[Glance], sizing: Sizing | None) -> Choices:
    """The choices `glances` make (those of every exported episode, or of the first with any later one)."""
    cameras, why = choose_cameras([g.stored for g in glances], request)
    sizes = {} if sizing is None else image_sizes(cameras, [g.stored for g in glances], sizing)
    return Choices(cameras, why, labelled_arms(glances), sizes)


def choose_cameras(stored: Sequence[Mapping[str, ImageSize]],
                   request: ExportRequest) -> tuple[tuple[str, ...], str]:
    """What was asked, else what every exported episode stores (x2 render made it: nothing is drawn twice),
    else the render pass's defaults; none for a state-only export."""
    if request.state_only:
        return (), "state only"
    if request.cameras:
        return tuple(request.cameras), "--cameras"
    if request.cameras is not None:  # asked for none
        return (), "--cameras"
    return default_cameras(stored)


def image_sizes(cameras: Sequence[str], stored: Sequence[Mapping[str, ImageSize]],
                sizing: Sizing) -> dict[str, ImageSize]:
    """The size of each camera's exported stream: the image size when given; else the stored size when every
    exported episode stores that camera at one size; else the render size."""
    if sizing.image_size is not None:
        return dict.fromkeys(cameras, sizing.image_size)
    out: dict[str, ImageSize] = {}
    for cam in cameras:
        seen = {s.get(cam) for s in stored}
        one = next(iter(seen)) if len(seen) == 1 else None
        out[cam] = one if one is not None else sizing.render_size
    return out


def labelled_arms(glances: Iterable[Glance]) -> tuple[str, ...]:
    """The arms an export carries per-arm labels for: those of the episodes that have them for two or more
    arms (every such episode must name the same arms), or () when none has (x2.export.episode_arrays)."""
    found: tuple[str, ...] = ()
    first: Path | None = None
    for glance in glances:
        if len(glance.arms) < 2:
            continue
        if first is None:
            found, first = glance.arms, glance.path
        elif glance.arms != found:
            raise ExportError(f"{glance.path}: {fmt.ARM_SUBTASK_INDEX}: found arms {list(glance.arms)}; allowed: "
                              f"{list(found)}, as in {first.name} (export episodes of one robot: --episodes)")
    return found


def check_names(ep: Episode, ds: Dataset) -> None:
    """Refuse an episode whose columns carry other names than the manifest gives them."""
    for path, name in fmt.NAMED_STREAMS.items():
        if path not in ep:
            continue
        own = [str(n) for n in ep.dataset_attrs(path).get(fmt.NAMES_ATTR, [])]
        wanted = names_for(getattr(ds.manifest, name), ep.dataset(path).shape)
        if own and own != list(wanted):
            raise ExportError(f"{ep.path}: {path}: names: found {own}; allowed: {list(wanted)} ({fmt.MANIFEST_FILE} "
                              f"{name}: the dataset's episodes must agree)")


def names_for(names: Sequence[str], shape: tuple[int, ...]) -> tuple[str, ...]:
    """The manifest's names for a column of `shape`, when there is one per column (else none)."""
    return tuple(names) if names and tuple(shape[1:]) == (len(names),) else ()


def names_by_column(ep: Episode, names: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Per column of `ep` the manifest names it carries (`ExportSources.column_names`)."""
    return {path: names_for(n, ep.dataset(path).shape) for path, n in names.items() if path in ep}


def _lens_json(lens: CameraLens) -> dict[str, Json]:
    out: dict[str, Json] = {"height": lens["height"], "width": lens["width"], "fovy_deg": lens["fovy_deg"],
                            "K": [list(row) for row in lens["K"]], "pixel_origin": lens["pixel_origin"]}
    if "distortion" in lens:
        out["distortion"] = list(lens["distortion"])
    if "pose" in lens:
        out["body"], out["pose"], out["poses"] = lens["body"], [list(row) for row in lens["pose"]], lens["poses"]
    return out
