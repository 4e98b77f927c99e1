"""`x2 datasets`: list, inspect, show and validate native datasets. Parsing and rich output only."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from x2 import format as fmt
from x2.base.errors import X2Error
from x2.cli._common import console, dataset_arg, open_dataset_arg
from x2.cli.group_class import typer_group
from x2.cli.options import DatasetArg, DatasetOpt, EpisodeArg
from x2.cli.progress import progress
from x2.datasets import (
    Dataset,
    Episode,
    dataset_label,
    list_datasets,
    plot_timeline,
    remember_dataset,
    repair,
    summarize,
    validate,
)
from x2.datasets.coverage import Coverage, coverage
from x2.datasets.validate import Report
from x2.recorded.held_out_check import held_out_episodes
from x2.recorded.replay import PENETRATION_LIMIT_M, penetrations

app = typer_group(
    "datasets",
    help="List, inspect, show and validate native x2 datasets (folders under ./data).",
    examples="  x2 datasets ls\n\n  x2 datasets info fruit_in_microwave\n\n"
             "  x2 datasets show 3 --plot ep3.png\n\n  x2 datasets validate --repair",
)

_SEVERITY_STYLE = {"error": "bold red", "repairable": "yellow", "info": "dim"}


def _duration(seconds: float) -> str:
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{secs:04.1f}"


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


@app.command("ls", epilog="Example: x2 datasets ls")
def ls_command() -> None:
    """Table of the datasets under ./data, and the rollouts of each `x2 eval` run there (RUN/train, RUN/eval)."""
    paths = list_datasets()
    if not paths:
        console.print("no datasets under data/ yet (record one with x2 collect teleop or x2 synth)")
        return
    table = Table(title="datasets under data/")
    for column in ("name", "episodes", "frames", "success", "robot", "task"):
        table.add_column(column, justify="right" if column in ("episodes", "frames", "success") else "left")
    for path in paths:
        try:
            s = summarize(Dataset.open(path))
        except X2Error as exc:
            table.add_row(dataset_label(path), "-", "-", "-", f"[red]unreadable: {exc}[/red]", "")
            continue
        table.add_row(dataset_label(path), str(s.episodes), str(s.frames), _rate(s.success_rate), s.robot, s.task)
    console.print(table)


@app.command("info", epilog="Example: x2 datasets info fruit_in_microwave")
def info_command(dataset: DatasetArg = None) -> None:
    """Episodes, frames, duration, success rate, sources, subtask durations, failure reasons, and what the
    episodes cover per randomisation axis (appearance, task setting, embodiment) and split."""
    ds = open_dataset_arg(dataset)
    s = summarize(ds)
    console.print(f"[bold]{s.name}[/bold]: {s.task} on {s.robot}")
    table = Table(show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("episodes", str(s.episodes))
    table.add_row("frames", f"{s.frames} at {s.fps:g} fps")
    table.add_row("duration", _duration(s.duration_s))
    table.add_row("success rate", _rate(s.success_rate))
    table.add_row("sources", ", ".join(f"{k}: {v}" for k, v in s.sources.items()) or "-")
    console.print(table)
    if s.episodes and set(s.sources) == {fmt.REAL_SOURCE}:  # recorded, not drawn: no randomisation axes
        origin = ds.manifest.extra.get(fmt.RECORDING_ATTR)
        where = origin.get("path") if isinstance(origin, dict) else None
        console.print(f"real recordings (no world, no labels), imported from {escape(str(where))}", soft_wrap=True)
    elif s.episodes:
        with progress("reading episodes", "episodes") as update:
            cov = coverage(ds, update)
        console.print(_coverage_table(cov))
    if s.subtask_mean_s:
        sub = Table(title="subtasks (from segments)")
        sub.add_column("subtask")
        sub.add_column("segments", justify="right")
        sub.add_column("mean duration (s)", justify="right")
        for node, mean in s.subtask_mean_s.items():
            sub.add_row(node, str(s.subtask_count[node]), f"{mean:.2f}")
        console.print(sub)
    if s.failure_reasons:
        fail = Table(title="failure reasons")
        fail.add_column("node: reason")
        fail.add_column("episodes", justify="right")
        for reason, count in s.failure_reasons.items():
            fail.add_row(reason, str(count))
        console.print(fail)


def _counts(counter: Counter[str], limit: int = 6) -> str:
    shown = [f"{name}: {n}" for name, n in counter.most_common(limit)]
    return ", ".join(shown) + (f", ... ({len(counter) - limit} more)" if len(counter) > limit else "")


def _coverage_table(cov: Coverage) -> Table:
    table = Table(title="coverage per randomisation axis", title_justify="left")
    for col in ("axis", "what", "episodes per value"):
        table.add_column(col)
    table.add_row("appearance", "scene variant / scenery", _counts(cov.appearance))
    for name, assets in cov.drawn_assets.items():
        table.add_row("task setting", f"{name} asset", _counts(assets))
    if cov.instructions:
        top, n = cov.instructions.most_common(1)[0]
        table.add_row("task setting", "instructions", f"{len(cov.instructions)} distinct; most often ({n}): {top}")
    table.add_row("task setting", "layouts", f"{cov.layouts} distinct (to the cm) of {cov.episodes} episodes")
    if cov.role_bindings:
        table.add_row("task setting", "role bindings", f"{cov.role_bindings} distinct of {cov.episodes} episodes")
    table.add_row("embodiment", "robot", _counts(cov.embodiment))
    if cov.table_heights:
        lo, hi = min(cov.table_heights), max(cov.table_heights)
        table.add_row("embodiment", "table height", f"{len(cov.table_heights)} drawn, {100 * lo:+.1f} to "
                                                    f"{100 * hi:+.1f} cm from nominal (relative to the robot)")
    table.add_row("split", "train / eval", _counts(cov.split))
    if cov.unreadable:
        table.add_row("-", "unreadable", f"{len(cov.unreadable)} episode(s), e.g. {cov.unreadable[0]} "
                                         "(x2 datasets validate says why)")
    return table


@app.command("show", epilog="Example: x2 datasets show 3 --dataset fruit_in_microwave --plot ep3.png")
def show_command(
    episode: EpisodeArg,
    dataset: DatasetOpt = None,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="Write a PNG timeline (segments, joints, events).", show_default=False)] = None,
) -> None:
    """Attributes, outcome, events and segments of one episode."""
    ds = open_dataset_arg(dataset)
    with ds.load(episode) as ep:
        fps = ep.fps or ds.manifest.fps
        attrs = Table(title=f"episode {ep.index} ({ep.frames} frames, {ep.frames / fps:.1f} s)",
                      show_header=False)
        attrs.add_column("attr", style="bold")
        attrs.add_column("value")
        for key, value in sorted(ep.attrs.items()):
            attrs.add_row(key, _short(value))
        attrs.add_row("cameras", ", ".join(ep.cameras) or "none (state only)")
        console.print(attrs)
        if ep.is_real:
            _show_real(ep)
            if plot is not None:
                console.print(f"wrote {plot_timeline(ep, plot)}")
            return
        failure = ep.failure
        colour = {"success": "green", "failure": "red", "unfinished": "yellow"}[ep.outcome]
        outcome = f"[{colour}]{ep.outcome}[/{colour}]"
        if failure is not None:
            outcome += f": {failure[0]} failed at frame {failure[1]} ({failure[2]})"
        console.print(f"outcome: {outcome}")
        events = Table(title="completion events")
        starts = ep.node_starts  # (synthesised episodes: when each node's skill began)
        for column in ("node", *(("started",) if starts else ()), "frame", "time (s)"):
            events.add_column(column, justify="left" if column == "node" else "right")
        for node, frame in ep.events:
            started = (str(starts[node]) if node in starts else "-",) if starts else ()
            events.add_row(node, *started, str(frame), f"{frame / fps:.2f}")
        console.print(events)
        segments = Table(title="segments")
        for column in ("subtask", "start", "end", "seconds"):
            segments.add_column(column, justify="left" if column == "subtask" else "right")
        for seg in ep.segments:
            segments.add_row(seg.node, str(seg.start), str(seg.end), f"{(seg.end - seg.start) / fps:.2f}")
        console.print(segments)
        lanes = ep.arm_segments
        if len(lanes) > 1:  # subtasks in progress at once: each arm's own segments
            per_arm = Table(title="segments per arm")
            for column in ("arm", "subtask", "start", "end", "seconds"):
                per_arm.add_column(column, justify="left" if column in ("arm", "subtask") else "right")
            for arm, arm_segments in lanes.items():
                for seg in arm_segments:
                    per_arm.add_row(arm, seg.node, str(seg.start), str(seg.end), f"{(seg.end - seg.start) / fps:.2f}")
            console.print(per_arm)
        if plot is not None:
            console.print(f"wrote {plot_timeline(ep, plot)}")


def _show_real(ep: Episode) -> None:
    """A real recording's origin and timestamps, in place of the outcome, events and segments it does not have."""
    stored = ep.json_attr(fmt.RECORDING_ATTR, {})
    origin: dict[str, Any] = stored if isinstance(stored, dict) else {}
    timing: dict[str, Any] = origin["timing"] if isinstance(origin.get("timing"), dict) else {}
    console.print(f"a real recording (no world, no labels): {origin.get('format', '?')} episode "
                  f"{origin.get('episode_index', '?')} of {escape(str(origin.get('path', '?')))}", soft_wrap=True)
    gaps = timing.get("gaps") or []
    listed = ", ".join(f"before frame {f} ({float(step) * 1000:.0f} ms)" for f, step in gaps[:5])
    console.print(f"timestamps: {timing.get('gap_count', '?')} gaps ({timing.get('missing_frames', '?')} frames "
                  f"missing{': ' + listed if listed else ''}), {timing.get('irregular_steps', '?')} irregular steps, "
                  f"largest step {float(timing.get('largest_step_s', 0.0)) * 1000:.1f} ms", soft_wrap=True)


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 100 else f"{text[:97]}... ({len(text)} chars)"


