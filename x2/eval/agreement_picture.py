"""`x2 eval correlate`'s outputs: agreement.json and the scatter agreement.png (sim rate against real rate,
each point with its Wilson 95 % interval both ways, the identity line and the fitted line, policies labelled)."""

from __future__ import annotations

import io
from pathlib import Path

from x2.eval.correlate import CorrelateReport
from x2.eval.runner import dumps
from x2.files.atomic import write_bytes

AGREEMENT_JSON, AGREEMENT_PNG = "agreement.json", "agreement.png"


def write_agreement(report: CorrelateReport, out: Path) -> tuple[Path, Path]:
    """Both files, each written whole under a temporary name and renamed into place."""
    picture = draw_agreement(report)
    out.mkdir(parents=True, exist_ok=True)
    write_bytes(out / AGREEMENT_JSON, dumps(report).encode())
    write_bytes(out / AGREEMENT_PNG, picture)
    return out / AGREEMENT_JSON, out / AGREEMENT_PNG


def draw_agreement(report: CorrelateReport) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = report["points"]
    tasks = sorted({p["task"] for p in points})
    several = len(tasks) > 1
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(6.4, 6.4))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="identity (sim = real)")
    for i, task in enumerate(tasks):
        mine = [p for p in points if p["task"] == task]
        xs = [p["sim_rate"] for p in mine]
        ys = [p["real_rate"] for p in mine]
        xerr = [[p["sim_rate"] - p["sim_ci95"][0] for p in mine], [p["sim_ci95"][1] - p["sim_rate"] for p in mine]]
        yerr = [[p["real_rate"] - p["real_ci95"][0] for p in mine],
                [p["real_ci95"][1] - p["real_rate"] for p in mine]]
        ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="o", capsize=3, color=colours(i % 10), label=task,
                    elinewidth=1, markersize=6)
        for p in mine:
            ax.annotate(p["policy"] + (f" ({task})" if several else ""), (p["sim_rate"], p["real_rate"]),
                        textcoords="offset points", xytext=(5, 5), fontsize=8)
    overall = report["overall"]
    if overall["fit"] is not None:
        slope, intercept = overall["fit"]
        ax.plot([0, 1], [intercept, slope + intercept], color="black", linewidth=1,
                label=f"fit: real = {slope:.2f} sim + {intercept:.2f}")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_aspect("equal")
    ax.set_xlabel("x2 (sim) success rate, Wilson 95 %")
    ax.set_ylabel("real success rate, Wilson 95 %")
    ax.set_title(_title(report), fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})  # no version stamp: same input, same bytes
    plt.close(fig)
    return buffer.getvalue()


def _title(report: CorrelateReport) -> str:
    o = report["overall"]
    lo, hi = o["pearson_ci95"]
    r = "r undefined" if o["pearson"] is None else (
        f"Pearson r = {o['pearson']:.3f}" + ("" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"))
    mmrv = "-" if o["mmrv"] is None else f"{o['mmrv']:.3f}"
    return f"{o['points']} points, {o['policies']} policies: {r}, MMRV {mmrv}"
