"""The one place where command groups are mounted on the root app."""

from __future__ import annotations

import importlib

import typer

# Modules that add commands to a group defined elsewhere (`x2 export <format>`, `x2 datasets <verb>`):
# importing one registers its commands.
_COMMAND_MODULES = ("export_lerobot", "export_formats", "datasets_manage", "datasets_view")


def mount(app: typer.Typer) -> None:
    from x2.cli import augment, collect, datasets, devices, doctor, export, label, render, replay, specs, synth, teleop

    for name in _COMMAND_MODULES:
        importlib.import_module(f"x2.cli.{name}")
    app.add_typer(specs.robots_app)
    app.add_typer(specs.tasks_app)
    collect.app.command("teleop")(teleop.teleop)
    app.add_typer(collect.app)
    app.add_typer(datasets.app)
    app.add_typer(devices.app)
    app.add_typer(export.app)
    app.add_typer(augment.app)
    app.command("label")(label.label)
    app.command("render")(render.render)
    app.command("replay")(replay.replay)
    app.command("synth")(synth.synth)
    app.command("doctor")(doctor.doctor)
