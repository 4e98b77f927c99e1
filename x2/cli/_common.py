"""Shared CLI pieces: the console, the error translator and shared option types."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from functools import wraps

import typer
from rich.console import Console
from rich.markup import escape

from x2.datasets import Dataset, remember_dataset, resolve_dataset
from x2.disk import is_refusal, refused
from x2.errors import X2Error

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


def typer_group(name: str, help: str, examples: str = "") -> typer.Typer:
    """A command group with rich help panels and an examples epilog."""
    epilog = f"[bold]Examples[/bold]\n\n{examples}" if examples else None
    return typer.Typer(
        name=name,
        help=help,
        epilog=epilog,
        rich_markup_mode="rich",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


def run_app(app: typer.Typer) -> None:
    """Run the root command. At a terminal typer draws usage errors (a bad option value, an unknown
    option) in a rich panel; off a terminal that panel would hard-wrap the message at 80 columns on
    typer's own console, so there the usage line, the help hint and one `error:` line are printed here."""
    if err_console.is_terminal:
        app()
        return
    try:
        code = app(standalone_mode=False)  # the code of a typer.Exit, None after success
    except typer.TyperException as exc:  # typer's click errors: usage errors exit 2
        # A group run without a command printed its help already (typer tests the class name too).
        if type(exc).__name__ != "NoArgsIsHelpError":
            ctx = getattr(exc, "ctx", None)
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


def translate_errors[**P, R](fn: Callable[P, R]) -> Callable[P, R]:
    """Turn X2Error into one line and exit 2; tracebacks only with X2_DEBUG=1."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except X2Error as exc:
            if debug_enabled():
                raise
            raise fail(str(exc), exc.exit_code) from None
        except (OSError, RuntimeError) as exc:
            # The machine said no where no writer put it into words (it may be a read, too): never a bug.
            if debug_enabled() or not is_refusal(exc):
                raise
            if getattr(exc, "errno", None) == errno.ENOENT:
                raise fail(f"{getattr(exc, 'filename', None) or exc}: path: found no such file or folder; "
                           "allowed: an existing path") from None
            error = refused(exc, None, "everything committed before it is intact (x2 renames finished files "
                                       "into place, so a failed write leaves no half-made one)", doing="at")
            raise fail(str(error), error.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            sys.exit(130)

    return wrapper


def open_dataset_arg(dataset: str | None) -> Dataset:
    """Resolve, open and remember a dataset; say which one when it was not named (first output line)."""
    path = resolve_dataset(dataset)
    console.print(f"dataset: {path}" + ("" if dataset else " (last used)"))
    ds = Dataset.open(path)
    remember_dataset(path)
    return ds
