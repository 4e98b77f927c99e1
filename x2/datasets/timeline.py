"""PNG timeline of one episode: subtask segments as coloured bars over joint-position curves
(the layout of the X2Real report's figure 6), with completion events and the failure marked. An episode
with per-arm labels and two arms gets one lane of bars per arm, so subtasks in progress at once show.

Uses matplotlib's object API with the Agg canvas, never pyplot, so no global backend state is touched
and it runs headless inside a CLI or a worker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from x2 import format as fmt
from x2.datasets.episode import Episode
from x2.files.atomic import replacing


def plot_timeline(episode: Episode, out: str | Path, title: str | None = None) -> Path:
    """Write the timeline PNG atomically (temp file + rename) and return its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(out)
    t = np.asarray(episode[fmt.TIMESTAMPS], dtype=float)
    t = t - t[0]
    # Bars span [t[start], t[end]); the last one ends one tick after the last stamp.
    step = float(np.median(np.diff(t))) if t.size > 1 else 1.0
    edges = np.append(t, t[-1] + step)

    lanes = episode.arm_segments if len(episode.arm_names) > 1 else {}
    fig = Figure(figsize=(11, 6 + 0.4 * max(0, len(lanes) - 1)), layout="constrained")
    FigureCanvasAgg(fig)
    ax_seg, ax_q = fig.subplots(2, 1, sharex=True, height_ratios=[1 + 0.5 * max(0, len(lanes) - 1), 3])
    nodes = episode.subtask_names
    palette = [f"C{i}" for i in range(10)]
    colours = {name: palette[i % 10] for i, name in enumerate(nodes)}
    colours.update({"unfinished": "0.75", "done": "0.55"})
    # Two arms working at once: a lane per arm (top row the first arm), each with its own segments.
    rows = list(lanes.items()) or [("", episode.segments)]
    gap = 0.05 if lanes else 0.0
    for row, (_, segments) in enumerate(rows):
        y = len(rows) - 1 - row
        for seg in segments:
            start, end = edges[seg.start], edges[seg.end]
            ax_seg.broken_barh([(start, end - start)], (y + gap, 1 - 2 * gap), facecolors=colours.get(seg.node, "0.4"),
                               edgecolor="white")
            if end - start > 0.06 * edges[-1]:
                ax_seg.text((start + end) / 2, y + 0.5, seg.node, ha="center", va="center", fontsize=8,
                            clip_on=True)
    fig.suptitle(title or f"episode {episode.index}: {episode.task} "
                          f"({episode.outcome})", fontsize=10)
    if lanes:
        ax_seg.set_yticks([len(rows) - 0.5 - i for i in range(len(rows))], [f"{arm} arm" for arm, _ in rows],
                          fontsize=8)
    else:
        ax_seg.set_yticks([])
    ax_seg.set_ylim(0, len(rows))

    name = fmt.QPOS if fmt.QPOS in episode else fmt.ACTION
    values = np.asarray(episode[name], dtype=float).reshape(len(t), -1)
    labels = episode.dataset_attrs(name).get("names") or [f"{name.split('/')[-1]}[{i}]"
                                                         for i in range(values.shape[1])]
    for column, label in zip(values.T, labels, strict=False):
        ax_q.plot(t, column, linewidth=0.9, label=str(label))
    if values.shape[1] <= 16:
        ax_q.legend(fontsize=6, ncol=1, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    ax_q.set_xlabel("sim time (s)")
    ax_q.set_ylabel("joint position" if name.endswith("qpos") else "action")

    # A completion or failure at frame f is marked where frame f ends, i.e. on its segment's boundary.
    for node, frame in episode.events:
        when = edges[min(frame + 1, len(t))]
        for ax in (ax_seg, ax_q):
            ax.axvline(when, color="green", linestyle="--", linewidth=0.8)
        ax_seg.annotate(f"{node} done", (when, len(rows)), fontsize=7, color="green", rotation=30,
                        xytext=(2, 2), textcoords="offset points", annotation_clip=False)
    failure = episode.failure
    if failure is not None:
        node, frame, reason = failure
        when = edges[min(frame + 1, len(t))]
        for ax in (ax_seg, ax_q):
            ax.axvline(when, color="red", linewidth=1.4)
        ax_seg.annotate(f"failed: {node} ({reason})", (when, len(rows)), fontsize=7, color="red", rotation=30,
                        xytext=(2, 2), textcoords="offset points", annotation_clip=False)

    with replacing(out) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    return out
