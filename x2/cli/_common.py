"""Shared CLI pieces: the console, the error translator and shared option types."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import typer
from rich.console import Console

from x2.errors import X2Error

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


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


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one error line and return the Exit to raise."""
    err_console.print(f"[bold red]error:[/bold red] {message}", soft_wrap=True)
    return typer.Exit(code)


def translate_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn X2Error into one line and exit 2; tracebacks only with X2_DEBUG=1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except X2Error as exc:
            if debug_enabled():
                raise
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            sys.exit(130)

    return wrapper
