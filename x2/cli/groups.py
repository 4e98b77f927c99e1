"""The one place where command groups are mounted on the root app, in the order `x2 --help` lists them:
the workflow's (make episodes, enlarge and render them, hand them to trainers), then the checks and the
look-ups."""

from __future__ import annotations

import importlib

import typer

from x2.cli.group_class import X2Group

# Modules that add commands to a group defined elsewhere (`x2 export <format>`, `x2 datasets <verb>`,
# `x2 eval correlate`): importing one registers its commands.
_COMMAND_MODULES = ("export_lerobot", "export_formats", "export_usd", "datasets_manage", "datasets_view",
                    "eval_correlate", "calibrate_dynamics")

MAKE = "Make episodes"
USE = "Use a dataset"
CHECK = "Check episodes"
EVALUATE = "Evaluate policies"
LOOK = "Robots, tasks, devices, this machine"


class RootGroup(X2Group):
    command_order = ("collect", "import", "synth", "augment", "render", "export", "datasets", "label", "replay",
                     "eval", "serve", "calibrate", "robots", "objects", "tasks", "devices", "doctor")


_MOUNTED: set[int] = set()  # id() of the apps mounted already


def mount(app: typer.Typer) -> None:
    """Every command group on `app`, once: a second call does nothing. (Typer turns the app into click commands
    on every run, so commands registered twice would be built twice per invocation: every module of the test
    suite mounts the app it imports, and in-process runs once took 20-40x their time.)"""
    if id(app) in _MOUNTED:
        return
    _MOUNTED.add(id(app))
    from x2.cli import (
        augment,
        calibrate_camera,
        collect,
        datasets,
        devices,
        doctor,
        export,
        ingest,
        label,
        objects,
        render,
        replay,
        robots,
        synth,
        tasks,
        teleop,
    )
    from x2.cli import eval as eval_cli
    from x2.cli import serve as serve_cli

    for name in _COMMAND_MODULES:
        importlib.import_module(f"x2.cli.{name}")
    collect.app.command("teleop")(teleop.teleop)
    app.add_typer(collect.app, rich_help_panel=MAKE)
    app.add_typer(ingest.app, rich_help_panel=MAKE)
    app.command("synth", rich_help_panel=MAKE)(synth.synth)
    app.add_typer(augment.app, rich_help_panel=MAKE)
    app.command("render", rich_help_panel=MAKE)(render.render)
    app.add_typer(export.app, rich_help_panel=USE)
    app.add_typer(datasets.app, rich_help_panel=USE)
    app.command("label", rich_help_panel=CHECK)(label.label)
    app.command("replay", rich_help_panel=CHECK)(replay.replay_command)
    app.add_typer(eval_cli.eval_app, rich_help_panel=EVALUATE)
    app.command("serve", rich_help_panel=EVALUATE)(serve_cli.serve)
    app.add_typer(calibrate_camera.app, rich_help_panel=LOOK)
    app.add_typer(robots.robots_app, rich_help_panel=LOOK)
    app.add_typer(objects.objects_app, rich_help_panel=LOOK)
    app.add_typer(tasks.tasks_app, rich_help_panel=LOOK)
    app.add_typer(devices.app, rich_help_panel=LOOK)
    app.command("doctor", rich_help_panel=LOOK)(doctor.doctor)
