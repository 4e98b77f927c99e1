"""`x2 export usd`: each episode's world and its recorded motion as one USD stage, for a renderer of the user's
own (Isaac Sim, Omniverse, Blender, usdview). The layout and what each prim holds: docs/usd.md.

```
<name>-usd/
  x2_usd.json                            provenance (x2.export.provenance) and the exported episodes
  episode_000003/
    episode_000003.usdc                  the stage: MuJoCo's exporter's geoms, materials and lights, and x2's
                                         bodies and cameras (x2/sim/mujoco/usd.py); customLayerData x2.metadata
    episode_000003.json                  the same metadata, with the cameras' K and distortion
    assets/texture_<i>.png               the world's textures, when it has any
```

Every episode's world is rebuilt from its file (x2.recorded.world.open_world) and each of its frames drawn from its
recorded state; nothing is simulated again. A real robot's recording has no world: an export that selects one is
refused before anything is written. The whole tree is built beside the target, each stage read back with usd-core,
and only then renamed into place (x2.files.staging).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from x2 import format as fmt
from x2.base.errors import DatasetError, ExportError
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.export.provenance import Json
from x2.export.request import ExportRequest, ProgressCallback, ProgressTracker, ignore_progress
from x2.export.sources import ExportSources, SourceEpisode, run_export
from x2.files.staging import staged
from x2.recorded.frames import DEFAULT_SIZE, stored_cameras
from x2.recorded.world import SIM_BOUND, open_world
from x2.sim.camera import ImageSize
from x2.sim.mujoco.usd import FILE_FORMATS as FILE_FORMATS  # (re-exported: the command's --format choices)
from x2.sim.mujoco.usd import Aperture, Lens, StageWritten, lenses, read_back, write_stage

PROVENANCE_FILE = "x2_usd.json"
METADATA_FORMAT = "x2 usd episode 1"


@dataclass(frozen=True)
class UsdOptions:
    render_size: ImageSize = DEFAULT_SIZE  # the picture size of a camera the episode stores no stream of
    file_format: str = "usdc"  # usdc (binary), usda (text) or usd (binary, USD's default name)


@dataclass(frozen=True)
class UsdEpisode:
    index: int
    file: str  # the stage, relative to the export
    frames: int
    geoms: int
    bodies: int
    cameras: tuple[str, ...]
    textures: int


@dataclass(frozen=True)
class UsdSummary:
    path: Path
    episodes: tuple[UsdEpisode, ...]
    frames: int
    bytes: int


def episode_file(arg: str) -> tuple[Path, int] | None:
    """(dataset folder, index) of an argument naming an episode file (`<dataset>/episodes/episode_000003.h5`);
    None for anything else (a dataset). The file need not exist: an index the dataset lacks is refused by name."""
    path = Path(arg)
    if path.suffix != fmt.EPISODE_SUFFIX:
        return None
    index = fmt.parse_episode_filename(path.name)
    if index is None or path.parent.name != fmt.EPISODES_DIR:
        raise DatasetError(f"{arg}: episode: found a name that is not an episode file; allowed: "
                           f"<dataset>/{fmt.EPISODES_DIR}/{fmt.episode_filename(3)} or a dataset")
    return path.parent.parent, index


def export_usd(request: ExportRequest, options: UsdOptions = UsdOptions(),
               progress: ProgressCallback = ignore_progress) -> UsdSummary:
    """Write every requested episode as a USD stage under one folder (see the module docstring)."""
    if options.file_format not in FILE_FORMATS:
        raise ExportError(f"--format: found {options.file_format!r}; allowed: {list(FILE_FORMATS)}")
    real = [r for r in request.records if r.source == fmt.REAL_SOURCE]
    if real:
        raise DatasetError(f"{request.dataset.root}: episode {real[0].index}: found source 'real' (a real recording "
                           f"without a world); allowed: episodes recorded in x2's simulator (x2 export usd needs "
                           f"the world; leave real ones out with --source)")
    return run_export(request, "usd", lambda sources: _export(sources, options, progress))


def _export(sources: ExportSources, options: UsdOptions, progress: ProgressCallback) -> UsdSummary:
    target = sources.target
    tracker = ProgressTracker(progress, len(sources.records), sources.frames)
    written: list[UsdEpisode] = []
    with staged(target, sources.request.overwrite) as tmp:
        tmp.mkdir()
        tracker.enter("writing")
        for source in sources.written():
            written.append(_episode(sources, source, tmp, options, tracker))
            tracker.episode_done()
        meta = sources.provenance(format=f"USD ({options.file_format}), MuJoCo's exporter (mujoco.usd)",
                                  stages=[e.file for e in written])
        (tmp / PROVENANCE_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    return UsdSummary(target, tuple(written), sum(e.frames for e in written), size)


def _episode(sources: ExportSources, source: SourceEpisode, tmp: Path, options: UsdOptions,
             tracker: ProgressTracker) -> UsdEpisode:
    ep, record = source.episode, source.record
    ep.refuse_real("x2 export usd")
    name = Path(record.file).stem
    states = np.asarray(ep.numeric(fmt.STATES, 2, 1, bound=SIM_BOUND), np.float64)
    fps = ep.fps or float(sources.dataset.manifest.fps)
    with open_world(ep) as world:
        model = world.backend.model
        cameras = sources.request.cameras or world.backend.cameras.names
        stored = stored_cameras(ep)
        lens = lenses(model, cameras, {c: stored.get(c, options.render_size) for c in cameras})
        meta = metadata(ep, record, sources.part(source), fps, lens)
        done = 0

        def advance(frames: int) -> None:
            nonlocal done
            tracker.advance(frames - done)
            done = frames

        stage = write_stage(model, states, fps, tmp / name, name, lens, meta, options.file_format, advance)
        read_back(stage, model, states)
    (tmp / name / f"{name}.json").write_text(json.dumps(meta | _prims(stage), indent=1, sort_keys=True) + "\n")
    return UsdEpisode(record.index, stage.file.relative_to(tmp).as_posix(), stage.frames, stage.geoms,
                      len(stage.bodies), tuple(stage.cameras), stage.textures)


def metadata(ep: Episode, record: EpisodeRecord, part: str, fps: float, cameras: dict[str, Lens]) -> dict[str, Json]:
    """What x2 knows of the episode that the stage's geometry does not say (docs/usd.md)."""
    stamps = ep.numeric(fmt.TIMESTAMPS, 1, 1)
    failure = ep.failure
    return {
        "format": METADATA_FORMAT, "episode": record.index, "source_file": record.file, "digest": record.digest,
        "source": record.source, "seed": record.seed, "master_seed": record.master_seed, "slot": record.slot,
        "task": ep.task, "robot": ep.text(fmt.ROBOT_ATTR), "calibration": ep.json_attr(fmt.CALIBRATION_ATTR),
        "instruction": ep.instruction, "success": record.success, "outcome": ep.outcome, "split": ep.split,
        "part": part, "fps": fps, "frames": int(len(stamps)),
        "time": {"time_codes": "time code i is frame i; timeCodesPerSecond is fps",
                 "first_timestamp": float(stamps[0]), "last_timestamp": float(stamps[-1])},
        "labels": {"subtasks": list(ep.subtask_names),
                   "segments": [[s.node, s.start, s.end] for s in ep.segments],
                   "events": [[node, frame] for node, frame in ep.events],
                   "failure": None if failure is None else list(failure)},
        "cameras": {c: _camera(lens) for c, lens in cameras.items()},
    }


