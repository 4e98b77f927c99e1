"""`augment_dataset`: K augmented episodes of every selected episode, into a dataset of their own.

Each new episode is its parent's file with a new world: every dataset is copied as stored (times,
states, actions, observations, labels, DAG record, camera poses, timing), the image streams are left out
(they show the old scenery; `x2 render` or an exporter draws the new ones), and the root gets the
composed `model_xml`, `source` "augment", `parent_episode`, the scenery's name and split, its own seed
and the full sampled configuration (`augmentation` attr). The envelope it was placed against is stored
as `/augmentation/envelope` (N, 7: capsule start, end, radius).

Augmented episodes commit one by one (x2.datasets.store.Dataset.add_file), so a kill loses at most the one in
progress and a rerun skips what exists: the k-th augmented episode of a parent is identified by (parent, k) and
its seed is drawn from (seed, parent seed, k), whatever ran before. `augmentation.json` in the output dataset
lists every augmented episode made or rejected: read from the episode files when a run starts, rewritten
(atomically) after each one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TypedDict

import h5py
import hdf5plugin  # noqa: F401  (the Zstd filter of stored image streams must be known to copy files)
import numpy as np

import x2
from x2 import format as fmt
from x2.augment.augmented import Augmented, ParentEpisode, augmented_seed, make_augmented
from x2.augment.envelope import Envelope, EnvelopeParams
from x2.augment.records import AugmentationConfig, AugmentationReport, MadeConfig, RejectedRecord, RequestRecord
from x2.base.arrays import Floats
from x2.base.errors import DatasetError
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.datasets.select import Selection, require_some
from x2.datasets.untrusted import json_loads
from x2.envspec.scenery import Scenery, builtin_looks, load_scenery
from x2.files.atomic import write_text
from x2.files.hdf5_guard import kept_if_complete
from x2.processes.pool import RayTarget, WorkerLost, in_order, open_pool
from x2.recorded.held_out_check import refuse_eval_episodes
from x2.recorded.world import recorded_env

# One augmented episode per source episode: as many new episodes to render and encode as the source has; ask
# for more.
DEFAULT_PER_EPISODE = 1
# pixels of the source world: an augmented world (restyled, with distractors) looks otherwise; x2 render draws its own
_LEFT_OUT = (fmt.IMAGES, fmt.DEPTH, fmt.SEGMENTATION)


@dataclass(frozen=True)
class AugmentRequest:
    per_episode: int = DEFAULT_PER_EPISODE  # augmented episodes per source episode
    scenery: tuple[str, ...] = ()  # names; default every train scenery of the scene
    objects: int | None = None  # distractors per augmented episode (default: the scenery's range)
    clearance: float = 0.02  # m
    eps: float = 0.005  # m
    seed: int = 0
    allow_eval: bool = False
    mode: str = "uniform"

    def envelope_params(self) -> EnvelopeParams:
        return replace(EnvelopeParams(), clearance=self.clearance, eps=self.eps)

    def as_dict(self) -> RequestRecord:
        # "variants": per_episode's name in augmentation.json, kept on disk (docs/augmentation.md)
        return {"variants": self.per_episode, "scenery": list(self.scenery), "objects": self.objects,
                "clearance": self.clearance, "eps": self.eps, "seed": self.seed, "allow_eval": self.allow_eval,
                "mode": self.mode}


@dataclass(frozen=True)
class Outcome:
    parent: int
    k: int
    scenery: str
    index: int | None  # the new episode; None when rejected or already there
    distractors: int
    min_distance_m: float | None
    problems: tuple[str, ...] = ()
    existed: bool = False


@dataclass
class AugmentSummary:
    source: Path
    out: Path
    scenery: tuple[str, ...]
    outcomes: list[Outcome] = field(default_factory=list)
    skipped_augmented: int = 0  # selected episodes that are augmented ones themselves
    wall_s: float = 0.0
    geometry_s: float = 0.0  # envelope + placement + check, summed

    @property
    def written(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.index is not None]

    @property
    def rejected(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problems]


def _check_request(request: AugmentRequest) -> None:
    if request.per_episode < 1:
        raise DatasetError(f"--per-episode: found {request.per_episode}; allowed: 1 or more")
    if not request.clearance > 0:
        raise DatasetError(f"--clearance: found {request.clearance}; allowed: a positive distance in m")
    if not request.eps > 0:
        raise DatasetError(f"--eps: found {request.eps}; allowed: a positive distance in m")
    if request.objects is not None and request.objects < 0:
        raise DatasetError(f"--objects: found {request.objects}; allowed: 0 or more")


def scene_of(ep: Episode) -> str:
    return recorded_env(ep).scene_name


def choose_scenery(scene: str, request: AugmentRequest) -> list[Scenery]:
    available = load_scenery(scene)
    if request.scenery:  # a scene's own scenery, or x2's built-in looks (the textured lab) when named
        named = {**builtin_looks(), **available}
        unknown = [n for n in request.scenery if n not in named]
        if unknown:
            raise DatasetError(f"--scenery: found {unknown[0]!r}; allowed: "
                               f"{', '.join(available) or 'none'} (scenery of scene {scene!r}), or x2's built-in "
                               f"{', '.join(builtin_looks())}")
        chosen = [named[n] for n in dict.fromkeys(request.scenery)]
    else:
        chosen = [v for v in available.values() if v.split == "train"]
        if not chosen:
            raise DatasetError(f"scene {scene!r}: scenery: found no train scenery; allowed: a scene with "
                               "`scenery:` blocks (or name one with --scenery)")
    held_out = [v.name for v in chosen if v.split != "train"]
    if held_out and not request.allow_eval:
        raise DatasetError(f"--scenery: found {held_out[0]!r} (split eval); allowed: train scenery "
                           f"({', '.join(n for n, v in available.items() if v.split == 'train')}), or --allow-eval "
                           "to make evaluation data on purpose")
    return chosen


def scenery_for(scenery: Sequence[Scenery], parent: int, k: int) -> Scenery:
    """The k-th augmented episode of episode `parent`: the scenery list in turn, starting one further for each
    episode, so every scenery is used evenly whatever K is, and a parent's k-th never changes with K."""
    return scenery[(parent + k) % len(scenery)]


