"""The one place where command groups are mounted on the root app."""

from __future__ import annotations

import typer


def mount(app: typer.Typer) -> None:
    from x2.cli import specs

    app.add_typer(specs.robots_app)
    app.add_typer(specs.tasks_app)
    # datasets mounted once x2.cli.datasets lands
