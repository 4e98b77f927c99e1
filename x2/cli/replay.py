"""`x2 replay EPISODE`: step an episode's stored actions from its stored first state and compare."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from x2.cli._common import console, open_dataset_arg
from x2.cli.options import DatasetOpt
from x2.recorded.replay import replay_actions


def replay_command(
    episode: Annotated[int, typer.Argument(help="episode index in the dataset")],
    dataset: DatasetOpt = None,
    check: Annotated[bool, typer.Option("--check", help="exit 1 when a replayed state deviates by more than "
                                        "--tolerance")] = False,
    tolerance: Annotated[float, typer.Option("--tolerance", min=0.0, help="largest deviation --check accepts "
                                             "(state units: rad, m, s)")] = 0.0,
) -> None:
    """Step an episode's stored actions again and report how far the states drift from the stored ones.

    Action replay: rebuild the episode's world from its file, reset to its first stored state, step its
    stored actions (action t between frame t and t + 1) and report how far each reached state is from the
    stored one. On the machine that recorded it, an episode reproduces exactly (deviation 0).

    Example: [cyan]x2 replay 3 --check[/cyan]
    """
    ds = open_dataset_arg(dataset)
    with ds.load(episode) as ep:
        report = replay_actions(ep)
    dev = report.deviation
    table = Table(title=f"episode {episode}: {len(dev)} frames, {len(dev) - 1} actions stepped", title_justify="left")
    for col in ("frames", "largest state deviation", "at frame"):
        table.add_column(col, justify="right")
    rows = max(1, len(dev) // 10)  # ten rows, each the worst frame of its stretch
    for lo in range(0, len(dev), rows):
        part = dev[lo: lo + rows]
        k = int(np.argmax(part))
        table.add_row(f"{lo}-{lo + len(part) - 1}", f"{part[k]:.3g}", str(lo + k))
    console.print(table)
    first = report.first_deviation
    component = int(report.worst_component[int(np.argmax(dev))])
    verdict = "exact: every replayed state equals the stored one" if first is None else (
        f"largest deviation {report.max_deviation:.3g} (state component {component}); first deviation at frame "
        f"{first}")
    ok = report.max_deviation <= tolerance
    console.print(f"[{'green' if ok else 'red'}]{verdict}[/]", soft_wrap=True)
    if check and not ok:
        raise typer.Exit(1)