@app.command("validate", epilog="Examples: x2 datasets validate data/fruit_in_microwave --repair\n\n"
             "  x2 datasets validate --quick\n\n  x2 datasets validate --physics --threshold-mm 3\n\n"
             "  x2 datasets validate --split")
def validate_command(
    dataset: DatasetArg = None,
    do_repair: Annotated[bool, typer.Option(
        "--repair", help="Rebuild the index, move unreadable files and files that fail their checksum to "
                         ".quarantine/ (never deletes), salvage interrupted episodes.",
    )] = False,
    quick: Annotated[bool, typer.Option(
        "--quick", help="Skip the checksums (reads every file's structure, not every byte).")] = False,
    physics: Annotated[bool, typer.Option(
        "--physics", help="Also replay every episode's states in its own world and report the deepest "
                          "penetration between any two geoms.")] = False,
    threshold_mm: Annotated[float, typer.Option(
        "--threshold-mm", min=0.0, help="With --physics: flag episodes whose bodies went deeper into each other.",
    )] = PENETRATION_LIMIT_M * 1e3,
    split: Annotated[bool, typer.Option(
        "--split", help="Also prove from the files that no episode saw a configuration held out for evaluation "
                        "(an eval scene variant, scenery, seed or paraphrase).")] = False,
) -> None:
    """Check a dataset against its on-disk contract (and repeated demonstrations); exit 1 when it is
    invalid (and not repaired), when --physics flags an episode, or when --split finds an evaluation
    configuration."""
    path = dataset_arg(dataset)
    with progress("checking", "episodes") as update:
        report = validate(path, quick=quick, progress=update)
    _print_report(report)
    if do_repair and not report.valid:
        result = repair(path)
        for action in result.actions:
            console.print(f"repaired: {action}", soft_wrap=True)
        with progress("checking again", "episodes") as update:
            report = validate(path, quick=quick, progress=update)
        _print_report(report, after_repair=True)
    if Path(path).is_dir():
        remember_dataset(path)
    flagged = _physics(Dataset.open(path), threshold_mm / 1e3) if physics and Path(path).is_dir() else 0
    flagged += _held_out(Dataset.open(path)) if split and Path(path).is_dir() else 0
    if not report.valid or flagged:
        raise typer.Exit(1)


