"""`x2 datasets merge | partition | filter | rm | stats`, registered on the `x2 datasets` group.
Parsing and rich output only; the work is in x2.datasets.manage, stratified_partition and stats."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from x2.base.errors import DatasetError
from x2.cli._common import console, dataset_arg, open_dataset_arg
from x2.cli.datasets import app
from x2.cli.options import DatasetArg, EpisodesOpt, OlderPartOpt, PartOpt, SourceOpt, SuccessOnly, selection
from x2.cli.progress import progress
from x2.datasets import Dataset, remember_dataset, resolve_dataset, resolve_output
from x2.datasets.index import format_indices
from x2.datasets.manage import (
    CopyResult,
    Filter,
    filter_dataset,
    merge,
    parse_subtask_bound,
    plan_removal,
    remove,
)
from x2.datasets.select import parse_episode_list
from x2.datasets.stats import DatasetStats, dataset_stats, plot_durations, write_json
from x2.datasets.stratified_partition import assign_partition
from x2.format import PARTITION_FILE, REMOVED_DIR

OutOpt = Annotated[str, typer.Option(
    "--out", "-o", help="The new dataset: a name under ./data or a path (must not exist).", show_default=False)]


def _copied(result: CopyResult, title: str) -> None:
    per_source: dict[str, list[int]] = {}
    for name, index in result.origins:
        per_source.setdefault(name, []).append(index)
    table = Table(title=title, title_justify="left")
    for column in ("source", "episodes", "source indices", "new indices"):
        table.add_column(column, justify="right" if column == "episodes" else "left")
    new = iter(r.index for r in result.records)
    for name, indices in per_source.items():
        table.add_row(name, str(len(indices)), format_indices(indices), format_indices([next(new) for _ in indices]))
    console.print(table)


@app.command("merge", epilog="Examples: x2 datasets merge fruit_a fruit_b --out fruit_all\n\n"
             "  x2 datasets merge data/fruit_in_microwave data/pick_place --out multi_task")
def merge_command(
    datasets: Annotated[list[str], typer.Argument(help="Two or more datasets (paths or names under ./data).",
                                                  show_default=False)],
    out: OutOpt,
) -> None:
    """A new dataset with every committed episode of the sources, renumbered 0..N-1 in order.

    Refused, naming the first difference, when robot, fps, joint or action names or cameras differ, or when
    two episodes share a seed. Sources of several tasks give a multi-task dataset no collector appends to."""
    paths = [resolve_dataset(d) for d in datasets]
    target = resolve_output(out, "merged")
    with progress("copying episodes") as advance:
        result = merge(paths, target, advance)
    _copied(result, f"merged into {target}")
    kind = "multi-task (collectors append to its sources, not to it)" if result.multi_task else \
        "one world (collectors may append to it)"
    console.print(f"{target}: {len(result.records)} episodes, {kind}")
    remember_dataset(target)


@app.command("filter", epilog="Examples: x2 datasets filter --success-only --out fruit_ok\n\n"
             "  x2 datasets filter multi_task --task pick_place --min-subtask-frames pick_fruit=60 --out picks")
def filter_command(
    out: OutOpt,
    dataset: DatasetArg = None,
    success_only: SuccessOnly = False,
    source: SourceOpt = None,
    task: Annotated[list[str] | None, typer.Option(
        "--task", help="Only episodes of this task (a merged dataset holds several); repeatable.",
        show_default=False)] = None,
    part: PartOpt = None,
    older_part: OlderPartOpt = None,
    episodes: EpisodesOpt = None,
    min_frames: Annotated[list[str] | None, typer.Option(
        "--min-subtask-frames", help="NODE=N: only episodes with at least N frames labelled NODE; repeatable.",
        show_default=False)] = None,
    max_frames: Annotated[list[str] | None, typer.Option(
        "--max-subtask-frames", help="NODE=N: only episodes with at most N frames labelled NODE; repeatable.",
        show_default=False)] = None,
    renumber: Annotated[bool, typer.Option(
        "--renumber", help="Number the kept episodes 0..N-1 (default: they keep their indices).")] = False,
) -> None:
    """A new dataset with the episodes that pass every filter (copies; the source is not changed)."""
    ds = open_dataset_arg(dataset)
    keep = Filter(selection(success_only, source, part, older_part, episodes), tasks=tuple(task or ()),
                  min_frames=dict(parse_subtask_bound(t, "--min-subtask-frames") for t in min_frames or ()),
                  max_frames=dict(parse_subtask_bound(t, "--max-subtask-frames") for t in max_frames or ()))
    target = resolve_output(out, f"{ds.name}_filtered")
    with progress("copying episodes") as advance:
        result = filter_dataset(ds.root, target, keep, renumber=renumber, progress=advance)
    _copied(result, f"filtered into {target} ({keep.describe()})")
    console.print(f"{target}: {len(result.records)} of {len(ds.episodes())} episodes")
    remember_dataset(target)


@app.command("rm", epilog="Examples: x2 datasets rm 3,5-7\n\n  x2 datasets rm fruit_in_microwave 12 --yes")
def rm_command(
    args: Annotated[list[str], typer.Argument(
        metavar="[DATASET] EPISODES", help="Optional dataset (default: the last one used), then episode "
                                           "indices and ranges, e.g. 3,5-7.", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Take episodes out of a dataset: out of the index, their files moved to .removed/ (nothing is deleted;
    move a file back and run x2 datasets validate --repair to restore it). Their seed slots stay used."""
    if len(args) > 2:
        raise DatasetError(f"arguments: found {len(args)} ({' '.join(args)}); allowed: [DATASET] EPISODES")
    dataset, text = (None, args[0]) if len(args) == 1 else (args[0], args[1])
    indices = parse_episode_list(text, "EPISODES")
    path = dataset_arg(dataset)
    ds = Dataset.open(path)
    plan = plan_removal(ds, indices)
    if plan.already:
        console.print(f"already removed: episodes {format_indices(plan.already)}")
    if plan.remove and not yes:
        if not sys.stdin.isatty():
            raise DatasetError(f"{path}: confirmation: found no terminal to ask at; allowed: --yes to remove "
                               f"episodes {format_indices(plan.remove)} without asking")
        typer.confirm(f"remove episodes {format_indices(plan.remove)} ({len(plan.remove)}) from {path}? "
                      f"(their files move to {REMOVED_DIR}/, nothing is deleted)", abort=True)
    with progress("moving files") as advance:
        done = remove(path, indices, advance)
    remember_dataset(path)
    left = len(Dataset.open(path).episodes())
    if done.remove:
        console.print(f"removed episodes {format_indices(done.remove)}: files in {Path(path) / REMOVED_DIR}/ "
                      f"(nothing deleted); {left} episodes left")
    else:
        console.print(f"nothing to remove; {left} episodes")


