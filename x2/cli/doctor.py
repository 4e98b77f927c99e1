"""`x2 doctor`: what this machine can do for x2."""

from __future__ import annotations

import contextlib

import typer
from rich.markup import escape

from x2.cli._common import console
from x2.datasets.workspace import data_dir
from x2.doctor.checks import MISSING, OK, WARN, diagnose

_STYLE = {OK: "green", MISSING: "red", WARN: "yellow"}
_ESSENTIAL = ("renderer", "python")  # without these no x2 command that simulates or renders works


def doctor() -> None:
    """Check the renderer, Python and the extras, SteamVR, serial ports, the display and free disk.

    One line each: ok, missing (with the fix), warn, or - (nothing there, nothing needs it). Exits 1
    when the renderer or Python is missing.

    Example: [cyan]x2 doctor[/cyan]
    """
    status = console.status("checking the renderer") if console.is_terminal else contextlib.nullcontext()
    with status as spinner:
        findings = diagnose(data_dir(), progress=lambda name: spinner.update(f"checking {name}") if spinner else None)
    width = max(len(f.name) for f in findings)
    for f in findings:
        style = _STYLE.get(f.status, "dim")
        fix = f" -> fix: {escape(f.fix)}" if f.fix and f.status != OK else ""
        console.print(f"[{style}]{f.status:7s}[/{style}] {f.name:{width}s}  {escape(f.detail)}{fix}")
    if any(f.failed and f.name in _ESSENTIAL for f in findings):
        raise typer.Exit(1)
