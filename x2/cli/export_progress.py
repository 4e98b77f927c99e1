"""How `x2 export ...` shows an export's progress: a bar at a terminal; elsewhere (a log, `make demo`) a
plain line at each phase and every few seconds, so a long render and encode never looks hung."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from x2.export.request import ExportProgress, ProgressCallback

LINE_EVERY_S = 5.0


@contextlib.contextmanager
def export_progress(console: Console, on_plan: Callable[[ExportProgress], None] | None = None
                    ) -> Iterator[ProgressCallback]:
    """A progress callback for one export; `on_plan` hears the "planned" report (what will be exported)."""
    if console.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=console, transient=True) as bar:
            job = bar.add_task("exporting frames", total=None)

            def draw(step: ExportProgress) -> None:
                if step.phase == "planned" and on_plan is not None:
                    on_plan(step)
                bar.update(job, description=step.phase, total=step.frames, completed=step.frames_done)

            yield draw
        return
    yield _lines(console, on_plan)


def _lines(console: Console, on_plan: Callable[[ExportProgress], None] | None) -> ProgressCallback:
    last: dict[str, Any] = {"phase": "", "at": 0.0}

    def write(step: ExportProgress) -> None:
        if step.phase == "planned":
            if on_plan is not None:
                on_plan(step)
            return
        now = time.monotonic()
        if step.phase == last["phase"] and now - last["at"] < LINE_EVERY_S:
            return
        last["phase"], last["at"] = step.phase, now
        console.print(f"export: {step.phase}: {step.episodes_done}/{step.episodes} episodes, "
                      f"{step.frames_done}/{step.frames} frames", soft_wrap=True, highlight=False)

    return write