def _copy_episode(parent: Path, path: Path, index: int, *, augmented: Augmented, config: AugmentationConfig,
                  envelope: Envelope) -> None:
    """The parent's file with the new world; see the module docstring."""
    with h5py.File(parent, "r") as src, kept_if_complete(path, "w", libver="latest") as dst:
        def visit(group_src: h5py.Group, group_dst: h5py.Group, prefix: str) -> None:
            for name, obj in group_src.items():
                where = f"{prefix}{name}"
                if where in _LEFT_OUT:
                    continue
                if isinstance(obj, h5py.Group):
                    sub = group_dst.create_group(name)
                    for k, v in obj.attrs.items():
                        sub.attrs[k] = v
                    visit(obj, sub, f"{where}/")
                else:
                    group_src.copy(obj, group_dst, name=name)
        visit(src, dst, "")
        for key, value in src.attrs.items():
            if key not in fmt.SEED_ORIGIN:
                dst.attrs[key] = value
        # the scenery's name goes in `scene_variant`: the format's attribute name, kept on disk (docs/augmentation.md)
        dst.attrs.update(fmt.derived_attrs(
            index=index, parent_episode=int(src.attrs[fmt.INDEX_ATTR]), scene_variant=augmented.scenery.name,
            split="eval" if "eval" in (augmented.scenery.split, str(src.attrs.get(fmt.SPLIT_ATTR))) else "train",
            seed=augmented.seed, model_xml=augmented.model_xml, augmentation=config))
        for name, data in sorted(augmented.textures.items()):  # a look's images the parent's world did not carry
            if fmt.texture_path(name) not in dst:
                dst.create_dataset(fmt.texture_path(name), data=np.frombuffer(data, np.uint8), track_times=False)
        dst.create_group(fmt.AUGMENTATION)
        stored = dst.create_dataset(fmt.ENVELOPE, data=envelope.as_array(), compression="gzip", compression_opts=4)
        stored.attrs["columns"] = json.dumps(["x0", "y0", "z0", "x1", "y1", "z1", "radius"])
        stored.attrs["params"] = json.dumps(envelope.summary(), sort_keys=True)


def _existing(out: Dataset) -> dict[tuple[str, int, int], MadeConfig]:
    """(parent dataset, parent index, k) -> augmentation config of every augmented episode already in `out`."""
    found: dict[tuple[str, int, int], MadeConfig] = {}
    for record in out.episodes():
        with out.load(record.index) as ep:
            config: AugmentationConfig | None = ep.json_attr(fmt.AUGMENTATION_ATTR)  # as _commit wrote it
        if not config:
            continue
        parent = config.get("parent") or {}
        if "dataset" in parent and "episode" in parent and "k" in config:
            key = (str(parent["dataset"]), int(parent["episode"]), int(config["k"]))
            found[key] = {**config, "index": record.index}
    return found


