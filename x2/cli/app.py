"""The `x2` root command: a thin root that mounts one group per noun."""

from __future__ import annotations

import os
import sys

import typer
from rich.markup import escape

from x2.cli._common import debug_enabled, err_console, run_app
from x2.disk import is_refusal

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
    sys.unraisablehook, sys.excepthook = _quiet_unraisable, _quiet_excepthook
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


def _failed_hdf5_write(exc: BaseException | None) -> bool:
    """An h5py object freed while its file's writes fail (a full or failing disk) reports it as a printed
    traceback ("Exception ignored in ... ObjectID.__dealloc__"), not as an exception x2 could catch; the same
    failure reaches x2 at the file's next flush or close, and ends in the command's one error line."""
    return isinstance(exc, RuntimeError) and is_refusal(exc) and "file write failed" in str(exc)


def _quiet_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    if not _failed_hdf5_write(unraisable.exc_value):
        sys.__unraisablehook__(unraisable)


def _quiet_excepthook(kind: type[BaseException], value: BaseException, tb: object) -> None:
    # Cython prints an ignored exception's traceback through sys.excepthook before the unraisable hook.
    if not _failed_hdf5_write(value):
        sys.__excepthook__(kind, value, tb)  # type: ignore[arg-type]


def _exit_without_hdf5_flush(code: object) -> None:
    """A file HDF5 failed to close (x2.hdf5_files) would be flushed again at interpreter exit and
    crash the process after its error line: end it here instead, with the command's own exit code."""
    files = sys.modules.get("x2.hdf5_files")  # not imported: no HDF5 file was written
    if files is not None and files.unclosed_files():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else (0 if code is None else 1))
