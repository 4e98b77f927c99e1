"""Shared CLI pieces: the consoles, error lines, the root runner and the opening of a dataset argument."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from x2.datasets import Dataset, remember_dataset, resolve_dataset

if TYPE_CHECKING:  # typer vendors click
    from typer._click.core import Context as ClickContext

# Off a terminal (a pipe, a file, CI) x2's output is read by scripts line by line, so nothing may be
# hard-wrapped. Rich would lay everything out at 80 columns there (no terminal to ask); instead:
# - soft_wrap: print() never breaks or crops a line, however long (a path, an error message);
# - a width no real line reaches, so a Table gives every column its content's full width instead of
#   wrapping cells (and its title, which rich wraps to the table's width otherwise).
# The width is only an upper bound as long as nothing expands to fill it: no Rule, no Panel or
# Table with expand=True, no Progress(expand=True) may be printed off a terminal. A Live view
# prints its final frame (or nothing, when transient) there. Help screens stay typer's, 80 wide.
# "Terminal" is rich's judgement (isatty, or FORCE_COLOR / TTY_COMPATIBLE=1 asking for terminal output),
# the same one the commands use to choose a live view.
UNWRAPPED_WIDTH = 100_000


def _console(stderr: bool = False) -> Console:
    out = Console(stderr=stderr, highlight=False)
    if not out.is_terminal:
        out.soft_wrap = True
        out.width = UNWRAPPED_WIDTH
    return out


console = _console()
err_console = _console(stderr=True)


def debug_enabled() -> bool:
    return os.environ.get("X2_DEBUG", "") not in ("", "0")


def run_app(app: typer.Typer) -> None:
    """Run the root command. At a terminal typer draws usage errors (a bad option value, an unknown
    option) in a rich panel; off a terminal that panel would hard-wrap the message at 80 columns on
    typer's own console, so there the usage line, the help hint and one `error:` line are printed here."""
    if err_console.is_terminal:
        app()
        return
    try:
        code: object = app(standalone_mode=False)  # the code of a typer.Exit, None after success
    except typer.TyperException as exc:  # typer's click errors: usage errors exit 2
        # A group run without a command printed its help already (typer tests the class name too).
        if type(exc).__name__ != "NoArgsIsHelpError":
            ctx: ClickContext | None = getattr(exc, "ctx", None)  # a usage error's; other errors have none
            if ctx is not None:
                err_console.print(ctx.get_usage(), markup=False)
                err_console.print(f"Try '{ctx.command_path} --help' for help.", markup=False)
            _error_line(exc.format_message())
        sys.exit(exc.exit_code)
    except typer.Abort:  # e.g. end of input at a prompt
        err_console.print("Aborted.")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def _error_line(message: str) -> None:
    # The message is plain text: a path or an allowed form like master-arm[:[dynamixel|feetech:]PORT]
    # is not rich markup. soft_wrap: the line stays whole at a terminal too.
    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one error line and return the Exit to raise."""
    _error_line(message)
    return typer.Exit(code)


def dataset_arg(dataset: str | None) -> Path:
    """Resolve a dataset argument and name it on the first output line, saying when it was not given."""
    path = resolve_dataset(dataset)
    console.print(f"dataset: {path}" + ("" if dataset else " (last used)"))
    return path


def open_dataset_arg(dataset: str | None) -> Dataset:
    """Resolve, name (first output line), open and remember a dataset."""
    path = dataset_arg(dataset)
    ds = Dataset.open(path)
    remember_dataset(path)
    return ds
