"""The one place where command groups are mounted on the root app."""

from __future__ import annotations

import typer


def mount(app: typer.Typer) -> None:
    from x2.cli import (
        collect,
        datasets,
        devices,
        export,
        export_lerobot,  # noqa: F401  (registers `x2 export lerobot` on export.app)
        label,
        replay,
        specs,
        synth,
        teleop,
    )

    app.add_typer(specs.robots_app)
    app.add_typer(specs.tasks_app)
    collect.app.command("teleop")(teleop.teleop)
    app.add_typer(collect.app)
    app.add_typer(datasets.app)
    app.add_typer(devices.app)
    app.add_typer(export.app)
    app.command("label")(label.label)
    app.command("replay")(replay.replay)
    app.command("synth")(synth.synth)
