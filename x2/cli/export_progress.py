"""How `x2 export ...` reports an export's progress through the one progress display (x2/cli/progress.py):
each phase (writing, reading back, ...) gets a line as it starts off a terminal, so a long render and encode
never looks hung."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from x2.cli.progress import progress
from x2.export.request import ExportProgress, ProgressCallback


@contextlib.contextmanager
def export_progress(on_plan: Callable[[ExportProgress], None] | None = None) -> Iterator[ProgressCallback]:
    """A progress callback for one export; `on_plan` hears the "planned" report (what will be exported)."""
    with progress("export", "frames") as update:
        def report(step: ExportProgress) -> None:
            if step.phase == "planned":
                if on_plan is not None:
                    on_plan(step)
                return
            update(step.frames_done, step.frames, f"{step.episodes_done}/{step.episodes} episodes", step.phase)

        yield report
