"""`x2 eval correlate`: x2's success rates against a real robot's, per task and overall. Parsing and printing
only: x2.eval.correlate matches and computes, x2.eval.agreement_picture writes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from x2.base.errors import PolicyError
from x2.cli._common import console
from x2.cli.eval import eval_app
from x2.datasets import workspace
from x2.eval.agreement_picture import write_agreement
from x2.eval.correlate import AgreementRecord, CorrelateReport, correlate, load_sources
from x2.eval.evaluate import REPORT_JSON
from x2.eval.real_table import read_real_table


@eval_app.command("correlate")
def correlate_command(
    real: Annotated[Path, typer.Option("--real", help="CSV: policy, task, real_successes, real_trials (and an "
                                       "optional note)", show_default=False)],
    reports: Annotated[list[Path] | None, typer.Argument(
        help="x2 eval reports: an eval_report.json, its run folder, or a dataset of x2 eval rollouts (default: "
        "every run folder under ./data with an eval_report.json)", show_default=False)] = None,
    out: Annotated[str | None, typer.Option("--out", help="folder for agreement.json and agreement.png: a name "
                                            "under ./data or a path (default: data/agreement-<CSV name>)",
                                            show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="the bootstrap's seed (same seed, same interval)")] = 0,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=100, help="bootstrap resamples of the policies")] = 2000,
    split: Annotated[str, typer.Option("--split", help="x2 episodes to count: train (in-distribution), eval "
                                       "(held out) or both")] = "both",
) -> None:
    """Agreement of x2's success rates with a real robot's: Pearson r (bootstrap 95 % interval over policies),
    SIMPLER's MMRV, Spearman and Kendall, per task and overall, and the scatter as a PNG.

    A CSV `policy` names an x2 policy by its identity (what x2 eval printed, e.g. hold or a checkpoint's folder),
    its digest (or its first 8+ characters), or the run folder of a report holding only it; a name that
    matches none or several is refused. At least 3 policies are needed. docs/evaluation.md says how to read it.

    Example: [cyan]x2 eval correlate --real lab/real.csv data/eval-pick_place-act data/eval-pick_place-hold ...[/cyan]

    Every run under ./data, another seed, more resamples:
    [cyan]x2 eval correlate --real real.csv --seed 1 --bootstrap 10000[/cyan]
    """
    if split not in ("train", "eval", "both"):
        raise PolicyError(f"--split: found {split!r}; allowed: train, eval or both")
    rows = read_real_table(real)
    paths = list(reports or sorted(p.parent for p in workspace.data_dir().glob(f"*/{REPORT_JSON}")))
    if not paths:
        raise PolicyError(f"reports: found none given and no run folder with an {REPORT_JSON} under "
                          f"{workspace.data_dir()}; allowed: x2 eval reports, their run folders or rollout datasets")
    splits = ("train", "eval") if split == "both" else (split,)
    report = correlate(rows, load_sources(paths), str(real), splits, bootstrap, seed)
    root = workspace.resolve_output(out, default_name=f"agreement-{real.stem}")
    json_path, png_path = write_agreement(report, root)
    _show(report)
    console.print(f"agreement: {json_path}, {png_path}")


def _show(report: CorrelateReport) -> None:
    points = Table(title="success rates: x2 (sim) against real", title_justify="left")
    for name in ("policy", "task", "x2", "real", "x2 policy"):
        points.add_column(name, justify="right" if name in ("x2", "real") else "left")
    for p in report["points"]:
        points.add_row(p["policy"], p["task"],
                       f"{p['sim_rate']:.0%} ({p['sim_successes']}/{p['sim_trials']})",
                       f"{p['real_rate']:.0%} ({p['real_successes']}/{p['real_trials']})",
                       p["x2_policy"]["identity"])
    console.print(points)
    table = Table(title=f"agreement (bootstrap: {report['bootstrap']} resamples of the policies, seed "
                  f"{report['seed']})", title_justify="left")
    for name in ("", "policies", "Pearson r", "95 % interval", "MMRV", "Spearman", "Kendall tau-b", "note"):
        table.add_column(name, justify="left" if name in ("", "note") else "right")
    for record in (report["overall"], *report["tasks"]):
        table.add_row(*_cells(record))
    console.print(table)


def _cells(a: AgreementRecord) -> list[str]:
    lo, hi = a["pearson_ci95"]
    return [a["scope"], str(a["policies"]), _num(a["pearson"]),
            "-" if lo is None or hi is None else f"{lo:.3f} to {hi:.3f}", _num(a["mmrv"]), _num(a["spearman"]),
            _num(a["kendall_tau_b"]), a["note"]]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
