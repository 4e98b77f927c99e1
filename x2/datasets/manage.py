"""Changing what a dataset holds: merge datasets, filter one into a new one, take episodes out.

A finished episode file is never edited in place. Merge and filter copy each file under
`.inprogress/` of a dataset built beside its target (x2.datasets.building), set the copy's
`episode_index` and its origin attr there, and rename it into `episodes/`; the target appears in one
rename when complete. `remove` moves files into `.removed/` behind a journal (x2.datasets.removal).
Sources are only read (readers need no lock; finished files never change); a target is locked while
it is built, and `remove` holds its dataset's lock.

Decisions (docs/format.md says the same):
- merge renumbers 0..N-1 in source order; every copy carries `merged_from` ({dataset, episode}).
  Sources of one world (same task and `world`) give a dataset of that world: collectors may append to
  it, and its `slots.json` (the union of the sources') keeps them off every slot the sources used.
  Sources of several tasks or worlds give a multi-task dataset: its manifest `task` joins the task names
  with "+", its `world` only says it is a mixture, so every collector's append is refused by the store's
  world check (each episode file still carries its own world and task).
- filter keeps the source's indices (episode 17 stays episode 17, so notes and the partition stay valid),
  unless `renumber`; every copy carries `filtered_from`.
- a copy of a copy keeps the earlier origin under "earlier" in its origin attr.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from x2.base.errors import DatasetError
from x2.datasets.building import building
from x2.datasets.difference import describe, first_difference
from x2.datasets.episode import Episode
from x2.datasets.index import EpisodeRecord, format_indices, write_index
from x2.datasets.partition import read_partition, write_partition
from x2.datasets.removal import Progress, begin_removal, finish_removal, pending_removal, removed_files
from x2.datasets.select import Selection
from x2.datasets.store import Dataset
from x2.datasets.untrusted import json_loads
from x2.files.disk import is_refusal
from x2.files.hdf5_guard import kept_if_complete
from x2.format import (
    EPISODES_DIR,
    FILTERED_FROM_ATTR,
    INDEX_ATTR,
    INPROGRESS_DIR,
    MANIFEST_FILE,
    MERGED_FROM_ATTR,
    Manifest,
    episode_filename,
)

# What must agree for episodes to be trained on together: the same robot, observed and commanded alike.
MERGE_ALIKE = ("robot", "fps", "joint_names", "action_names", "cameras")
MIXED_WORLD_KEY = "mixed_worlds"


@dataclass(frozen=True)
class CopyResult:
    root: Path
    records: tuple[EpisodeRecord, ...]
    origins: tuple[tuple[str, int], ...]  # (source dataset name, source index) of each record, in order
    multi_task: bool = False


# ---- the copy mechanism ---------------------------------------------------------------------------
def copy_episode(source: Path, target: Dataset, index: int, origin_key: str,
                 origin: Mapping[str, Any]) -> EpisodeRecord:
    """Copy a finished file into `target` (a dataset being built) as episode `index`; its index line.

    No fsync here: the target is invisible until `building` fsyncs the whole tree and renames it into
    place, so per-file syncs would only slow the copy down (bench/bench_manage.py)."""
    name = episode_filename(index)
    tmp, final = target.root / INPROGRESS_DIR / name, target.root / EPISODES_DIR / name
    try:
        shutil.copyfile(source, tmp)
        with kept_if_complete(tmp, "r+", libver="latest") as f:
            f.attrs[INDEX_ATTR] = index
            earlier = f.attrs.get(origin_key)
            value = dict(origin)
            if earlier is not None:
                text = earlier.decode() if isinstance(earlier, bytes) else str(earlier)
                value["earlier"] = json_loads(text)
            f.attrs[origin_key] = json.dumps(value, sort_keys=True)
        os.replace(tmp, final)
    except (OSError, ValueError, RuntimeError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if is_refusal(exc):
            raise  # the build around it says what happened (x2.datasets.building)
        raise DatasetError(f"{source}: copy: found {exc}; allowed: a readable episode file") from None
    with Episode(final) as ep:
        return ep.record(target.root)  # read back from the copy: its index line matches it by construction


def _used_slots(ds: Dataset) -> dict[int, int]:
    """master seed -> first slot no collector used in `ds` (its ledger and its committed episodes)."""
    masters = {r.master_seed for r in ds.episodes() if r.master_seed is not None}
    masters |= {int(k) for k in ds._slots() if k.lstrip("-").isdigit()}  # the ledger's keys are text
    return {m: ds.next_slot(m) for m in sorted(masters)}


def _build(out: Path, manifest: Manifest, plan: Sequence[tuple[Dataset, EpisodeRecord, int]], origin_key: str,
           progress: Progress | None) -> tuple[EpisodeRecord, ...]:
    """Make the dataset `out` from `plan` ((source, record, new index)): episodes, slots, partition."""
    records: list[EpisodeRecord] = []
    with building(out) as tmp:
        target = Dataset.create(tmp, manifest, exist_ok=False)
        target.lock()
        try:
            for done, (ds, record, index) in enumerate(plan, 1):
                origin = {"dataset": ds.name, "episode": record.index}
                ds.verify([record])
                records.append(copy_episode(ds.episode_path(record.index), target, index, origin_key, origin))
                if progress is not None:
                    progress(done, len(plan))
            write_index(target.index_path, records)
            slots: dict[int, int] = defaultdict(int)
            for ds in dict.fromkeys(ds for ds, _, _ in plan):
                for master, nxt in _used_slots(ds).items():
                    slots[master] = max(slots[master], nxt)
            for master, nxt in sorted(slots.items()):
                if nxt > 0:
                    target.use_slots(master, nxt - 1)
            # An episode keeps the part its source's partition gave it (its split attr travels in the file).
            assigned = {id(ds): read_partition(ds.root) for ds, _, _ in plan}
            carried = {index: assigned[id(ds)][r.index] for ds, r, index in plan if r.index in assigned[id(ds)]}
            if carried:
                write_partition(target.root, carried)
        finally:
            target.close()
    return tuple(records)


# ---- merge ----------------------------------------------------------------------------------------
def check_mergeable(datasets: Sequence[Dataset]) -> None:
    """Refuse, in one line, datasets that cannot be trained on together or share a seed."""
    roots = [d.root.resolve() for d in datasets]
    for i, root in enumerate(roots):
        if root in roots[:i]:
            raise DatasetError(f"{datasets[i].root}: sources: found it twice; allowed: each dataset once")
    first = datasets[0]
    have = {k: first.manifest.to_dict()[k] for k in MERGE_ALIKE}
    for other in datasets[1:]:
        found = first_difference(have, {k: other.manifest.to_dict()[k] for k in MERGE_ALIKE})
        if found is not None:
            where, was, now = found
            raise DatasetError(f"{other.root / MANIFEST_FILE}: {where}: found {describe(now)} where {first.name} "
                               f"has {describe(was)}; allowed: datasets of the same robot, fps, joint and action "
                               "names and cameras")
    seen: dict[int, tuple[str, int]] = {}
    clashes: list[tuple[int, tuple[str, int], tuple[str, int]]] = []
    for ds in datasets:
        for record in sorted(ds.episodes(), key=lambda r: r.index):
            if record.seed in seen:
                clashes.append((record.seed, seen[record.seed], (ds.name, record.index)))
            else:
                seen[record.seed] = (ds.name, record.index)
    if clashes:
        seed, (a, i), (b, j) = clashes[0]
        more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
        raise DatasetError(f"{b}: seed: found {seed} in {b} episode {j}, already used by {a} episode {i}{more}; "
                           "allowed: seeds that never repeat in a dataset (record one of them with another "
                           "--seed)")
    # Different seeds can still be the same demonstration (validate reports it in the result): refuse it here.
    starts: dict[str, tuple[str, int]] = {}
    for ds in datasets:
        for record in sorted(ds.episodes(), key=lambda r: r.index):
            with ds.load(record.index) as ep:
                digest = ep.initial_digest()
            if digest in starts:
                a, i = starts[digest]
                raise DatasetError(f"{ds.name}: episode {record.index}: found the same world and initial state as "
                                   f"{a} episode {i} (a repeated demonstration); allowed: distinct demonstrations")
            starts[digest] = (ds.name, record.index)


def merged_manifest(datasets: Sequence[Dataset], counts: Sequence[int]) -> Manifest:
    first = datasets[0].manifest
    sources = [{"dataset": d.name, "path": str(d.root), "created": d.manifest.created, "task": d.manifest.task,
                "episodes": n} for d, n in zip(datasets, counts, strict=True)]
    manifests = [d.manifest for d in datasets]
    if all(m.task == first.task and m.world == first.world for m in manifests):
        return replace(first, created="", extra={**first.extra, MERGED_FROM_ATTR: sources})
    tasks = list(dict.fromkeys(m.task for m in manifests))
    worlds = len({json.dumps(m.world, sort_keys=True) for m in manifests})
    nodes = list(dict.fromkeys(str(n) for m in manifests for n in m.dag.get("nodes", [])))
    agreed = {k: v for k, v in first.extra.items()
              if k != MERGED_FROM_ATTR and all(m.extra.get(k) == v for m in manifests)}
    versions = first.versions if all(m.versions == first.versions for m in manifests) else \
        {"by_source": [m.versions for m in manifests]}
    return replace(
        first, task="+".join(tasks), created="", versions=versions,
        dag={"nodes": nodes, "by_source": [m.dag for m in manifests]},
        # Never equal to a collector's compiled world: appends are refused, naming this key.
        world={MIXED_WORLD_KEY: f"a merge of {worlds} worlds: append to a source"},
        extra={**agreed, MERGED_FROM_ATTR: sources})


def merge(sources: Sequence[str | Path], out: str | Path, progress: Progress | None = None) -> CopyResult:
    """A new dataset `out` with every committed episode of `sources`, renumbered in order."""
    if len(sources) < 2:
        raise DatasetError(f"sources: found {len(sources)} dataset(s); allowed: two or more to merge")
    datasets = [Dataset.open(p) for p in sources]
    check_mergeable(datasets)
    per_source = [sorted(d.episodes(), key=lambda r: r.index) for d in datasets]
    plan = [(d, r) for d, records in zip(datasets, per_source, strict=True) for r in records]
    manifest = merged_manifest(datasets, [len(r) for r in per_source])
    records = _build(Path(out), manifest, [(d, r, i) for i, (d, r) in enumerate(plan)], MERGED_FROM_ATTR, progress)
    return CopyResult(Path(out), records, tuple((d.name, r.index) for d, r in plan),
                      multi_task=MIXED_WORLD_KEY in manifest.world)


# ---- filter ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Filter:
    """What `x2 datasets filter` keeps: a Selection, tasks, and bounds on subtask durations (frames)."""

    selection: Selection = Selection()
    tasks: tuple[str, ...] = ()
    min_frames: Mapping[str, int] | None = None  # node -> at least this many frames labelled with it
    max_frames: Mapping[str, int] | None = None  # node -> at most this many

    def describe(self) -> str:
        parts = [] if self.selection == Selection() else [self.selection.describe()]
        if self.tasks:
            parts.append("task " + "/".join(self.tasks))
        parts += [f"{n} >= {v} frames" for n, v in (self.min_frames or {}).items()]
        parts += [f"{n} <= {v} frames" for n, v in (self.max_frames or {}).items()]
        return ", ".join(parts) or "all episodes"

    def apply(self, ds: Dataset) -> list[EpisodeRecord]:
        records = self.selection.apply(ds)
        if self.tasks:
            tasks = episode_tasks(ds, records)
            known = sorted(set(episode_tasks(ds, ds.episodes()).values()))
            unknown = [t for t in self.tasks if t not in known]
            if unknown:
                raise DatasetError(f"{ds.root}: --task: found {unknown[0]!r}; allowed: a task of this dataset "
                                   f"({', '.join(known) or 'none'})")
            records = [r for r in records if tasks[r.index] in self.tasks]
        bounds = {**(self.min_frames or {}), **(self.max_frames or {})}
        if bounds:
            known_nodes = [str(n) for n in ds.manifest.dag.get("nodes", [])]
            known_nodes += sorted({s.node for r in ds.episodes() for s in r.segments} - set(known_nodes))
            for node in bounds:
                if node not in known_nodes:
                    raise DatasetError(f"{ds.root}: subtask: found {node!r}; allowed: one of {known_nodes}")
            low, high = self.min_frames or {}, self.max_frames or {}
            records = [r for r in records
                       if all(subtask_frames(r).get(n, 0) >= v for n, v in low.items())
                       and all(subtask_frames(r).get(n, 0) <= v for n, v in high.items())]
        if not records:
            raise DatasetError(f"{ds.root}: episodes: found none matching ({self.describe()}); allowed: a "
                               "filter that keeps at least one committed episode")
        return records


def subtask_frames(record: EpisodeRecord) -> dict[str, int]:
    """Frames labelled with each subtask (all its segments together), from the index line alone."""
    out: dict[str, int] = defaultdict(int)
    for segment in record.segments:
        out[segment.node] += segment.end - segment.start
    return dict(out)


def parse_subtask_bound(text: str, where: str) -> tuple[str, int]:
    """`"pick_fruit=120"` -> ("pick_fruit", 120)."""
    node, sep, value = text.partition("=")
    if not sep or not node.strip() or not value.strip().isdigit():
        raise DatasetError(f"{where}: found {text!r}; allowed: NODE=FRAMES, e.g. pick_fruit=120")
    return node.strip(), int(value)


def episode_tasks(ds: Dataset, records: Sequence[EpisodeRecord],
                  progress: Progress | None = None) -> dict[int, str]:
    """The task of each episode, from its own file (a merged dataset holds several)."""
    out: dict[int, str] = {}
    for done, record in enumerate(records, 1):
        with Episode(ds.episode_path(record.index)) as ep:
            out[record.index] = ep.task or ds.manifest.task
        if progress is not None:
            progress(done, len(records))
    return out


def filter_dataset(source: str | Path, out: str | Path, keep: Filter, renumber: bool = False,
                   progress: Progress | None = None) -> CopyResult:
    """A new dataset `out` with the episodes of `source` that `keep` passes."""
    ds = Dataset.open(source)
    records = keep.apply(ds)
    info = {"dataset": ds.name, "path": str(ds.root), "created": ds.manifest.created, "filter": keep.describe(),
            "episodes": len(records), "renumbered": renumber}
    manifest = replace(ds.manifest, created="", extra={**ds.manifest.extra, FILTERED_FROM_ATTR: info})
    plan = [(ds, r, i if renumber else r.index) for i, r in enumerate(records)]
    built = _build(Path(out), manifest, plan, FILTERED_FROM_ATTR, progress)
    return CopyResult(Path(out), built, tuple((ds.name, r.index) for r in records))


# ---- rm -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RemovalPlan:
    remove: tuple[int, ...]  # listed now, to be taken out
    already: tuple[int, ...]  # asked for, but an earlier (maybe interrupted) rm took them out already


def plan_removal(ds: Dataset, indices: Sequence[int]) -> RemovalPlan:
    listed = {r.index for r in ds.episodes()}
    pending = set(pending_removal(ds.root))
    remove = [i for i in indices if i in listed and i not in pending]
    already = [i for i in indices if i not in remove and (i in pending or removed_files(ds.root, i))]
    unknown = [i for i in indices if i not in remove and i not in already]
    if unknown:
        raise DatasetError(f"{ds.root}: episodes: found {format_indices(unknown)}; allowed: "
                           f"{format_indices(sorted(listed))} (the committed episodes)")
    return RemovalPlan(tuple(sorted(remove)), tuple(sorted(already)))


def remove(root: str | Path, indices: Sequence[int], progress: Progress | None = None) -> RemovalPlan:
    """Take episodes out of the index and move their files to `.removed/` (nothing is deleted)."""
    ds = Dataset.open(root)
    ds.lock()  # heals first: an earlier interrupted rm is finished before this one is planned
    try:
        plan = plan_removal(ds, indices)
        if plan.remove:
            gone = [r for r in ds.episodes() if r.index in set(plan.remove)]
            for master in sorted({r.master_seed for r in gone if r.master_seed is not None}):
                ds.use_slots(master, ds.next_slot(master) - 1)  # their slots stay used
            begin_removal(ds.root, plan.remove)
            finish_removal(ds.root, progress)
        return plan
    finally:
        ds.close()
