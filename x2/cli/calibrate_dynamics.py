"""`x2 calibrate dynamics`: the twin's dynamics fitted to a dataset's recordings, written as a calibration file
(docs/calibration.md). A command of the `calibrate` group, defined with `x2 calibrate camera`."""

from __future__ import annotations

import math
from typing import Annotated

import typer
from rich.table import Table

from x2.cli._common import console, dataset_arg
from x2.cli.calibrate_camera import app
from x2.cli.options import DatasetArg
from x2.cli.progress import progress
from x2.recorded.dynamics import calibrate_dynamics


@app.command("dynamics")
def dynamics(
    dataset: DatasetArg,
    robot: Annotated[str, typer.Option("--robot", help="the robot to calibrate (its built-in values are the start; "
                                       "ROBOT@NAME starts from a calibration)")],
    holdout: Annotated[float, typer.Option("--holdout", min=0.0, max=0.9, help="share of episodes held out of the "
                                           "fit, to measure it on")] = 0.2,
    name: Annotated[str | None, typer.Option("--name", help="the calibration's name (default: ROBOT-DATASET)")] = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the held-out draw")] = 0,
    arm: Annotated[list[str] | None, typer.Option("--arm", help="fit only this arm (repeatable; default: every "
                                                  "arm)", show_default=False)] = None,
    iterations: Annotated[int, typer.Option("--iterations", min=1, help="optimiser iterations per arm and "
                                            "latency")] = 30,
) -> None:
    """Fit per-joint servo gains, joint damping, armature, friction loss, each arm's gravity-compensation share
    and the command latency (ticks) so that the twin, stepped with the recordings' commands, reproduces their
    measured joints. Writes specs/calibrations/NAME.yaml (its dynamics section), NAME.dynamics.json and
    NAME.dynamics.png; a robot takes it as ROBOT@NAME or --calibration NAME.

    Example: [cyan]x2 calibrate dynamics --robot aloha data/lab_recordings --name lab1[/cyan]
    """
    path = dataset_arg(dataset)
    with progress("calibrating", "") as update:
        def note(message: str) -> None:
            update(0, None, note=message)
            if not console.is_terminal:
                console.print(message)

        run = calibrate_dynamics(path, robot, holdout, name, seed, note, iterations, tuple(arm or ()))
    result = run.result
    figures = Table(title=f"TCP position error (mm) and joint RMS (rad), latency {result.latency_ticks} ticks",
                    title_justify="left")
    for col in ("trajectories", "", "median", "p95", "max", "joint RMS"):
        figures.add_column(col, justify="right")
    for part in ("fitted", "held_out"):
        for when in ("before", "after"):
            f = run.summary[when]
            if math.isnan(f.get(f"{part}_tcp_median_mm", math.nan)):
                continue
            figures.add_row(part.replace("_", " "), when, *(f"{f[f'{part}_tcp_{s}_mm']:.3f}" for s in
                                                            ("median", "p95", "max")),
                            f"{f[f'{part}_joint_rms_rad']:.2e}")
    console.print(figures)
    params = Table(title="parameters (95 % confidence half-width)", title_justify="left")
    for col in ("parameter", "nominal", "fitted", "+-"):
        params.add_column(col, justify="right")
    for p in result.params:
        params.add_row(p.name, f"{p.nominal:.4g}", f"{p.value:.4g}",
                       "held" if math.isnan(p.interval) else
                       f"{p.interval:.2g}" if math.isfinite(p.interval) else "not identifiable")
    console.print(params)
    console.print(f"{result.steps} physics steps simulated; wrote {run.path}, {run.report.name}, {run.picture.name}")
    console.print(f"next: [cyan]x2 collect waypoints --robot {robot.split('@')[0]}@{run.path.stem}[/cyan]")
