"""The `x2` root command: a thin root that mounts one group per noun."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from x2.cli._common import debug_enabled, err_console, run_app

app = typer.Typer(
    name="x2",
    help="Robot-manipulation training data from a MuJoCo green-booth twin.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _mount() -> None:
    from x2.cli import groups

    groups.mount(app)


def main() -> None:
    _mount()
    try:
        run_app(app)
    except Exception as exc:  # last resort: a bug, not a user mistake
        if debug_enabled():
            raise
        err_console.print(f"[bold red]internal error:[/bold red] {escape(f'{type(exc).__name__}: {exc}')} "
                          "(run with X2_DEBUG=1 for the traceback)", soft_wrap=True)
        sys.exit(1)