ValOpt = Annotated[float, typer.Option("--val", help="Fraction of each stratum for validation.")]
TestOpt = Annotated[float, typer.Option("--test", help="Fraction of each stratum for testing.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Shuffle seed (same seed, same partition).")]


@app.command("partition", epilog="Examples: x2 datasets partition --val 0.1 --seed 0\n\n"
             "  x2 datasets partition multi_task --val 0.1 --test 0.1 --seed 3")
def partition_command(dataset: DatasetArg = None, val: ValOpt = 0.1, test: TestOpt = 0.0, seed: SeedOpt = 0) -> None:
    """Partition the episodes into train/val/test parts, stratified by task and source, written to
    partition.json (an episode's part there overrides the split its file was recorded with; files are not
    changed). An older splits.json is replaced."""
    ds = open_dataset_arg(dataset)
    with progress("reading tasks") as advance:
        strata = assign_partition(ds.root, val, test, seed, advance)
    table = Table(title=f"partition of {ds.name} (seed {seed})", title_justify="left")
    for column in ("task", "source", "episodes", "train", "val", "test"):
        table.add_column(column, justify="left" if column in ("task", "source") else "right")
    for s in strata:
        table.add_row(s.task, s.source, str(s.episodes), str(len(s.train)), str(len(s.val)), str(len(s.test)))
    total = [sum(len(getattr(s, k)) for s in strata) for k in ("train", "val", "test")]
    table.add_row("all", "", str(sum(total)), *map(str, total), style="bold")
    console.print(table)
    console.print(f"wrote {ds.root / PARTITION_FILE}")


# The command's name before the partition had its name (a "split" is now a configuration's train or eval only):
# still taken, so command lines typed before run as they did; hidden from --help.
@app.command("split", hidden=True)
def split_command(dataset: DatasetArg = None, val: ValOpt = 0.1, test: TestOpt = 0.0, seed: SeedOpt = 0) -> None:
    """x2 datasets partition, under its older name."""
    partition_command(dataset, val, test, seed)


def _stats_tables(stats: DatasetStats) -> None:
    for f in stats.features:
        table = Table(title=f"{f.feature} ({f.frames} frames)", title_justify="left")
        for column in ("dim", "name", "mean", "std", "min", "max"):
            table.add_column(column, justify="left" if column == "name" else "right")
        for i, name in enumerate(f.names):
            table.add_row(str(i), name, *(f"{v[i]:.4g}" for v in (f.mean, f.std, f.min, f.max)))
        console.print(table)
    table = Table(title="subtask durations in frames, then seconds (segments from the index)", title_justify="left")
    for column in ("subtask", "count", "mean", "p50", "p90", "max", "mean s", "p50 s", "p90 s", "max s"):
        table.add_column(column, justify="left" if column == "subtask" else "right")
    for d in stats.durations:
        s = d.summary()
        frames = [f"{s[k]:.1f}" for k in ("mean", "p50", "p90")] + [f"{s['max']:.0f}"]
        seconds = [f"{s[k] / d.fps:.2f}" for k in ("mean", "p50", "p90", "max")]
        table.add_row(d.node, str(d.count), *frames, *seconds)
    console.print(table)


@app.command("stats", epilog="Examples: x2 datasets stats --plot durations.png\n\n"
             "  x2 datasets stats fruit_in_microwave --success-only --json stats.json")
def stats_command(
    dataset: DatasetArg = None,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="Write a PNG of per-subtask duration histograms.", show_default=False)] = None,
    json_out: Annotated[Path | None, typer.Option(
        "--json", help="Write every number as JSON.", show_default=False)] = None,
    success_only: SuccessOnly = False,
    source: SourceOpt = None,
    part: PartOpt = None,
    older_part: OlderPartOpt = None,
    episodes: EpisodesOpt = None,
) -> None:
    """Per-dimension mean, std, min and max of action, qpos, qvel and ee_pose; per-subtask durations."""
    ds = open_dataset_arg(dataset)
    chosen = selection(success_only, source, part, older_part, episodes)
    records = chosen.apply(ds)
    with progress("reading episodes") as advance:
        stats = dataset_stats(ds, records, advance)
    console.print(f"{ds.name}: {stats.episodes} episodes ({chosen.describe()}), {stats.frames} frames at "
                  f"{stats.fps:g} fps")
    _stats_tables(stats)
    if json_out is not None:
        console.print(f"wrote {write_json(stats, json_out)}")
    if plot is not None:
        console.print(f"wrote {plot_durations(stats, plot)}")