def _camera(lens: Lens) -> dict[str, Json]:
    ap = Aperture.of(lens)
    out: dict[str, Json] = {
        "height": lens.size.height, "width": lens.size.width, "fovy_deg": round(lens.fovy_deg, 9),
        "K": [[round(float(v), 9) + 0.0 for v in row] for row in lens.k], "pixel_origin": "centre",
        "body": lens.body, "focal_length": ap.focal_length, "horizontal_aperture": ap.horizontal,
        "vertical_aperture": ap.vertical}
    if lens.distortion is not None:
        out["distortion"] = [round(float(v), 9) + 0.0 for v in lens.distortion]
    return out


def _prims(stage: StageWritten) -> dict[str, Json]:
    return {"stage": stage.file.name, "prims": {"bodies": {b.path: b.name for b in stage.bodies},
                                                "cameras": dict(stage.cameras)}}


def refuse_unknown(ds: Dataset, indices: Sequence[int]) -> None:
    """An episode the dataset's index does not list, named in one line."""
    have = {r.index for r in ds.episodes()}
    unknown = [i for i in indices if i not in have]
    if unknown:
        raise DatasetError(f"{ds.root / fmt.EPISODES_DIR / fmt.episode_filename(unknown[0])}: episode: found no "
                           f"episode {unknown[0]} in the dataset's index; allowed: one of {sorted(have)[:20]}")
