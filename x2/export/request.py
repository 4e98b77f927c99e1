"""What every exporter is asked and tells back: the request (episodes, target, cameras), where an export
goes by default, and the progress it reports while it works.

Every exporter has one signature, `export_<format>(request, options, progress) -> summary`: the
common fields live in `ExportRequest`, a format's own choices in its options dataclass, and
`progress` hears `ExportProgress` as episodes and frames are done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import ExportError
from x2.datasets import Dataset, EpisodeRecord
from x2.envspec.ee_action import ACTION_KINDS

EXPORTS_DIR = Path("exports")
# what an export's `action` is (ACTION_KINDS): the joint targets as recorded, or them as end-effector actions
# (x2/envspec/ee_action.py; x2/recorded/ee_actions.py says how they are computed)
# format -> the default target's name after the dataset's (./exports/<dataset><suffix>)
TARGET_SUFFIXES = {"lerobot": "-lerobot", "zarr": ".zarr", "zarr zip": ".zarr.zip", "hdf5": ".hdf5", "usd": "-usd"}


def parse_action_kind(value: str) -> str:
    """`--action`'s value, or one line naming the allowed ones."""
    if value not in ACTION_KINDS:
        raise ExportError(f"--action: found {value!r}; allowed: {', '.join(ACTION_KINDS)}")
    return value


def default_target(ds: Dataset, kind: str) -> Path:
    """./exports/<dataset>-lerobot, ./exports/<dataset>.zarr(.zip), ./exports/<dataset>.hdf5 or
    ./exports/<dataset>-usd."""
    return EXPORTS_DIR / f"{ds.name}{TARGET_SUFFIXES[kind]}"


@dataclass(frozen=True)
class ExportRequest:
    """The episodes to export and where to: what every exporter is asked."""

    dataset: Dataset
    records: tuple[EpisodeRecord, ...]
    target: Path | None = None  # None: default_target of the format
    selection: str = "all episodes"  # how the records were chosen, for the provenance
    cameras: tuple[str, ...] | None = None  # None: the stored ones, else the render defaults
    state_only: bool = False
    overwrite: bool = False
    action: str = "joint"  # one of x2/envspec/ee_action.py's ACTION_KINDS

    def target_path(self, kind: str) -> Path:
        return (self.target if self.target is not None else default_target(self.dataset, kind)).absolute()


@dataclass(frozen=True)
class ExportProgress:
    """Where an export is: its phase, and how many of its episodes and frames are written."""

    phase: str
    episodes_done: int
    episodes: int
    frames_done: int
    frames: int
    detail: str = ""  # with the first report: what the export will contain (cameras, sizes, why)


ProgressCallback = Callable[[ExportProgress], None]


def ignore_progress(_: ExportProgress) -> None:
    return None


class ProgressTracker:
    """Counts what an exporter has done and reports each step to its callback."""

    def __init__(self, callback: ProgressCallback, episodes: int, frames: int) -> None:
        self.callback, self.episodes, self.frames = callback, episodes, frames
        self.phase, self.episodes_done, self.frames_done = "", 0, 0

    def _report(self, detail: str = "") -> None:
        self.callback(ExportProgress(self.phase, self.episodes_done, self.episodes, self.frames_done,
                                     self.frames, detail))

    def enter(self, phase: str, detail: str = "") -> None:
        self.phase = phase
        self._report(detail)

    def advance(self, frames: int) -> None:
        self.frames_done += frames
        self._report()

    def episode_done(self) -> None:
        self.episodes_done += 1
        self._report()
