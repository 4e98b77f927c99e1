"""`x2 synth`: synthesise demonstrations with atomic skills and a motion planner."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from x2.cli._common import console, translate_errors
from x2.datasets import workspace
from x2.format import SYNTH_REPORT_FILE
from x2.synth.runner import SynthConfig, SynthProgress, SynthRun


@translate_errors
def synth(
    task: Annotated[str, typer.Option("--task", "-t", help="task name or path to a task YAML")],
    n: Annotated[int, typer.Option("-n", "--num-demos", min=1, help="accepted demonstrations to produce")] = 10,
    robot: Annotated[str | None, typer.Option("--robot", "-r", help="robot (default: the task's)")] = None,
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1, help="worker processes "
                                                "(default: the number of cores)")] = None,
    seed: Annotated[int, typer.Option("--seed", help="master seed; attempt i's seed derives from it")] = 0,
    max_attempts: Annotated[int | None, typer.Option("--max-attempts", min=1,
                                                     help="stop after this many attempts (default: 3 n + 10)")] = None,
    keep_failed: Annotated[bool, typer.Option("--keep-failed", help="also store rejected attempts, "
                                              "marked rejected")] = False,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="dataset name or folder "
                                                "(default: data/<task>)")] = None,
    variant: Annotated[str, typer.Option("--variant", help="scene variant")] = "default",
) -> None:
    """Synthesise demonstrations with atomic skills and a motion planner.

    Each DAG node's skill runs through the motion planner and the same loop as teleoperation; node
    predicates verify every stage; accepted attempts are stored in attempt order.

    Example: [cyan]x2 synth --task fruit_in_microwave -n 300[/cyan]
    """
    config = SynthConfig(task=task, robot=robot, variant=variant, n=n, workers=workers or os.cpu_count() or 1,
                         seed=seed, max_attempts=max_attempts, keep_failed=keep_failed)
    run = SynthRun(config, workspace.resolve_output(dataset, default_name=task.removesuffix(".yaml").split("/")[-1]))
    workspace.remember_dataset(run.path)
    console.print(f"dataset [bold]{run.path}[/bold]; {config.workers} workers; master seed {seed}")
    bar = Progress(TextColumn("accepted"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                   TimeRemainingColumn(), console=console)
    job = bar.add_task("synth", total=n, rate="")

    def view(p: SynthProgress) -> Group:
        table = Table(title=f"{p.accepted} accepted / {p.attempted} attempted", title_justify="left")
        table.add_column("outcome")
        table.add_column("attempts", justify="right")
        for reason, count in p.reasons.most_common():
            table.add_row(reason, str(count))
        return Group(bar, table)

    def advance(p: SynthProgress) -> None:
        rate = f"{p.per_minute:.1f}/min, {100 * p.accepted / max(1, p.attempted):.0f}% accepted"
        bar.update(job, completed=p.accepted, rate=rate)

    if console.is_terminal:
        with Live(view(run.progress), console=console, refresh_per_second=4, transient=False) as live:
            def redraw(p: SynthProgress) -> None:
                advance(p)
                live.update(view(p))

            progress = run.run(redraw)
    else:  # a log or a pipe: the final table once, on lines of its own
        progress = run.run(advance)
        console.print(view(progress))
    first, last = run.first_attempt, run.first_attempt + progress.attempted - 1
    where = "" if first == 0 else f" (continuing the dataset's seed {seed} after its {first} earlier attempts)"
    console.print(f"{progress.stop_reason}: attempts {first}-{last}{where}. Report: {run.path / SYNTH_REPORT_FILE}")
    if progress.accepted < n:
        raise typer.Exit(1)
