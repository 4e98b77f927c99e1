"""`x2 label EPISODE`: recompute labels offline from stored states and compare with the stored ones."""

from __future__ import annotations

from typing import Annotated, Literal

import typer
from rich.table import Table

from x2.cli._common import console, open_dataset_arg
from x2.cli.options import DatasetOpt
from x2.recorded.relabel import relabel


def label(
    episode: Annotated[int, typer.Argument(help="episode index in the dataset")],
    dataset: DatasetOpt = None,
    specs: Annotated[Literal["file", "current"], typer.Option(
        "--specs", help="the task as stored in the episode (file), or as today's specs compile it (current)")
    ] = "file",
) -> None:
    """Recompute an episode's subtask labels from its stored states and report any difference.

    The world and the task come from the episode file itself, so the labels reproduce whatever today's
    specs say; if they differ from the file's, a note says how. [bold]--specs current[/bold] relabels with
    today's task on purpose.

    Examples: [cyan]x2 label 0 --dataset data/fruit_in_microwave[/cyan]   [cyan]x2 label 3 --specs current[/cyan]
    """
    ds = open_dataset_arg(dataset)
    with ds.load(episode) as ep:
        report = relabel(ep, specs)
    table = Table(title=f"episode {episode}: {report.frames} frames recomputed ({specs} specs)", title_justify="left")
    table.add_column("node")
    table.add_column("first completion frame")
    for node, frame in report.events:
        table.add_row(node, str(frame))
    console.print(table)
    if report.failure:
        console.print(f"failure: {report.failure[0]} at frame {report.failure[1]}: {report.failure[2]}")
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}", soft_wrap=True)
    if report.identical:
        console.print("[green]labels identical to the stored ones[/green]")
        return
    for diff in report.differences:
        console.print(f"[red]differs:[/red] {diff}", soft_wrap=True)
    raise typer.Exit(1)
