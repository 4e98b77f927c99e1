"""The report as a picture: success (with its 95 % interval) and each subtask's completion, in-distribution
beside out-of-distribution, one panel per task."""

from __future__ import annotations

from pathlib import Path

from x2.eval.report import EvalReport
from x2.files.atomic import write_bytes

COLOURS = {"train": "#4c72b0", "eval": "#dd8452"}
LABELS = {"train": "in-distribution (train)", "eval": "out-of-distribution (eval)"}


def draw_report(report: EvalReport, out: Path) -> Path:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = report["tasks"]
    fig, axes = plt.subplots(len(tasks), 1, figsize=(8, 3.2 * max(1, len(tasks))), squeeze=False)
    names = ", ".join(str(p.get("identity")) for p in report.get("policies", [])) or "?"
    for ax, (task, by_split) in zip(axes[:, 0], tasks.items(), strict=True):
        nodes = list(dict.fromkeys(n for v in by_split.values() for n in v["subtask_completion"]))
        labels = ["success", *nodes]
        width = 0.8 / max(1, len(by_split))
        for i, (split, v) in enumerate(by_split.items()):
            values = [v["success_rate"] or 0.0, *(v["subtask_completion"].get(n, 0.0) for n in nodes)]
            xs = [x + (i - (len(by_split) - 1) / 2) * width for x in range(len(labels))]
            lo, hi = v["success_ci95"]
            err = [[max(0.0, values[0] - lo), *[0.0] * len(nodes)], [max(0.0, hi - values[0]), *[0.0] * len(nodes)]]
            ax.bar(xs, values, width, yerr=err, capsize=3, color=COLOURS.get(split, "grey"),
                   label=f"{LABELS.get(split, split)}: n = {v['episodes']}, progress {v['mean_progress']:.2f}")
        ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
        ax.set_ylim(0, 1.35)  # (room above the bars for the legend)
        ax.set_ylabel("rate")
        ax.set_title(f"{task}: {names}", fontsize=10)
        ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    write_bytes(out, buffer.getvalue())
    return out