def _write_report(out: Dataset, source: Dataset, request: AugmentRequest, done: dict[tuple[str, int, int], MadeConfig],
                  rejected: dict[tuple[int, int], RejectedRecord]) -> None:
    made = sorted(done.values(), key=lambda c: (c["parent"]["episode"], c["k"]))
    report: AugmentationReport = {
        "x2_version": x2.__version__, "source": source.name, "request": request.as_dict(),
        "episodes": [{"index": c["index"], "parent": c["parent"]["episode"], "k": c["k"], "seed": c["seed"],
                      "scenery": c["scenery"]["name"], "split": c["scenery"]["split"],
                      "distractors": [p["asset"] for p in c["distractors"]["placed"]],
                      "capsules": [c["envelope"]["capsules_before"], c["envelope"]["capsules"]],
                      "min_distance_m": c["check"]["min_distance_m"]} for c in made],
        "rejected": [rejected[key] for key in sorted(rejected)],
    }
    write_text(out.root / fmt.AUGMENTATION_REPORT_FILE, json.dumps(report, indent=1, sort_keys=True) + "\n")


def _read_rejected(out: Path) -> dict[tuple[int, int], RejectedRecord]:
    try:
        data = json_loads((out / fmt.AUGMENTATION_REPORT_FILE).read_text(encoding="utf-8"))
        rejected: list[RejectedRecord] = data.get("rejected", [])  # as _write_report wrote them
        return {(int(r["parent"]), int(r["k"])): r for r in rejected}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


@dataclass(frozen=True)
class AugmentedJob:
    """What a worker needs to make the k-th augmented episode of one recorded episode. It carries the episode's
    world and states rather than its path: on a Ray cluster the worker may be on a machine without the dataset.
    A job for one the output already holds (`made`, its configuration) is only passed through, in its turn."""

    parent: int  # the source episode's index
    k: int
    scenery: Scenery
    seed: int
    made: MadeConfig | None = None
    xml: str = ""
    states: Floats | None = None
    task_assets: tuple[str, ...] = ()
    images: Mapping[str, bytes] = field(default_factory=dict)  # the images the world carries beside its xml
    source: str = ""  # the episode file (errors name it)
    params: EnvelopeParams = EnvelopeParams()
    objects: int | None = None
    mode: str = "uniform"


class _ParentFields(TypedDict):
    """The fields of an AugmentedJob that carry its recorded episode."""

    xml: str
    states: Floats
    source: str
    task_assets: tuple[str, ...]
    images: dict[str, bytes]


@dataclass(frozen=True)
class MadeAugmented:
    augmented: Augmented
    envelope: Envelope
    geometry_s: float  # envelope (when this worker had not built it yet) + placement + compose + check


# A worker's last parent: its augmented episodes come in a row, and the envelope is the dearest part of the
# first. Known by its episode file within one run; augment_dataset forgets it before each run (a forked worker
# starts with it).
_PARENT: tuple[tuple[str, EnvelopeParams], ParentEpisode] | None = None


def make_augmented_unit(job: AugmentedJob) -> MadeAugmented | None:
    """The unit of work a pool runs (None for an augmented episode already made)."""
    global _PARENT
    if job.made is not None:
        return None
    started = time.perf_counter()
    key = (job.source, job.params)
    if _PARENT is None or _PARENT[0] != key:
        assert job.states is not None
        _PARENT = (key, ParentEpisode.of(job.xml, job.states, job.params, job.task_assets, job.source,
                                                  job.images))
    parent = _PARENT[1]
    augmented = make_augmented(parent, job.scenery, job.seed, job.objects, job.mode)
    return MadeAugmented(augmented, parent.envelope, time.perf_counter() - started)