def _physics(ds: Dataset, limit: float) -> int:
    """Deepest penetration per episode, recomputed from the stored states; the number over `limit`."""
    records = ds.episodes()
    table = Table(title=f"physics: deepest penetration per episode (flagged over {limit * 1e3:g} mm)",
                  title_justify="left")
    for col in ("episode", "depth (mm)", "frame", "between", ""):
        table.add_column(col, justify="right" if col in ("episode", "depth (mm)", "frame") else "left")
    worst: tuple[float, int] = (0.0, -1)
    flagged = 0
    with progress("replaying states", "episodes") as update:
        for index, pen in penetrations(ds, records, update):
            bad = pen.depth > limit
            flagged += bad
            worst = max(worst, (pen.depth, index))
            c = pen.contact
            pair = f"{c.geom1 or c.body1} / {c.geom2 or c.body2}" if c is not None and pen.depth > 0 else "-"
            table.add_row(str(index), f"{pen.depth * 1e3:.2f}", str(pen.frame), pair,
                          "[red]flagged[/red]" if bad else "")
    console.print(table)
    summary = f"physics: {len(records)} episodes, deepest penetration {worst[0] * 1e3:.2f} mm"
    summary += f" (episode {worst[1]})" if worst[1] >= 0 else ""
    console.print(summary + (f"; [red]{flagged} over {limit * 1e3:g} mm[/red]" if flagged else
                             f"; none over {limit * 1e3:g} mm"), soft_wrap=True)
    return flagged


def _held_out(ds: Dataset) -> int:
    """Episodes whose files say they saw an evaluation configuration, listed; their number."""
    records = ds.episodes()
    with progress("checking splits", "episodes") as update:
        seen = list(held_out_episodes(ds, records, update))
    for index, why in seen:
        console.print(f"[red]eval[/red] episode {index}: {why}", soft_wrap=True)
    console.print(f"split: {len(records)} episodes checked; " + (
        f"[red]{len(seen)} saw an evaluation configuration[/red]" if seen else
        "none saw an evaluation configuration (scene variant, scenery, master seed, paraphrase)"), soft_wrap=True)
    return len(seen)


def _print_report(report: Report, after_repair: bool = False) -> None:
    shown = [p for p in report.problems if not after_repair or p.severity != "info"]
    for problem in shown:
        style = _SEVERITY_STYLE[problem.severity]
        console.print(f"[{style}]{problem.severity}[/{style}] {problem.where}: {problem.message}",
                      soft_wrap=True)
    state = "[green]valid[/green]" if report.valid else "[red]invalid[/red]"
    hint = "" if report.valid or after_repair else " (try --repair)"
    checked = "checksums not checked (--quick)" if report.quick else "checksums verified"
    console.print(f"{state}: {report.episodes} episodes checked, {checked}{hint}")
