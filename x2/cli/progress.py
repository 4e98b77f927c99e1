"""Progress of a long command, one way for all: a live bar at a terminal; off one (a log, a pipe, CI) a plain
line on stdout every few seconds, so that a log never goes silent for minutes. Not on stderr: a command that
fails says so there in exactly one line, however long it ran before."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from x2.cli._common import console

LINE_EVERY_S = 10.0


class Update(Protocol):
    def __call__(self, done: int, total: int | None = None, note: str = "", stage: str = "") -> None: ...


def progress_line(what: str, done: int, total: int | None, unit: str = "", note: str = "", stage: str = "") -> str:
    return f"{what}: {f'{stage}: ' if stage else ''}{done}/{'?' if total is None else total}" \
        f"{f' {unit}' if unit else ''}" + (f" ({note})" if note else "")


@contextmanager
def progress(what: str, unit: str = "", below: Callable[[], RenderableType] | None = None,
             every_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> Iterator[Update]:
    """Yields update(done, total, note, stage). At a terminal a bar (with `below` drawn under it and kept at
    the end, when given; else gone at the end); off one a line at most every `every_s` seconds, none for a
    job shorter than that, and, once it has run that long, a line at once whenever the stage changes (a
    long job's phases). `every_s` defaults to LINE_EVERY_S."""
    if console.is_terminal:
        count = "{task.completed}/{task.total}" + (f" {unit}" if unit else "")
        bar = Progress(TextColumn(what), BarColumn(), TextColumn(count), TextColumn("{task.fields[note]}"),
                       TimeRemainingColumn(), console=console, transient=below is None)
        job = bar.add_task(what, total=None, note="")

        def redraw(done: int, total: int | None = None, note: str = "", stage: str = "") -> None:
            bar.update(job, completed=done, total=total, note=f"{stage}: {note}" if stage and note else stage or note)

        view = bar if below is None else Live(get_renderable=lambda: Group(bar, below()), console=console,
                                              refresh_per_second=4)
        with view:
            yield redraw
        return
    interval = LINE_EVERY_S if every_s is None else every_s
    started = clock()
    due, last_stage = started + interval, ""

    def line(done: int, total: int | None = None, note: str = "", stage: str = "") -> None:
        nonlocal due, last_stage
        now = clock()
        # A short job stays quiet.
        if now >= due or (stage != last_stage and now - started >= interval):
            due, last_stage = now + interval, stage
            console.print(progress_line(what, done, total, unit, note, stage), markup=False)

    yield line
