"""The operator panel: a rich renderable built from `TeleopStatus` and the device's health.

Built by rich's refresh thread (Live(get_renderable=...), <= 4 Hz), never in the control thread."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from rich.color import Color
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from x2.base.arrays import Image
from x2.devices import DeviceHealth
from x2.teleop.status import TeleopStatus

LIFECYCLE_KEYS = ("→ next (save)", "← re-record", "⌫ discard", "Esc quit (save)")


def _dag_line(st: TeleopStatus) -> Text:
    line = Text()
    for i, node in enumerate(st.nodes):
        if i:
            line.append("  ·  ", style="dim")  # topological order: not every neighbour pair is an edge
        if node in st.done_nodes:
            line.append(f"✓ {node}", style="green")
        elif node in st.active_nodes:
            line.append(f"▶ {node}", style="bold reverse yellow")
        else:
            line.append(node, style="dim")
    return line


def _columns(lines: Sequence[str], n: int) -> Table:
    table = Table.grid(padding=(0, 3))
    rows = -(-len(lines) // n)
    for _ in range(n):
        table.add_column(style="dim")
    for r in range(rows):
        table.add_row(*[lines[c * rows + r] if c * rows + r < len(lines) else "" for c in range(n)])
    return table


STYLE_CACHE = 4096


class Picture:
    """An RGB image in the terminal: each character cell shows two pixels, the upper half block's
    foreground colour on the lower one's background. Colours are quantised to 16 levels a channel and
    their styles cached, so a frame costs a few milliseconds to build and to print. The cache is kept
    small: every Style is an object the garbage collector walks in a full collection, and a cache of
    65536 of them made one such pass take 91 ms, stalling the control thread (bench/RESULTS.md)."""

    _styles: dict[tuple[int, ...], Style] = {}

    def __init__(self, image: Image):
        q = (np.asarray(image, np.uint8) >> 4) * 17  # 0, 17, ..., 255
        h = q.shape[0] - q.shape[0] % 2
        self.width = q.shape[1]
        pairs = np.concatenate([q[0:h:2], q[1:h:2]], axis=2).tolist()  # (rows, width, 6): top rgb, bottom rgb
        styles = self._styles
        self.lines = []
        for row in pairs:
            line = []
            for px in row:
                key = tuple(px)
                style = styles.get(key)
                if style is None:
                    if len(styles) > STYLE_CACHE:  # bounded: a changing scene must not grow it forever
                        styles.clear()
                    style = styles[key] = Style(color=Color.from_rgb(*key[:3]), bgcolor=Color.from_rgb(*key[3:]))
                line.append(Segment("▀", style))
            self.lines.append(line)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield from line
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.width, self.width)


def panel(st: TeleopStatus, health: Callable[[], DeviceHealth], keymap: Sequence[str] = (),
          picture: Callable[[], Picture | None] | None = None) -> RenderableType:
    h = health()
    lat = np.fromiter(st.lateness_ms, float) if st.lateness_ms else np.zeros(1)
    p50, p99, worst = np.percentile(lat, 50), np.percentile(lat, 99), lat.max()
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    target = f"/{st.episodes_target}" if st.episodes_target else ""
    grid.add_row("episode", f"{st.episode}  (saved {st.committed}{target}, success {st.successes}, "
                            f"dropped {st.discarded})  seed {st.seed}  {st.phase}")
    grid.add_row("task", f"{st.task} on {st.robot}: [italic]{st.instruction}[/italic]")
    grid.add_row("subtask", _dag_line(st))
    if st.failure:
        grid.add_row("failed", Text(st.failure, style="red"))
    if st.success_since is not None:
        grid.add_row("", Text("task complete: the episode ends in a moment (→ to end now)", style="green"))
    grid.add_row("time", f"{st.tick / max(st.fps, 1):6.1f} s  ({st.tick} ticks)")
    rate = st.achieved_hz()
    rate_style = "green" if rate >= 0.99 * st.fps or rate == 0 else "red"
    grid.add_row("loop", Text.assemble((f"{rate:5.1f} Hz", rate_style),
                                       f" of {st.fps}  lateness p50 {p50:.1f} / p99 {p99:.1f} / max {worst:.1f} ms"
                                       f"  overruns {st.overruns}"))
    age = "-" if not np.isfinite(h.age_s) else f"{h.age_s * 1e3:.0f} ms"
    dev_style = "green" if h.connected and np.isfinite(h.age_s) and h.age_s < 0.25 else "red"
    grid.add_row("device", Text.assemble((f"{st.device}", dev_style),
                                         f"  {h.rate_hz:.0f} Hz  age {age}  drops {h.drops}  {h.detail}"))
    grid.add_row("control", f"{st.mapper}" + (f"  (safety clamped {st.clamped} ticks)" if st.clamped else ""))
    grid.add_row("keys", "   ".join(LIFECYCLE_KEYS))
    if keymap:
        grid.add_row("", _columns(keymap, 3))
    body: list[RenderableType] = [grid]
    view = picture() if picture is not None else None
    if view is not None:
        body.insert(0, view)
    if st.messages:
        body.append(Text("\n".join(st.messages), style="cyan"))
    return Panel(Group(*body), title="x2 collect teleop", border_style="blue")
