"""The one place where command groups are mounted on the root app."""

from __future__ import annotations

import typer


def mount(app: typer.Typer) -> None:
    import x2.cli.datasets_view  # noqa: F401  (registers `x2 datasets view` on datasets.app)
    from x2.cli import collect, datasets, devices, label, replay, specs, synth, teleop

    app.add_typer(specs.robots_app)
    app.add_typer(specs.tasks_app)
    collect.app.command("teleop")(teleop.teleop)
    app.add_typer(collect.app)
    app.add_typer(datasets.app)
    app.add_typer(devices.app)
    app.command("label")(label.label)
    app.command("replay")(replay.replay)
    app.command("synth")(synth.synth)
