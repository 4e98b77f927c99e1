"""The click group every x2 group is built with: errors are translated once, around the root command, and
flags are shown as flags in help."""

from __future__ import annotations

import errno
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from typer.core import TyperGroup, TyperOption

from x2.base.errors import X2Error
from x2.cli._common import debug_enabled, err_console, fail
from x2.files.disk import is_refusal, refused

if TYPE_CHECKING:  # typer vendors click: its base classes take the vendored Context, Command and Parameter
    from typer._click.core import Command as ClickCommand
    from typer._click.core import Context as ClickContext
    from typer._click.core import Parameter as ClickParameter


@contextmanager
def translated_errors() -> Iterator[None]:
    """An X2Error becomes its one line and exit code, a refusal of the machine's (a full disk, a read-only
    folder) one line and exit 2, Ctrl-C "interrupted" and exit 130; tracebacks only with X2_DEBUG=1.
    Anything else is a bug and goes on to x2.cli.app.main()."""
    try:
        yield
    except X2Error as exc:
        if debug_enabled():
            raise
        raise fail(str(exc), exc.exit_code) from None
    except (OSError, RuntimeError) as exc:
        # The machine said no where no writer put it into words (it may be a read, too): never a bug.
        if debug_enabled() or not is_refusal(exc):
            raise
        if isinstance(exc, OSError) and exc.errno == errno.ENOENT:
            where = exc.filename or exc
            raise fail(f"{where}: path: found no such file or folder; allowed: an existing path") from None
        error = refused(exc, None, "everything committed before it is intact (x2 renames finished files "
                                   "into place, so a failed write leaves no half-made one)", doing="at")
        raise fail(str(error), error.exit_code) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None


def _flags_as_flags(params: list[ClickParameter]) -> list[ClickParameter]:
    # Typer's rich help names every option's type, flags too (`--render <bool>`); a flag takes no value.
    # An empty metavar is what the help shows instead; a flag's metavar is used nowhere else.
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


def _reflowed(text: str) -> str:
    # Docstrings are wrapped for the source (110 columns); rich help would keep those breaks inside its own
    # 80-column wrapping, leaving ragged half-lines. A paragraph is one line here; an indented one (an
    # example block) keeps its lines.
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith((" ", "\b")) else " ".join(line.strip() for line in p.splitlines())
                       for p in paragraphs)


class X2Group(TyperGroup):
    """Errors translated at the root, whichever group a command hangs under and whether `x2` runs at a
    terminal, off one or under a test runner. Help lists the commands in `command_order`, then the others in
    the order they were added (typer adds a group's commands before its subgroups)."""

    command_order: tuple[str, ...] = ()

    def list_commands(self, ctx: ClickContext) -> list[str]:
        rank = {name: i for i, name in enumerate(self.command_order)}
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, len(rank)))

    def invoke(self, ctx: ClickContext) -> object:  # whatever the command's callback returned
        if ctx.parent is not None:  # a group under the root: the root translates
            return super().invoke(ctx)
        with translated_errors():
            return super().invoke(ctx)

    def get_params(self, ctx: ClickContext) -> list[ClickParameter]:
        return _flags_as_flags(super().get_params(ctx))

    def get_command(self, ctx: ClickContext, cmd_name: str) -> ClickCommand | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None and not isinstance(cmd, X2Group):
            _flags_as_flags(cmd.get_params(ctx))
            if cmd.help:
                cmd.help = _reflowed(cmd.help)
        return cmd


def typer_group(name: str, help: str, examples: str = "") -> typer.Typer:
    """A command group with rich help panels and an examples epilog."""
    epilog = f"[bold]Examples[/bold]\n\n{examples}" if examples else None
    return typer.Typer(
        name=name,
        help=help,
        epilog=epilog,
        cls=X2Group,
        rich_markup_mode="rich",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
