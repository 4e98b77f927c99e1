"""The `x2` root command: a thin root that mounts one group per noun."""

from __future__ import annotations

import os
import sys

import typer
from rich.markup import escape

from x2.cli._common import debug_enabled, err_console, run_app
from x2.cli.groups import RootGroup

app = typer.Typer(
    name="x2",
    cls=RootGroup,
    help="Robot-manipulation training data from a MuJoCo green-booth twin.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _mount() -> None:
    from x2.cli.groups import mount

    mount(app)


def main() -> None:
    _mount()
    try:
        run_app(app)
    except SystemExit as done:
        _exit_without_hdf5_flush(done.code)
        raise
    except Exception as exc:  # last resort: a bug, not a user mistake
        if debug_enabled():
            raise
        err_console.print(f"[bold red]internal error:[/bold red] {escape(f'{type(exc).__name__}: {exc}')} "
                          "(run with X2_DEBUG=1 for the traceback)", soft_wrap=True)
        _exit_without_hdf5_flush(1)
        sys.exit(1)


def _exit_without_hdf5_flush(code: object) -> None:
    """After a failed HDF5 write or close (x2.files.hdf5_guard) the library's exit-time cleanup may crash the
    process after its error line: end it here instead, with the command's own exit code."""
    guard = sys.modules.get("x2.files.hdf5_guard")  # not imported: no HDF5 file was written
    if guard is not None and guard.in_doubt():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else (0 if code is None else 1))