def augment_dataset(source: str | Path, out: str | Path, request: AugmentRequest = AugmentRequest(),
                    selection: Selection = Selection(),
                    progress: Callable[[int, int], None] | None = None,
                    workers: int = 1, ray: RayTarget | None = None) -> AugmentSummary:
    """With `workers` > 1 (or `ray`) the augmented episodes of each source episode are made on a pool
    (x2.processes.pool) and committed in the same order as with one: the output is the same bytes whatever ran it."""
    global _PARENT
    _PARENT = None  # (another run's parent, maybe from a file since rewritten at the same path)
    started = time.perf_counter()
    _check_request(request)
    src = Dataset.open(source)
    out_path = Path(out)
    if out_path.absolute() == src.root.absolute():
        raise DatasetError(f"{out_path}: --out: found the source dataset; allowed: another dataset")
    selected: Sequence[EpisodeRecord] = selection.apply(src)
    require_some(selected, src, selection)
    # Augmenting an augmented episode would stack static layers (and reuse their names); augment the recording again.
    records = [r for r in selected if r.source != "augment"]
    if not records:
        raise DatasetError(f"{src.root}: episodes: found only augmented ones (source augment); allowed: recorded "
                           "episodes (augment their dataset again, with more --per-episode)")
    src.verify(records)
    refuse_eval_episodes(src, records, request.allow_eval)
    with src.load(records[0].index) as first:
        scenery = choose_scenery(scene_of(first), request)
    manifest = src.manifest.to_dict()
    manifest["extra"] = {**manifest.get("extra", {}), "augmented_from": {"dataset": src.name}}
    manifest["created"] = ""
    summary = AugmentSummary(src.root, out_path, tuple(v.name for v in scenery),
                             skipped_augmented=len(selected) - len(records))
    ds = Dataset.create(out_path, manifest)
    ds.lock()
    by_index = {r.index: r for r in records}
    pool = None
    try:
        done, rejected = _existing(ds), _read_rejected(ds.root)
        total = len(records) * request.per_episode

        def jobs() -> Iterator[AugmentedJob]:
            for record in records:
                parent: _ParentFields | None = None  # read once, for the first augmented episode still to make
                for k in range(request.per_episode):
                    scene, seed = scenery_for(scenery, record.index, k), augmented_seed(request.seed, record.seed, k)
                    made = done.get((src.name, record.index, k))
                    if made is not None:
                        yield AugmentedJob(record.index, k, scene, seed, made)
                        continue
                    if parent is None:
                        with src.load(record.index) as ep:
                            # float64 in every episode (format.STATES): asarray hands back the array read, typed
                            parent = {"xml": ep.model_xml, "states": np.asarray(ep[fmt.STATES], np.float64),
                                      "source": str(ep.path), "images": ep.textures,
                                      "task_assets": tuple(str(a) for a in
                                                           (ep.json_attr(fmt.ASSETS_ATTR) or {}).values())}
                    yield AugmentedJob(record.index, k, scene, seed, None, **parent,
                                       params=request.envelope_params(), objects=request.objects, mode=request.mode)

        if ray is not None or workers > 1:
            pool = open_pool(workers if ray is None else (workers if workers > 1 else None), ray=ray)
        for job, future in in_order(pool, make_augmented_unit, jobs()):
            record = by_index[job.parent]
            if job.made is not None:
                c = job.made
                summary.outcomes.append(Outcome(record.index, job.k, c["scenery"]["name"], None,
                                                len(c["distractors"]["placed"]), c["check"]["min_distance_m"],
                                                existed=True))
            else:
                try:
                    made = future.result()
                except WorkerLost as lost:  # (a rerun makes it: only what is in the dataset is skipped)
                    summary.outcomes.append(_reject(rejected, record.index, job.k, job.seed, job.scenery.name,
                                                    [str(lost)]))
                else:
                    assert made is not None
                    summary.geometry_s += made.geometry_s
                    outcome, config = _commit(ds, src, record, job.k, made.augmented, made.envelope, request,
                                              rejected)
                    summary.outcomes.append(outcome)
                    if outcome.index is not None:
                        done[(src.name, record.index, job.k)] = {**config, "index": outcome.index}
                _write_report(ds, src, request, done, rejected)
            if progress is not None:
                progress(len(summary.outcomes), total)
        _write_report(ds, src, request, done, rejected)
    finally:
        if pool is not None:
            pool.shutdown()
        ds.close()
    summary.wall_s = time.perf_counter() - started
    return summary


def _commit(ds: Dataset, src: Dataset, record: EpisodeRecord, k: int, augmented: Augmented, envelope: Envelope,
            request: AugmentRequest, rejected: dict[tuple[int, int], RejectedRecord]
            ) -> tuple[Outcome, AugmentationConfig]:
    """Write the k-th augmented episode of `record` into `ds`, or record why it was rejected; the outcome and the
    configuration the episode carries."""
    config: AugmentationConfig = {
        **augmented.config, "k": k, "request_seed": request.seed,
        "parent": {"dataset": src.name, "episode": record.index, "seed": record.seed}, "x2_version": x2.__version__}
    distance = config["check"]["min_distance_m"]
    placed = len(augmented.placement.placed)
    name = augmented.scenery.name
    if augmented.problems:
        return _reject(rejected, record.index, k, augmented.seed, name, augmented.problems, placed, distance), config
    committed = ds.add_file(partial(_copy_episode, src.episode_path(record.index), augmented=augmented,
                                    config=config, envelope=envelope))
    rejected.pop((record.index, k), None)
    return Outcome(record.index, k, name, committed.index, placed, distance), config


def _reject(rejected: dict[tuple[int, int], RejectedRecord], parent: int, k: int, seed: int, scenery: str,
            problems: list[str], placed: int = 0, distance: float | None = None) -> Outcome:
    """List the k-th augmented episode of `parent` as rejected (augmentation.json; a rerun makes it again); its
    outcome."""
    rejected[(parent, k)] = {"parent": parent, "k": k, "seed": seed, "scenery": scenery, "problems": problems}
    return Outcome(parent, k, scenery, None, placed, distance, tuple(problems))
